package daemon

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerThread is the loop's one timer: a Linux timerfd read, blocking, by a goroutine of
// its own that runs the due timers itself (Daemon.fire) under the daemon's lock.
//
// Master_Down_Timer decides failover time, and its advertisement must be on the wire
// within microseconds of the deadline. A time.Timer wakes through the runtime's poller, up
// to a millisecond late. A timerfd in the poller is better but still takes two hops: the
// poller's thread wakes the goroutine that reads the timerfd, which wakes the loop through
// a channel; measured in the namespace benchmark, that was ~140 µs at the median and
// several milliseconds at the 99th percentile, most of it before the timerfd's reader ran.
// A blocking read(2) instead parks this goroutine's thread in the kernel on the timerfd
// itself, so the expiry wakes exactly the thread that then sends, with no poller and no
// channel in between.
type timerThread struct {
	fd   int
	stop atomic.Bool
	done chan struct{}
}

// startTimerThread creates the timerfd and starts the goroutine that calls fire after each
// expiry. fire runs on that goroutine, never concurrently with itself. fail is called once
// if the thread has to give up: no timer fires after it.
func startTimerThread(fire func(), fail func(error)) (*timerThread, error) {
	// Blocking (no TFD_NONBLOCK): the read parks the thread in the kernel, see above.
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := &timerThread{fd: fd, done: make(chan struct{})}
	go t.run(fire, fail)
	return t, nil
}

func (t *timerThread) run(fire func(), fail func(error)) {
	defer close(t.done)
	var buf [8]byte
	for {
		_, err := unix.Read(t.fd, buf[:])
		if t.stop.Load() {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			// Cannot happen on a timerfd we own; give up the thread rather than spin,
			// and say so: without it no advertisement or takeover happens again.
			fail(fmt.Errorf("timer thread: read timerfd: %w", err))
			return
		}
		if err == nil {
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
// Closing a file does not wake a thread blocked reading it, so the timer is fired at once
// with stop set. The caller must not hold what fire locks.
func (t *timerThread) Close() {
	t.stop.Store(true)
	t.Reset(0)
	<-t.done
	_ = unix.Close(t.fd)
}
