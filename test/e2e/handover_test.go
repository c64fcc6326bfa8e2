package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// TestExcludeFromLoadBalancersHandsOver is issue 30's maintenance handover, end to end: the
// operator and vrrpd on h1 and h2 (as the DaemonSet runs it, with the ServiceAccount's
// token), four Services whose VIPs placement spreads over both. Labelling the node that
// masters the first VIP node.kubernetes.io/exclude-from-external-load-balancers moves
// every VIP off it within 2 s, with no sample (every 10 ms) of a VIP on both nodes; the
// VIPs stay off while the label stays; taking it off brings them back as placement says.
// Once with multicast and once with unicast advertisements (where the other node must
// keep hearing the leaving master, its priority-0 advertisement included).
func TestExcludeFromLoadBalancersHandsOver(t *testing.T) {
	need(t)
	vrrpdBinary(t)
	createNodes(t)
	for _, unicast := range []bool{false, true} {
		name := map[bool]string{false: "multicast", true: "unicast"}[unicast]
		t.Run(name, func(t *testing.T) { runExcludeHandover(t, unicast) })
	}
}

func runExcludeHandover(t *testing.T, unicast bool) {
	ctx := context.Background()
	lab, ns := groupLabHosts(t, v1alpha1.KeepalivedGroupSpec{VRRPVersion: 3,
		AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond}, UnicastEnabled: unicast}, "h1", "h2")
	logGroupOnFailure(t, ns)
	cl, h1, h2 := lab.Host("client"), lab.Host("h1"), lab.Host("h2")
	groupRef := ns + "/" + groupName
	var vips []netip.Addr
	for i := range 4 {
		v := netip.AddrFrom4([4]byte{10, 99, 0, byte(110 + i)})
		vips = append(vips, v)
		newService(t, ns, fmt.Sprintf("svc%d", i), map[string]string{v1alpha1.AnnotationGroup: groupRef}, v)
	}
	placed := waitPlacement(t, ns, unicast, vips...).masters()

	daemons := startGroupDaemons(t, ns, h1, h2)
	want := map[netip.Addr]string{}
	for _, v := range vips {
		want[v] = placed[v]
	}
	waitHolders(t, 10*time.Second, "vrrpd follows the placement", want, h1, h2, cl)
	waitMastership(t, ns, 5*time.Second, "the KeepalivedMastership shows the placement", want)
	logged := map[string]int{}
	for node, d := range daemons {
		logged[node] = len(d.Output())
	}

	leaving := placed[vips[0]]
	staying := otherNode(leaving)
	off := map[netip.Addr]string{}
	for _, v := range vips {
		off[v] = staying
	}
	setLabel := func(on bool) {
		t.Helper()
		var n corev1.Node
		if err := env.Client.Get(ctx, types.NamespacedName{Name: leaving}, &n); err != nil {
			t.Fatal(err)
		}
		if on {
			n.Labels[v1alpha1.ExclusionLabel] = "true"
		} else {
			delete(n.Labels, v1alpha1.ExclusionLabel)
		}
		if err := env.Client.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { setLabel(false) }) // the Nodes outlive this subtest

	// Label the node: every VIP moves to the other within 2 s, never on both, and
	// stays there while the label stays (3 s, 30 advertisement intervals).
	s := startSampler(t, []*netlab.Host{h1, h2}, vips)
	setLabel(true)
	labelled := time.Now()
	vrrpdtest.WaitFor(t, 2*time.Second, "every VIP off "+leaving+" after the label", func() bool {
		ok, _ := holdersMatch(t, off, h1, h2)
		return ok
	})
	moved := time.Since(labelled)
	// The view from the API follows within a second of the move.
	shown := waitMastership(t, ns, time.Second, "the KeepalivedMastership shows the move", off)
	waitHoldersSettle(t, time.Second, 3*time.Second, "the VIPs stay off "+leaving+" while the label stays", off, h1, h2, cl)
	written := map[string]int{}
	for node, d := range daemons {
		written[node] = strings.Count(d.Output()[logged[node]:], `msg="mastership written"`)
	}
	t.Logf("KeepalivedMastership: the move shown %v after it was complete; writes: %s %d (took %d instances), %s %d",
		shown.Round(time.Millisecond), staying, written[staying], len(vips), leaving, written[leaving])
	if written[leaving] != 0 {
		t.Errorf("%s wrote the KeepalivedMastership %d times while handing over; the successor writes", leaving, written[leaving])
	}
	if written[staying] < 1 || written[staying] > 2 {
		t.Errorf("%s wrote the KeepalivedMastership %d times for one takeover of %d instances; want one (two if the takeovers outlast the writer's 400 ms wait)",
			staying, written[staying], len(vips))
	}
	n, doubles, _ := s.stop()
	t.Logf("label on %s: every VIP on %s after %v; %d samples over %v, %d with a VIP on both nodes",
		leaving, staying, moved.Round(time.Millisecond), n.n, n.span.Round(time.Millisecond), len(doubles))
	if len(doubles) > 0 {
		t.Errorf("a VIP on both nodes during the handover: %v", doubles)
	}
	if n.n < int(n.span/(20*time.Millisecond)) {
		t.Errorf("%d samples over %v: fewer than one every 20 ms", n.n, n.span)
	}
	var g v1alpha1.KeepalivedGroup
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupName}, &g); err != nil {
		t.Fatal(err)
	}
	for _, gn := range g.Status.Nodes {
		if w := map[bool]string{true: v1alpha1.ExclusionLabel}[gn.Name == leaving]; gn.Excluded != w {
			t.Errorf("status.nodes %s excluded %q, want %q", gn.Name, gn.Excluded, w)
		}
	}

	// Take the label off: the placement's masters take their VIPs back (a preemption).
	s = startSampler(t, []*netlab.Host{h1, h2}, vips)
	setLabel(false)
	waitHolders(t, 10*time.Second, "the label gone, the VIPs back as placement says", want, h1, h2, cl)
	n, doubles, _ = s.stop()
	t.Logf("label off: %d samples over %v, %d with a VIP on both nodes (a preemption: the returning node's first advertisement and the old master's step-down) %v",
		n.n, n.span.Round(time.Millisecond), len(doubles), doubles)
	waitMastership(t, ns, time.Second, "the KeepalivedMastership shows the return", want)
}

