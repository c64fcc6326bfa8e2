package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// spawns, once SpawnWithDefaultScheduling or SpawnWithoutAmbientCapabilities ran, takes
// every process start to the one thread that has the default scheduling policy and no
// ambient capabilities; nil starts them on the caller's thread.
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
//
// The thread also has no ambient capabilities (SpawnWithoutAmbientCapabilities).
func SpawnWithDefaultScheduling() error { return startSpawner(true) }

// SpawnWithoutAmbientCapabilities makes every later Run start its process from a thread
// of its own whose ambient capability set is empty, when vrrpd has ambient capabilities;
// otherwise it does nothing. Under a systemd unit that grants vrrpd its capabilities as
// ambient ones to a user that is not root (the default unit: DynamicUser with
// AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW), every program vrrpd starts would
// inherit them: a check script would hold CAP_NET_ADMIN. Capabilities belong to a thread,
// so clearing them on the one thread that starts the scripts leaves vrrpd's own intact.
func SpawnWithoutAmbientCapabilities() error {
	amb, err := ambientCaps()
	if err != nil || amb == 0 {
		return err
	}
	return startSpawner(false)
}

// ambientCaps is the calling thread's ambient capability set (CapAmb in
// /proc/thread-self/status).
func ambientCaps() (uint64, error) {
	f, err := os.Open("/proc/thread-self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapAmb:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, sc.Err() // a kernel before 4.3 has no ambient set
}

func startSpawner(defaultScheduling bool) error {
	ready := make(chan error)
	ch := make(chan spawn)
	go func() {
		runtime.LockOSThread() // for good: the thread ends with the process
		if defaultScheduling {
			attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
			if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
				ready <- fmt.Errorf("proc: default scheduling for the scripts' thread: %w", err)
				return
			}
		}
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
			// EINVAL: a kernel without ambient capabilities, so none to clear.
			ready <- fmt.Errorf("proc: clearing the scripts' thread's ambient capabilities: %w", err)
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
