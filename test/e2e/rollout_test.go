package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

const rolloutLabel = "e2e.vrrp-operator.io/rollout"

// TestRollingUpgradeKeepsVIPs rolls a group's vrrpd "DaemonSet" over three nodes one node
// at a time, as the DaemonSet controller's RollingUpdate with maxUnavailable 1 does: the
// kubelet stops the pod (SIGTERM: each master hands over with a priority-0 advertisement
// and removes its VIPs), starts the new one (same node, same hostPath state directory),
// and the next node waits until the new pod's readiness probe (vrrpd's own probe socket)
// passes. The real API server, the operator and vrrpd in Kubernetes mode with its
// ServiceAccount's token; 20 Services with the group's default settings (VRRPv3, advert
// 1s). Throughout, every node's addresses are sampled every 10 ms, a client pings every
// VIP and asks the wire for each VIP's MAC every 20 ms:
//
//   - no sample shows a VIP on two nodes (the issue asks for samples every 20 ms);
//   - no VIP goes unanswered (echo, ARP) longer than one failover: the Skew_Time of the
//     lowest priority (below the interval) plus 500 ms for the takeover on a loaded machine;
//   - a restarted vrrpd holds no VIP before its probe says ready (it starts as BACKUP and
//     takes its instances back by preemption);
//
// and it reports how often each VIP moved (stretches of a second or more on the wire) and,
// measured but not asserted, every burst in which two MACs took turns answering a VIP on
// the wire (a restarted vrrpd's preemption is make-before-break). Simulated: the kubelet and the
// DaemonSet controller (processes and a loop of probes, not pods; labDaemonSet).
func TestRollingUpgradeKeepsVIPs(t *testing.T) {
	need(t)
	vrrpdBinary(t)
	ctx := context.Background()
	k8s := env.Client

	lab, ns := groupLabNodes(t, v1alpha1.KeepalivedGroupSpec{}, rolloutLabel, "r1", "r2", "r3")
	logGroupOnFailure(t, ns)
	cl := lab.Host("client")
	nodes := []*netlab.Host{lab.Host("r1"), lab.Host("r2"), lab.Host("r3")}
	const services = 20
	var vips []netip.Addr
	for i := range services {
		v := svcVIP(i)
		vips = append(vips, v)
		newService(t, ns, fmt.Sprintf("svc%02d", i), map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName}, v)
	}
	// The placement's master of each VIP, from the group's status. The group has the
	// default settings, so its Services share routers (routerSharing: Shared): wait for
	// every VIP in exactly one router, each router with a master.
	want := map[netip.Addr]string{}
	var interval time.Duration
	vrrpdtest.WaitFor(t, 30*time.Second, "the group's status with every Service", func() bool {
		var cur v1alpha1.KeepalivedGroup
		if k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupName}, &cur) != nil ||
			len(cur.Status.Nodes) != len(nodes) {
			return false
		}
		clear(want)
		listed := 0
		for _, in := range cur.Status.Instances {
			prios, err := v1alpha1.DecodePriorities(in.Priorities, len(cur.Status.Nodes))
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range prios {
				if p == v1alpha1.PriorityHighest {
					for _, v := range in.VIPs {
						want[netip.MustParseAddr(v)] = cur.Status.Nodes[i].Name
					}
				}
			}
			listed += len(in.VIPs)
			interval = in.Settings.AdvertInterval.Duration
		}
		return len(want) == services && listed == services
	})
	bound := vrrp.Version3.SkewTime(1, interval) + 500*time.Millisecond

	// The DaemonSet's pods: vrrpd on every node, each with its node's state directory (the
	// hostPath /run/vrrpd/<namespace>/<group>, which the new pod on a node inherits).
	args := daemonSetArgs(t, ns)
	environ := []string{"KUBECONFIG=" + vrrpdKubeconfig(t, ns)}
	lds := startLabDaemonSet(t, ns, len(nodes))
	stateDirs := map[string]string{}
	daemons := map[string]*vrrpd{}
	for _, h := range nodes {
		stateDirs[h.Name] = vrrpdtest.NewStateDir(t)
		daemons[h.Name] = startVrrpd(t, h, environ, nodeArgs(args, h.Name, stateDirs[h.Name])...)
		lds.started(h.Name, stateDirs[h.Name])
	}
	waitHoldersSettle(t, 30*time.Second, 2*time.Second, "the placement's masters hold the VIPs", want, nodes...)
	vrrpdtest.WaitFor(t, 30*time.Second, "every pod ready", func() bool {
		_, ok := lds.allReadySince()
		return ok
	})

	smp := startSampler(t, nodes, vips)
	png := startPinger(t, cl, vips)
	arpw := startARPWatch(t, cl, vips)
	// Before the roll: the record starts settled.
	time.Sleep(time.Second)

	for _, h := range nodes {
		node := h.Name
		// The kubelet stops the old pod.
		stopAt := time.Now()
		daemons[node].MustSignal(t, syscall.SIGTERM)
		if err := daemons[node].Wait(10 * time.Second); err != nil {
			t.Fatalf("vrrpd on %s after SIGTERM: %v", node, err)
		}
		lds.stopped(node)
		if held := heldBy(t, h, vips); len(held) > 0 {
			t.Errorf("vrrpd on %s exited with VIPs left: %v", node, held)
		}
		took := time.Since(stopAt)
		// The other nodes hold everything.
		away := map[netip.Addr]string{}
		vrrpdtest.WaitFor(t, 5*time.Second, "the VIPs of "+node+" taken over", func() bool {
			for _, v := range vips {
				hs := vrrpdtest.Holders(t, v, nodes...)
				if len(hs) != 1 {
					return false
				}
				away[v] = hs[0]
			}
			return true
		})
		t.Logf("%s stopped in %v; its VIPs held elsewhere %v after SIGTERM", node, took.Round(time.Millisecond), time.Since(stopAt).Round(time.Millisecond))

		// The new pod: no VIP before its readiness probe passes. Polled from the process's
		// start: the probe until it first passes, the node's addresses throughout.
		startAt := time.Now()
		daemons[node] = &vrrpd{vrrpdtest.Start(t, h, "vrrpd@"+node, environ, vrrpdBinary(t), nodeArgs(args, node, stateDirs[node])...)}
		lds.started(node, stateDirs[node])
		var readyAt, heldAt time.Time
		vrrpdtest.WaitFor(t, 30*time.Second, "the new pod on "+node+" ready and holding its VIPs again", func() bool {
			if readyAt.IsZero() && lds.probe(stateDirs[node]) {
				readyAt = time.Now()
			}
			if heldAt.IsZero() && len(heldBy(t, h, vips)) > 0 {
				heldAt = time.Now()
				if readyAt.IsZero() && !lds.probe(stateDirs[node]) {
					t.Errorf("the new vrrpd on %s holds VIPs %v after its start, before its readiness probe passes", node, heldAt.Sub(startAt))
				}
			}
			ok, _ := holdersMatch(t, want, nodes...)
			return ok && lds.isReady(node)
		})
		first := "none (it masters no VIP)"
		if !heldAt.IsZero() {
			first = heldAt.Sub(startAt).Round(time.Millisecond).String()
		}
		t.Logf("the new vrrpd on %s: probe ready %v after its start, first VIP %s, all its VIPs back and the kubelet's probe ready %v",
			node, readyAt.Sub(startAt).Round(time.Millisecond), first, time.Since(startAt).Round(time.Millisecond))
	}
	waitHoldersSettle(t, 10*time.Second, 2*time.Second, "the placement's masters after the roll", want, nodes...)

	samples, doubles, worstHole := smp.stop()
	pings := png.stop()
	wire, werr := arpw.stop()
	if werr != nil {
		t.Errorf("ARP watch: %v", werr)
	}
	t.Logf("address samples: %d (%.1f ms apart); samples with a VIP on two nodes: %d; bound on a gap: %v",
		samples.n, float64(samples.span.Microseconds())/1000/float64(max(samples.n, 1)), len(doubles), bound)
	macOf := hostMACs(t, nodes...)
	var moves []string
	var wireOverlaps []time.Duration
	for _, v := range vips {
		w := wire[v]
		for _, c := range w.changes {
			t.Logf("%v: the answering MAC changed from %s to %s at %s", v, macOf[c.from], macOf[c.to], c.at.Format("15:04:05.000"))
		}
		moves = append(moves, fmt.Sprintf("%v:%d", v, w.stableMoves))
		t.Logf("%v (master %s): no holder %v (sampled), no echo %v, no ARP reply %v; answering MAC changed %d times; %d requests answered by two MACs",
			v, want[v], worstHole[v].Round(time.Millisecond), pings[v].worst.Round(time.Millisecond), w.longest.Round(time.Millisecond), w.moves, len(w.doubles))
	}
	t.Logf("moves per VIP on the wire: %s", strings.Join(moves, " "))
	for _, d := range doubles {
		t.Errorf("two holders: %s", d)
	}
	for _, v := range vips {
		w := wire[v]
		for _, d := range w.doubles {
			t.Logf("%v: one ARP request answered by two MACs (not an overlap by itself: see arpWatch) at %s", v, d)
		}
		// Measured, not held against the roll: a restarted vrrpd takes its VIPs back by
		// an ordinary preemption, which (as in keepalived and RFC 5798) adds them as it
		// advertises, and the old master drops them when it hears that: both answer for
		// a few milliseconds, below the kernel sampler's resolution (the 20 ms).
		// Only the first preemption after a takeover from keepalived-operator breaks
		// first (vrrp.Instance.takeOverBreakFirst).
		for i, o := range w.overlaps {
			wireOverlaps = append(wireOverlaps, o)
			t.Logf("%v: two MACs took turns answering for %v (burst %d)", v, o.Round(time.Millisecond), i+1)
		}
		if worstHole[v] > bound || pings[v].worst > bound || w.longest > bound {
			t.Errorf("%v unanswered for %v (sampled) / %v (echo) / %v (ARP), more than one failover (%v)",
				v, worstHole[v], pings[v].worst, w.longest, bound)
		}
		if pings[v].answered == 0 || len(w.macs) == 0 {
			t.Errorf("%v never answered", v)
		}
		// Away from its master and back, once: more is a flap.
		if w.stableMoves > 2 {
			t.Errorf("%v: moved %d times, more than the roll needs (away from %s and back)", v, w.stableMoves, want[v])
		}
	}
	slices.Sort(wireOverlaps)
	if n := len(wireOverlaps); n > 0 {
		t.Logf("on the wire, two MACs took turns answering a VIP %d times (preemptions by restarted nodes), for %v to %v",
			n, wireOverlaps[0].Round(time.Millisecond), wireOverlaps[n-1].Round(time.Millisecond))
	} else {
		t.Logf("on the wire, no VIP was answered by two MACs in turn")
	}
}

// heldBy lists which of vips h holds.
func heldBy(t testing.TB, h *netlab.Host, vips []netip.Addr) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	for _, v := range vips {
		if vrrpdtest.HasAddr(t, h, v) {
			out = append(out, v)
		}
	}
	return slices.Clip(out)
}
