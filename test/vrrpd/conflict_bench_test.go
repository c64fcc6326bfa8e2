package vrrpd_test

import (
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
)

// BenchmarkConflictProbes255 is what looking for second holders costs: 255 IPv6 virtual
// routers on the pair lab (BenchmarkLoad50's, two hosts on one veth pair), h1 MASTER of
// every one, held for 20 s (VRRPD_BENCH_HOLD), once with vrrpd's default probing (each
// VIP every 2 s, capped at 50 probes a second: 255 VIPs are each probed every 5.1 s) and
// once with --vip-conflict-probe-interval 0, in rounds of alternating order
// (VRRPD_BENCH_ROUNDS, 3), the medians reported: CPU seconds of both hosts during the hold,
// and the difference. The neighbour solicitations reaching the backup's link show the
// probes really went out, at the cap's rate, and none without them; the transitions of
// both hosts (zero wanted) that the adverts were not disturbed.
//
// Two loads: adverts at 100 ms (the CPU figure: the probes' cost beside a steady load
// that costs little itself), and at 10 ms in SCHED_RR (BenchmarkCapacity10ms's realtime
// case: 25,500 adverts a second, where a stall of a few milliseconds shows as
// transitions; the probes must add none).
func BenchmarkConflictProbes255(b *testing.B) {
	hold := benchHold(20 * time.Second)
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("VRRPD_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for _, load := range []struct {
		name, measure, advertInt string
		rt                       int
	}{{"100ms", "conflict255", "0.1", 0}, {"10ms-realtime", "conflict255x10ms", "0.01", fastRealtime}} {
		b.Run(load.name, func(b *testing.B) {
			probesBench(b, load.measure, steadySpec{n: 255, ipv6: true, advertInt: load.advertInt, rtPriority: load.rt, hold: hold, pair: true}, rounds)
		})
	}
}

func probesBench(b *testing.B, measure string, spec steadySpec, rounds int) {
	type variant struct {
		name  string
		flags []string
	}
	variants := []variant{{"probes-on", nil}, {"probes-off", []string{"--vip-conflict-probe-interval", "0"}}}
	cpus := map[string][]float64{}
	flaps := map[string]int{}
	nsRate := map[string][]float64{}
	for range b.N {
		for round := range rounds {
			vs := slices.Clone(variants)
			if round%2 == 1 {
				slices.Reverse(vs)
			}
			for _, v := range vs {
				// Named apart from vrrpdKind, whose real-time start steadyRunSpec would put
				// in place of this one, flags and all.
				kind := daemonKind{"vrrpd-" + v.name, func(t testing.TB, h *netlab.Host, conf string) *proc {
					args := v.flags
					if spec.rtPriority != 0 {
						args = append(slices.Clone(args), "--realtime-priority", strconv.Itoa(spec.rtPriority))
					}
					return startVrrpd(t, h, conf, "", args...).proc
				}}
				var rate float64
				sp := spec
				sp.around = func(_, h2 *netlab.Host) func() {
					began, count := time.Now(), countSolicitations(b, h2)
					return func() { rate = count() / time.Since(began).Seconds() }
				}
				r := steadyRunSpec(b, kind, sp)
				if !r.converged {
					b.Fatalf("%s, %s: 255 instances did not converge", measure, v.name)
				}
				cpus[v.name] = append(cpus[v.name], r.cpu)
				flaps[v.name] += r.flaps
				nsRate[v.name] = append(nsRate[v.name], rate)
				b.Logf("%s round %d, %s: %.3f CPU s over %v, %d transitions, backup's link carried %.1f neighbour solicitations/s",
					measure, round+1, v.name, r.cpu, spec.hold, r.flaps, rate)
				if r.flaps > 0 {
					b.Logf("first transitions:\n%s", r.firstFlaps)
				}
			}
		}
	}
	on, off := median(cpus["probes-on"]), median(cpus["probes-off"])
	b.ReportMetric(on, benchreport.Unit(measure+"-cpu-probes-on", benchreport.VRRPD, "s"))
	b.ReportMetric(off, benchreport.Unit(measure+"-cpu-probes-off", benchreport.VRRPD, "s"))
	b.ReportMetric(on-off, benchreport.Unit(measure+"-cpu-probes-cost", benchreport.VRRPD, "s"))
	b.ReportMetric(float64(flaps["probes-on"]), benchreport.Unit(measure+"-transitions-probes-on", benchreport.VRRPD, "count"))
	b.ReportMetric(float64(flaps["probes-off"]), benchreport.Unit(measure+"-transitions-probes-off", benchreport.VRRPD, "count"))
	b.ReportMetric(median(nsRate["probes-on"]), benchreport.Unit(measure+"-probes", benchreport.VRRPD, "per-s"))
	b.Logf("%s: probing on %.3f CPU s (rounds %.3f), off %.3f (rounds %.3f), difference %.3f CPU s over %v = %.2f %% of a core; solicitations %.1f/s on, %.1f/s off",
		measure, on, cpus["probes-on"], off, cpus["probes-off"], on-off, spec.hold, (on-off)/spec.hold.Seconds()*100, median(nsRate["probes-on"]), median(nsRate["probes-off"]))
	if r := median(nsRate["probes-on"]); r < 40 || r > 55 {
		b.Errorf("the backup's link carried %.1f probes a second with probing on, want the cap's 50", r)
	}
	if r := median(nsRate["probes-off"]); r > 1 {
		b.Errorf("the backup's link carried %.1f probes a second with probing off", r)
	}
	if flaps["probes-on"] > flaps["probes-off"] {
		b.Errorf("%d transitions with probing on, %d without", flaps["probes-on"], flaps["probes-off"])
	}
}

// countSolicitations counts the IPv6 neighbour solicitations that reach h's link from
// now until the returned function is called (which returns the count): a packet socket
// in h filtered to them, never read, whose kernel statistics count what the filter passed.
// (The backup's own ICMPv6 counters do not see the probes: they go to the VIPs'
// solicited-node groups, which it has not joined.)
func countSolicitations(t testing.TB, h *netlab.Host) func() float64 {
	t.Helper()
	filter, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 14 + 6, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 58, SkipTrue: 3},
		bpf.LoadAbsolute{Off: 14 + 40, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 135, SkipTrue: 1},
		bpf.RetConstant{Val: 64},
		bpf.RetConstant{Val: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	var c *packet.Conn
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		c, err = packet.Listen(ifi, packet.Raw, 0x86dd, &packet.Config{Filter: filter})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stats(); err != nil { // the statistics reset when read: from zero
		t.Fatal(err)
	}
	return func() float64 {
		defer c.Close()
		st, err := c.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return float64(st.Packets)
	}
}
