package vrrpd_test

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// BenchmarkTakeover2000 measures issue 31's takeover of thousands of addresses, standalone:
// one vrrp_instance of 2,000 IPv4 VIPs (and one of 1,000 IPv6 VIPs) at 100 ms adverts, a
// master (h1, priority 150) and a backup (h2, 100) of one daemon kind with the same
// keepalived.conf, vrrpd and keepalived one after the other in the same run. Each round
// cuts h1 off the bridge and measures on h2, from the Master_Down_Timer's due time (h1's
// last advert as h2's interface received it, kernel-stamped, plus Master_Down_Interval):
//   - the first and the last VIP in h2's kernel (RTM_NEWADDR, read by a thread blocked on
//     an address monitor in h2: a bound from above, the same for both daemons);
//   - the announcements of the first burst (vrrp_garp_master_repeat rounds, before
//     vrrp_garp_master_delay's second), kernel-stamped as they leave h2: how many, from the
//     due time to the first and the last, their mean rate and the most in any 10 ms;
//   - h2's adverts' longest silence from the takeover to the end of the burst: a loop busy
//     with addresses for longer than Master_Down_Interval would let a backup take over.
//
// Then h1 is plugged back and preempts. VRRPD_BENCH_ROUNDS rounds (3) per daemon and
// family; the medians are reported. Each family runs with keepalived's default pacing (none:
// vrrp_garp_interval and vrrp_gna_interval 0) and, as -paced, with 200 µs set.
func BenchmarkTakeover2000(b *testing.B) {
	keepalivedBinary(b) // skips (fails under CI=true) without keepalived
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("VRRPD_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for _, fam := range []struct {
		name    string
		ipv6    bool
		n       int
		globals string
	}{
		{"ipv4", false, 2000, ""},
		{"ipv6", true, 1000, ""},
		// The same with the announcements paced at 5,000 a second on the interface.
		{"ipv4-paced", false, 2000, "  vrrp_garp_interval 0.0002\n"},
		{"ipv6-paced", true, 1000, "  vrrp_gna_interval 0.0002\n"},
	} {
		for _, kind := range benchDaemons {
			var rs []massTakeover
			for range b.N {
				rs = runMassTakeovers(b, kind, fam.ipv6, fam.n, fam.globals, rounds)
			}
			measure := fmt.Sprintf("takeover%d-%s", fam.n, fam.name)
			med := func(f func(massTakeover) float64) float64 {
				xs := make([]float64, len(rs))
				for i, r := range rs {
					xs[i] = f(r)
				}
				return median(xs)
			}
			b.ReportMetric(med(func(r massTakeover) float64 { return ms(r.firstVIP) }), benchreport.Unit(measure+"-first-vip", kind.name, "ms"))
			b.ReportMetric(med(func(r massTakeover) float64 { return ms(r.lastVIP) }), benchreport.Unit(measure+"-last-vip", kind.name, "ms"))
			b.ReportMetric(med(func(r massTakeover) float64 { return ms(r.firstAnn) }), benchreport.Unit(measure+"-first-announce", kind.name, "ms"))
			b.ReportMetric(med(func(r massTakeover) float64 { return ms(r.lastAnn) }), benchreport.Unit(measure+"-last-announce", kind.name, "ms"))
			b.ReportMetric(med(func(r massTakeover) float64 { return float64(r.announced) }), benchreport.Unit(measure+"-announcements", kind.name, "count"))
			b.ReportMetric(med(func(r massTakeover) float64 { return r.rate() }), benchreport.Unit(measure+"-announce-rate", kind.name, "per-s"))
			b.ReportMetric(med(func(r massTakeover) float64 { return float64(r.peak10ms) }), benchreport.Unit(measure+"-announce-peak-10ms", kind.name, "count"))
			b.ReportMetric(med(func(r massTakeover) float64 { return ms(r.advertGap) }), benchreport.Unit(measure+"-advert-gap", kind.name, "ms"))
			for i, r := range rs {
				b.Logf("%s %s, round %d: %v", kind.name, measure, i+1, r)
			}
		}
	}
}

// massTakeover is one round's figures, each from the due time unless said otherwise.
type massTakeover struct {
	firstVIP, lastVIP time.Duration
	firstAnn, lastAnn time.Duration
	announced         int // GARPs or NAs for the VIPs in the first burst
	peak10ms          int // the most of them in any 10 ms
	advertGap         time.Duration
}

func (r massTakeover) rate() float64 {
	if span := r.lastAnn - r.firstAnn; span > 0 {
		return float64(r.announced-1) / span.Seconds()
	}
	return 0
}

