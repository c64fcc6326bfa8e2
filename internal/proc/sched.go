package proc

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// spawns, once SpawnWithDefaultScheduling ran, takes every process start to the one
// thread that has the default scheduling policy; nil starts them on the caller's thread.
var spawns chan spawn

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

// SpawnWithDefaultScheduling makes every later Run start its process from a thread of
// its own in SCHED_OTHER at nice 0, whatever the policy of vrrpd's other threads. A
// process inherits the scheduling of the thread that forked it: with vrrpd's threads in
// SCHED_RR (--realtime-priority), a check script would run real-time too, ahead of every
// ordinary process, and one that loops would take a CPU from the node (keepalived resets
// its scripts' priorities for the same reason). Call it after the process went real-time:
// it resets the thread it locks. The Go runtime never runs other goroutines on a locked
// thread, and starts new threads from a template thread, not from this one.
func SpawnWithDefaultScheduling() error {
	ready := make(chan error)
	ch := make(chan spawn)
	go func() {
		runtime.LockOSThread() // for good: the thread ends with the process
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			ready <- fmt.Errorf("proc: default scheduling for the scripts' thread: %w", err)
			return
		}
		ready <- nil
		for s := range ch {
			s.done <- s.cmd.Start()
		}
	}()
	if err := <-ready; err != nil {
		return err
	}
	spawns = ch
	return nil
}

// start starts cmd, on the scripts' thread when there is one. Starting is quick (the
// fork returns once the child has exec'd), so one thread serves every script.
func start(cmd *exec.Cmd) error {
	if spawns == nil {
		return cmd.Start()
	}
	done := make(chan error, 1)
	spawns <- spawn{cmd, done}
	return <-done
}
