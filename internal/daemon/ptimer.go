package daemon

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer is the loop's one timer, on a Linux timerfd. A time.Timer wakes through the
// runtime's poller, whose sleeps are in whole milliseconds, so it fires up to a millisecond
// late; Master_Down_Timer decides failover time, and keepalived's timerfd fires within
// microseconds. The timerfd's readiness wakes the poller at once, so this timer is as
// precise as keepalived's. A goroutine turns each expiry into a value on C.
type preciseTimer struct {
	f  *os.File
	fd int
	C  chan struct{}
}

func newPreciseTimer() (*preciseTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := &preciseTimer{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd, C: make(chan struct{}, 1)}
	go t.read()
	return t, nil
}

func (t *preciseTimer) read() {
	var buf [8]byte
	for {
		if _, err := t.f.Read(buf[:]); err != nil {
			return // closed
		}
		select {
		case t.C <- struct{}{}:
		default: // one pending wake-up is enough
		}
	}
}

// Reset arms the timer d from now (at once when d <= 0), replacing any earlier setting.
func (t *preciseTimer) Reset(d time.Duration) {
	if d <= 0 {
		d = 1 // zero would disarm
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = unix.TimerfdSettime(t.fd, 0, &spec, nil)
}

// Stop disarms the timer. A wake-up already on C may still arrive; the loop treats it as
// spurious.
func (t *preciseTimer) Stop() {
	_ = unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{}, nil)
}

// Close releases the timerfd and ends the reading goroutine.
func (t *preciseTimer) Close() { t.f.Close() }
