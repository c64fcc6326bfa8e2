package daemon

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerThread is the loop's one timer: a Linux timerfd in the runtime's poller, read by a
// goroutine of its own that runs the due timers itself (Daemon.fire) under the daemon's
// lock.
//
// Master_Down_Timer decides failover time, and its advertisement must be on the wire
// within microseconds of the deadline. A time.Timer wakes through the runtime's timer
// heap, up to a millisecond late; a timerfd expires on time. Its reader calls fire
// directly, with no channel between the expiry and the send.
//
// The timerfd sits in the poller beside the sockets, so when nothing is due the process
// has one thread waiting in epoll for every source of work, as keepalived's does. A
// blocking read(2) of the timerfd, which this was before, kept a thread in a system call
// at all times: with one P, sysmon took the P back from it every time and started another
// thread to hold it, and those hand-overs cost more CPU at 50 instances than the work.
type timerThread struct {
	fd   int
	file *os.File
	stop atomic.Bool
	done chan struct{}
}

// startTimerThread creates the timerfd and starts the goroutine that calls fire after each
// expiry. fire runs on that goroutine, never concurrently with itself. fail is called once
// if the thread has to give up: no timer fires after it.
func startTimerThread(fire func(), fail func(error)) (*timerThread, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor: os.NewFile registers it with the poller.
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	t := &timerThread{fd: fd, file: f, done: make(chan struct{})}
	go t.run(rc, fire, fail)
	return t, nil
}

func (t *timerThread) run(rc syscall.RawConn, fire func(), fail func(error)) {
	defer close(t.done)
	var buf [8]byte
	for {
		var rerr syscall.Errno
		err := rc.Read(func(fd uintptr) bool {
			// Raw: the read never blocks, and the runtime's bookkeeping of a system call
			// that might would cost more than the call.
			_, _, rerr = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			return rerr != unix.EAGAIN
		})
		if t.stop.Load() {
			return
		}
		if err == nil && rerr != 0 && rerr != unix.EINTR {
			err = rerr
		}
		if err != nil {
			// Cannot happen on a timerfd we own; give up the thread rather than spin,
			// and say so: without it no advertisement or takeover happens again.
			fail(fmt.Errorf("timer thread: read timerfd: %w", err))
			return
		}
		if rerr == 0 {
			fire()
		}
	}
}

// Reset arms the timer d from now (at once when d <= 0), replacing any earlier setting.
func (t *timerThread) Reset(d time.Duration) {
	if d <= 0 {
		d = 1 // zero would disarm
	}
	t.settime(unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))})
}

// settime is timerfd_settime(2) as a raw system call: it never blocks, and the runtime's
// bookkeeping of a blocking one (handing the P over, waking sysmon) would cost more than
// the call itself, on every re-arm of the timer.
func (t *timerThread) settime(spec unix.ItimerSpec) {
	_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// Stop disarms the timer. An expiry already read may still call fire; the daemon treats it
// as spurious.
func (t *timerThread) Stop() {
	t.settime(unix.ItimerSpec{})
}

// Close ends the goroutine, waiting for a fire in progress, and releases the timerfd.
// Closing the file wakes the reader out of the poller. The caller must not hold what fire
// locks.
func (t *timerThread) Close() {
	t.stop.Store(true)
	_ = t.file.Close()
	<-t.done
}
