package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setRealtime puts every thread of the process in SCHED_RR at priority prio
// (--realtime-priority, keepalived's vrrp_rt_priority). Threads the Go runtime starts
// later inherit the policy from the thread that starts them. A real-time thread runs as
// soon as it is runnable, ahead of every ordinary process, so a busy node cannot keep the
// loop from reading the peers' adverts or sending its own for longer than the kernel's
// own work; the kernel's RT throttling (sched_rt_runtime_us, 95% by default) still leaves
// the rest of the node a share should vrrpd ever spin.
func setRealtime(prio int) error {
	if prio < 1 || prio > 99 {
		return fmt.Errorf("--realtime-priority %d: want 1 to 99 (0 to leave the scheduling alone)", prio)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("--realtime-priority: %w", err)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: uint32(prio)}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			return fmt.Errorf("--realtime-priority: SCHED_RR for thread %d: %w", tid, err)
		}
	}
	return nil
}

// lockMemory keeps every page of the process in RAM (--lock-memory, keepalived's
// vrrp_no_swap): a page fault that has to read from swap would stall the loop for
// milliseconds. MCL_ONFAULT locks pages as they are first touched, not when mapped: the
// Go runtime maps far more address space than it uses, and without it the lock made
// 50 instances' vrrpd resident at 156 MiB instead of 24 MiB (1.7 GB locked).
func lockMemory() error {
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT); err != nil {
		return fmt.Errorf("--lock-memory: mlockall: %w", err)
	}
	return nil
}