func (r massTakeover) String() string {
	return fmt.Sprintf("VIPs first %v last %v; %d announcements from %v to %v (%.0f/s, at most %d in 10 ms); adverts' longest gap %v",
		r.firstVIP.Round(10*time.Microsecond), r.lastVIP.Round(10*time.Microsecond), r.announced,
		r.firstAnn.Round(10*time.Microsecond), r.lastAnn.Round(10*time.Microsecond), r.rate(), r.peak10ms, r.advertGap.Round(time.Millisecond))
}

// burstWindow is how long after the due time the first burst is counted: keepalived's
// default vrrp_garp_master_delay (5 s) starts the second one.
const burstWindow = 4500 * time.Millisecond

func runMassTakeovers(b *testing.B, kind daemonKind, ipv6 bool, n int, globals string, rounds int) []massTakeover {
	netlabtest.Require(b)
	lab, err := netlab.Create("client", "h1", "h2")
	if err != nil {
		b.Fatal(err)
	}
	defer lab.Close()
	h1, h2 := lab.Host("h1"), lab.Host("h2")
	vips := scaleVIPs(n, ipv6)
	const interval = 100 * time.Millisecond
	mdi := vrrp.MasterDownInterval(100, interval)
	kind.start(b, h1, writeConf(b, "h1.conf", scaleConf(150, "0.1", globals, vips)))
	kind.start(b, h2, writeConf(b, "h2.conf", scaleConf(100, "0.1", globals, vips)))
	src1 := h1.Addr4
	if ipv6 {
		src1 = linkLocal(b, h1)
	}
	wire := captureWire(b, h2)
	addrs := monitorAddrs(b, h2)
	set := make(map[netip.Addr]bool, n)
	for _, v := range vips {
		set[v.Addr()] = true
	}
	var out []massTakeover
	for round := range rounds {
		// keepalived's master, its loop busy with the addresses for longer than
		// Master_Down_Interval, lets h2 take over too for a while when h1 takes over
		// (at the start and when it comes back): wait for the pair to settle.
		waitSettled(b, 90*time.Second, time.Second, vips, h1, h2)
		cutAt := time.Now()
		cut(b, h1)
		waitHolding(b, 30*time.Second, h2, vips)
		last, ok := wire.lastAdvert(src1, cutAt)
		if !ok {
			b.Fatalf("round %d: no advert of %v heard before the cut", round+1, src1)
		}
		due := last.Add(mdi)
		time.Sleep(time.Until(due.Add(burstWindow + 100*time.Millisecond)))
		r := massTakeover{}
		first, lastAdd, added := addrs.span(set, cutAt)
		if added != n {
			b.Fatalf("round %d: the address monitor saw %d of the %d VIPs added", round+1, added, n)
		}
		r.firstVIP, r.lastVIP = first.Sub(due), lastAdd.Sub(due)
		ann := wire.announcements(set, due.Add(-mdi), due.Add(burstWindow))
		if len(ann) == 0 {
			b.Fatalf("round %d: no announcement of the VIPs on the wire", round+1)
		}
		r.announced = len(ann)
		r.firstAnn, r.lastAnn = ann[0].Sub(due), ann[len(ann)-1].Sub(due)
		for i, j := 0, 0; i < len(ann); i++ {
			for ann[i].Sub(ann[j]) >= 10*time.Millisecond {
				j++
			}
			r.peak10ms = max(r.peak10ms, i-j+1)
		}
		r.advertGap = wire.advertGap(h2Source(b, h2, ipv6), due, due.Add(burstWindow))
		out = append(out, r)
		restore(b, h1)
		wire.forget(time.Now())
		addrs.forget(time.Now())
	}
	return out
}

func h2Source(b *testing.B, h *netlab.Host, ipv6 bool) netip.Addr {
	if ipv6 {
		return linkLocal(b, h)
	}
	return h.Addr4
}

