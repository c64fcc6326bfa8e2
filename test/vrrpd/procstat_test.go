package vrrpd_test

// What the benchmarks measure of the daemons in a lab host, from /proc: the processes in
// the host's namespace, their CPU time and their peak memory.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// nsPIDs lists the processes running in h's namespace.
func nsPIDs(t testing.TB, h *netlab.Host) []int {
	t.Helper()
	pids, err := h.Pids()
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// nsCPU sums the CPU time of every thread of every process in h's namespace (keepalived
// runs a parent and a VRRP child; vrrpd one process with a few threads), from
// /proc/PID/task/TID/schedstat, which counts nanoseconds, not 10 ms ticks. Threads that
// exited take their time with them, which in a steady state is nothing.
func nsCPU(t testing.TB, h *netlab.Host) float64 {
	var ns float64
	for _, pid := range nsPIDs(t, h) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if fs := strings.Fields(string(b)); len(fs) > 0 {
				v, _ := strconv.ParseFloat(fs[0], 64)
				ns += v
			}
		}
	}
	return ns / 1e9
}

// nsPeakRSS sums VmHWM (peak resident set) of the processes in h's namespace, in MiB.
func nsPeakRSS(t testing.TB, h *netlab.Host) float64 {
	var kib float64
	for _, pid := range nsPIDs(t, h) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					n, _ := strconv.ParseFloat(f[0], 64)
					kib += n
				}
			}
		}
	}
	return kib / 1024
}