// waitMastership waits up to timeout until the group's KeepalivedMastership names, for
// each VIP, the node want says, and returns how long that took.
func waitMastership(t *testing.T, ns string, timeout time.Duration, what string, want map[netip.Addr]string) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for {
		var m v1alpha1.KeepalivedMastership
		err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: groupName}, &m)
		if err == nil {
			got := map[netip.Addr]string{}
			for _, h := range m.Status.Holders {
				for _, s := range h.VIPs {
					if v, err := parseVIP(s); err == nil {
						got[v] = h.Node
					}
				}
			}
			ok := true
			for v, node := range want {
				ok = ok && got[v] == node
			}
			if ok {
				return time.Since(start)
			}
			last = fmt.Sprint(got)
		} else {
			last = err.Error()
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v; want %v, have %s", what, timeout, want, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExcludeAtCapacityWritesOnce labels a node that masters about half of 255 instances
// (IPv6 VIPs, as TestKubernetesModeCapacityMemory) out of load balancers: every VIP moves
// to the other node within 2 s, and that node publishes the whole takeover in the
// KeepalivedMastership with one write (two at most, should a loaded machine take longer
// over the takeovers than the 400 ms the writer waits for a burst to end), the leaving
// node with none. routerSharing: PerService: the takeover of 127 instances is the load
// (shared, the same VIPs would be one router per node).
func TestExcludeAtCapacityWritesOnce(t *testing.T) {
	ctx := context.Background()
	lab, ns := groupLab(t, v1alpha1.KeepalivedGroupSpec{VRRPVersion: 3, AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond},
		RouterSharing: v1alpha1.RouterSharingPerService})
	logGroupOnFailure(t, ns)
	h1, h2 := lab.Host("h1"), lab.Host("h2")
	vips := capacityServices(t, ns)
	n := len(vips)
	daemons := startGroupDaemons(t, ns, h1, h2)
	holders := func() map[netip.Addr]string {
		out := map[netip.Addr]string{}
		for _, v := range vips {
			if hs := vrrpdtest.Holders(t, v, h1, h2); len(hs) == 1 {
				out[v] = hs[0]
			}
		}
		return out
	}
	var placed map[netip.Addr]string
	vrrpdtest.WaitFor(t, time.Minute, "every VIP held by one node", func() bool {
		placed = holders()
		return len(placed) == n
	})
	waitMastership(t, ns, 10*time.Second, "the KeepalivedMastership shows every VIP", placed)
	count := map[string]int{}
	for _, node := range placed {
		count[node]++
	}
	leaving := "h1"
	if count["h2"] > count["h1"] {
		leaving = "h2"
	}
	staying := otherNode(leaving)
	logged := map[string]int{}
	for node, d := range daemons {
		logged[node] = len(d.Output())
	}
	var node corev1.Node
	if err := env.Client.Get(ctx, types.NamespacedName{Name: leaving}, &node); err != nil {
		t.Fatal(err)
	}
	node.Labels[v1alpha1.ExclusionLabel] = ""
	if err := env.Client.Update(ctx, &node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var n corev1.Node
		if err := env.Client.Get(context.Background(), types.NamespacedName{Name: leaving}, &n); err == nil {
			delete(n.Labels, v1alpha1.ExclusionLabel)
			_ = env.Client.Update(context.Background(), &n)
		}
	})
	labelled := time.Now()
	off := map[netip.Addr]string{}
	for _, v := range vips {
		off[v] = staying
	}
	vrrpdtest.WaitFor(t, 2*time.Second, fmt.Sprintf("the %d VIPs of %s on %s", count[leaving], leaving, staying), func() bool {
		got := holders()
		for _, v := range vips {
			if got[v] != staying {
				return false
			}
		}
		return true
	})
	moved := time.Since(labelled)
	shown := waitMastership(t, ns, time.Second, "the KeepalivedMastership shows the move", off)
	time.Sleep(500 * time.Millisecond) // any further write would have come by now
	written := map[string]int{}
	for name, d := range daemons {
		written[name] = strings.Count(d.Output()[logged[name]:], `msg="mastership written"`)
	}
	t.Logf("label on %s: its %d instances on %s after %v, shown in the KeepalivedMastership %v later; writes: %s %d, %s %d",
		leaving, count[leaving], staying, moved.Round(time.Millisecond), shown.Round(time.Millisecond),
		staying, written[staying], leaving, written[leaving])
	if written[leaving] != 0 || written[staying] < 1 || written[staying] > 2 {
		t.Errorf("writes for one takeover of %d instances: %s %d, %s %d; want 1 (at most 2) and 0",
			count[leaving], staying, written[staying], leaving, written[leaving])
	}
}