// waitSettled waits until want has held every VIP and other none for settle without a break.
func waitSettled(t testing.TB, timeout, settle time.Duration, vips []netip.Prefix, want, other *netlab.Host) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var since time.Time
	for {
		a, c := holding(t, want, vips), holding(t, other, vips)
		now := time.Now()
		switch {
		case a != len(vips) || c != 0:
			since = time.Time{}
		case since.IsZero():
			since = now
		case now.Sub(since) >= settle:
			return
		}
		if now.After(deadline) {
			t.Fatalf("%s holds %d of %d VIPs and %s %d, not settled for %v within %v", want.Name, a, len(vips), other.Name, c, settle, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitHolding waits until h holds every VIP.
func waitHolding(t testing.TB, timeout time.Duration, h *netlab.Host, vips []netip.Prefix) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for holding(t, h, vips) != len(vips) {
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d of %d VIPs after %v", h.Name, holding(t, h, vips), len(vips), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkVIPs2000 is issue 31's "vrrpd at scale": one vrrp_instance of 2,000 IPv4 VIPs
// at 100 ms adverts on a master/backup pair (BenchmarkLoad50's pair lab: two hosts on one
// veth pair), held for 20 s (VRRPD_BENCH_HOLD) after the master holds every VIP and the
// backup none. It reports the CPU seconds of both hosts over the hold, the peak resident
// set of the largest daemon process of either host (as BenchmarkMemory50), and the
// transitions during the hold, for vrrpd (the full build that the other benchmarks run,
// and the host build, bin/vrrpd-host, as BenchmarkMemory50) beside keepalived 2.2.7 with
// the same keepalived.conf.
func BenchmarkVIPs2000(b *testing.B) {
	keepalivedBinary(b) // skips (fails under CI=true) without keepalived
	hold := benchHold(20 * time.Second)
	const n = 2000
	host := daemonKind{"vrrpd-host", func(t testing.TB, h *netlab.Host, conf string) *proc {
		p := vrrpdtest.Start(t, h, "vrrpd-host@"+h.Name, nil, hostBinary(t),
			"--config", conf, "--state-dir", vrrpdtest.NewStateDir(t), "--metrics-address", vrrpdtest.MetricsAddress, "--log-level", "debug")
		vrrpdtest.WaitServing(t, h, p.Name)
		return p
	}}
	kinds := slices.Clone(benchDaemons)
	if slices.ContainsFunc(kinds, func(k daemonKind) bool { return k.name == vrrpdKind.name }) {
		kinds = append(kinds, host)
	}
	type result struct {
		cpu, peak   float64
		flaps       int
		convergence time.Duration
	}
	res := map[string]result{}
	for range b.N {
		for _, kind := range kinds {
			r := vipsRun(b, kind, n, hold)
			res[kind.name] = r
			b.Logf("%s, one instance of %d VIPs at 100 ms: all VIPs on h1 %v after both started; over %v: %.3f CPU s both hosts, peak RSS %.1f MiB, %d transitions",
				kind.name, n, r.convergence.Round(time.Millisecond), hold, r.cpu, r.peak, r.flaps)
		}
	}
	for _, kind := range benchDaemons {
		r := res[kind.name]
		b.ReportMetric(r.cpu, benchreport.Unit("vips2000-cpu", kind.name, "s"))
		b.ReportMetric(r.peak, benchreport.Unit("vips2000-peak-rss", kind.name, "MiB"))
		b.ReportMetric(float64(r.flaps), benchreport.Unit("vips2000-transitions", kind.name, "count"))
	}
	if r, ok := res[host.name]; ok {
		b.ReportMetric(r.cpu, benchreport.Unit("vips2000-cpu-host-build", vrrpdKind.name, "s"))
		b.ReportMetric(r.peak, benchreport.Unit("vips2000-peak-rss-host-build", vrrpdKind.name, "MiB"))
	}
}

// vipsRun is one BenchmarkVIPs2000 run of one daemon kind, on a pair lab of its own.
func vipsRun(b *testing.B, kind daemonKind, n int, hold time.Duration) (r struct {
	cpu, peak   float64
	flaps       int
	convergence time.Duration
}) {
	netlabtest.Require(b)
	lab, err := newSteadyLab(true)
	if err != nil {
		b.Fatal(err)
	}
	defer lab.Close()
	h1, h2 := lab.Host("h1"), lab.Host("h2")
	vips := scaleVIPs(n, false)
	p1 := kind.start(b, h1, writeConf(b, "h1.conf", scaleConf(150, "0.1", "", vips)))
	p2 := kind.start(b, h2, writeConf(b, "h2.conf", scaleConf(100, "0.1", "", vips)))
	began := time.Now() // both serving: the binaries' builds and the startup are not counted
	waitAllOn(b, 60*time.Second, 0, vips, h1, h2)
	r.convergence = time.Since(began)
	time.Sleep(time.Second) // let the announcements after the election pass
	mark1, mark2 := len(p1.Output()), len(p2.Output())
	cpu0 := nsCPU(b, h1) + nsCPU(b, h2)
	time.Sleep(hold)
	r.cpu = nsCPU(b, h1) + nsCPU(b, h2) - cpu0
	r.flaps = countTransitions(p1.Output()[mark1:]) + countTransitions(p2.Output()[mark2:])
	if !p1.Running() || !p2.Running() {
		b.Fatalf("%s died during the run", kind.name)
	}
	if a, c := holding(b, h1, vips), holding(b, h2, vips); a != n || c != 0 {
		b.Fatalf("%s after the hold: h1 holds %d of %d VIPs, h2 %d", kind.name, a, n, c)
	}
	m1, m2 := largestProcMem(b, h1), largestProcMem(b, h2)
	b.Logf("%s h1 %v", kind.name, m1)
	b.Logf("%s h2 %v", kind.name, m2)
	r.peak = max(m1.peak, m2.peak)
	return r
}
