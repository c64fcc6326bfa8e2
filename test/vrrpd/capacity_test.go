package vrrpd_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Capacity at 10 ms advertisements (issue 12): a master/backup pair with many virtual
// routers at 10 ms, where a backup's Master_Down_Interval leaves about 26 ms of silence
// before it takes over, so that any stall of either daemon (its own work, the scheduler,
// other processes) shows as transitions.

// fastRealtime is the SCHED_RR priority of the runs that use one: vrrpd's
// --realtime-priority and keepalived's vrrp_rt_priority, the same number.
const fastRealtime = 50

// BenchmarkCapacity10ms runs 255 virtual routers at 10 ms (IPv6 VIPs, as the lab's IPv4
// /24 has room for 240; 25,500 adverts a second from the master), waits up to 20 s for h1
// to hold every VIP and h2 none, then counts the transitions of both hosts over the hold
// (60 s, VRRPD_BENCH_HOLD shortens it): with the daemons' default scheduling and in
// SCHED_RR. A daemon that does not converge is held 10 s only, and its transitions over
// those are reported. Figures per case: converged (1 or 0), time to converge, transitions
// during the hold and CPU seconds of both hosts during the hold.
func BenchmarkCapacity10ms(b *testing.B) {
	keepalivedBinary(b) // skips (fails under CI=true) without keepalived
	hold := benchHold(60 * time.Second)
	for _, sched := range []struct {
		name string
		rt   int
	}{{"default", 0}, {"realtime", fastRealtime}} {
		b.Run(sched.name, func(b *testing.B) {
			fastCapacity(b, "255x10ms-"+sched.name, steadySpec{n: 255, ipv6: true, advertInt: "0.01",
				rtPriority: sched.rt, hold: hold, holdUnconverged: min(hold, 10*time.Second)})
		})
	}
}

// BenchmarkBusy10ms is 25 virtual routers at 10 ms with both cores busy: four processes
// spinning in a shell loop for the whole run, at the daemons' default scheduling and in
// SCHED_RR. Same figures as BenchmarkCapacity10ms.
func BenchmarkBusy10ms(b *testing.B) {
	keepalivedBinary(b)
	hold := benchHold(60 * time.Second)
	for _, sched := range []struct {
		name string
		rt   int
	}{{"default", 0}, {"realtime", fastRealtime}} {
		b.Run(sched.name, func(b *testing.B) {
			busyLoops(b, 4)
			fastCapacity(b, "25x10ms-busy-"+sched.name, steadySpec{n: 25, advertInt: "0.01",
				rtPriority: sched.rt, hold: hold, holdUnconverged: min(hold, 10*time.Second)})
		})
	}
}

// fastCapacity runs spec for vrrpd and then keepalived and reports both side by side,
// each figure named <measure>-<who>-<unit> (internal/testing/benchreport).
func fastCapacity(b *testing.B, measure string, spec steadySpec) {
	rs := make(map[string]runResult)
	for range b.N {
		for _, kind := range benchDaemons {
			r := steadyRunSpec(b, kind, spec)
			b.Logf("%s %s: converged %v in %v, %d transitions in %v, %.2f CPU s", measure, kind.name, r.converged,
				r.convergeTime.Round(time.Millisecond), r.flaps, r.held, r.cpu)
			if r.flaps > 0 {
				b.Logf("first transitions:\n%s", r.firstFlaps)
			}
			rs[kind.name] = r
		}
	}
	for _, kind := range benchDaemons {
		r := rs[kind.name]
		conv := 0.0
		if r.converged {
			conv = 1
		}
		b.ReportMetric(conv, fmt.Sprintf("converged-%s-%s-count", measure, kind.name))
		b.ReportMetric(r.convergeTime.Seconds(), fmt.Sprintf("converge-%s-%s-s", measure, kind.name))
		b.ReportMetric(float64(r.flaps), fmt.Sprintf("transitions-%s-%s-count", measure, kind.name))
		b.ReportMetric(r.cpu, fmt.Sprintf("cpu-%s-%s-s", measure, kind.name))
	}
}

// busyLoops keeps n processes spinning until the benchmark ends.
func busyLoops(t testing.TB, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}

// TestCapacity10ms holds 100 virtual routers at 10 ms adverts (10,000 adverts a second
// from the master) between two vrrpd for 10 s after they converged, with zero
// transitions. The daemons run with --realtime-priority: on a shared machine (CI's, or
// the one this suite is developed on, with other builds running) an ordinary process can
// wait longer than the 26 ms a backup tolerates for the CPU, which no daemon can make
// up for; with the flag, that is vrrpd's own work alone. VRRPD_CAPACITY_DEFAULT_SCHED=1
// runs it without the flag.
func TestCapacity10ms(t *testing.T) {
	if testing.Short() {
		t.Skip("namespace test: skipped with -short (make unit)")
	}
	spec := steadySpec{n: 100, advertInt: "0.01", rtPriority: fastRealtime, hold: 10 * time.Second}
	if os.Getenv("VRRPD_CAPACITY_DEFAULT_SCHED") != "" {
		spec.rtPriority = 0
	}
	r := steadyRunSpec(t, vrrpdKind, spec)
	if !r.converged {
		t.Fatalf("100 instances at 10 ms did not converge (h1 master of all) within 20 s")
	}
	t.Logf("converged in %v; %d transitions in %v; %.2f CPU s (both hosts)", r.convergeTime.Round(time.Millisecond), r.flaps, r.held, r.cpu)
	if r.flaps != 0 {
		t.Errorf("%d transitions in %v after convergence, want 0; the first:\n%s", r.flaps, r.held, r.firstFlaps)
	}
}
