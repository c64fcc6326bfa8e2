package groupsource

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestMastershipWrites runs two nodes' publishers against the API server, on one
// KeepalivedMastership as the operator creates it: 255 instances becoming master on one
// node together are one write; the other node taking all of them over is one write of
// its own, and the first node leaving them writes nothing; a node takes one back (one
// write, the others stay the other node's); an instance gone from the group is dropped by
// the node that held it. Nothing is written while nothing changes.
func TestMastershipWrites(t *testing.T) {
	needAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t, "mastership")
	group := types.NamespacedName{Namespace: ns, Name: "lan"}
	if err := k8s.Create(ctx, &v1alpha1.KeepalivedMastership{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lan"}}); err != nil {
		t.Fatal(err)
	}
	g := &v1alpha1.KeepalivedGroup{}
	const n = 255
	name := func(i int) string { return fmt.Sprintf("%s/svc-%03d", ns, i) }
	vip := func(i int) []netip.Prefix {
		return []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, byte(i / 250), byte(1 + i%250)}), 32)}
	}
	for i := range n {
		g.Status.Instances = append(g.Status.Instances, v1alpha1.Instance{Key: name(i)})
	}
	pub := startPublishers(ctx, t, group, g, "a", "b")
	read := func() v1alpha1.KeepalivedMastership {
		t.Helper()
		var o v1alpha1.KeepalivedMastership
		if err := k8s.Get(ctx, group, &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	// want waits until every instance of idx is held by node (or, for "", by nobody),
	// and the others as before.
	nodes := map[string]string{}
	want := func(what string, node string, idx ...int) {
		t.Helper()
		for _, i := range idx {
			nodes[name(i)] = node
		}
		poll.Until(t, 10*time.Second, func() error {
			o := read()
			got := map[string]v1alpha1.VIPHolder{}
			for _, h := range o.Status.Holders {
				got[h.Instance] = h
			}
			for in, node := range nodes {
				h, ok := got[in]
				switch {
				case node == "" && ok:
					return fmt.Errorf("%s: %s still held by %s", what, in, h.Node)
				case node == "":
				case !ok || h.Node != node:
					return fmt.Errorf("%s: %s held by %q, want %s", what, in, h.Node, node)
				case h.Service != in || len(h.VIPs) != 1 || h.Since.IsZero():
					return fmt.Errorf("%s: entry %+v", what, h)
				}
			}
			return nil
		})
	}
	writes := func(what string, a, b int64) {
		t.Helper()
		time.Sleep(300 * time.Millisecond) // anything else would have been written by now
		if ga, gb := pub["a"].Writes(), pub["b"].Writes(); ga != a || gb != b {
			t.Fatalf("%s: writes a %d, b %d; want %d, %d", what, ga, gb, a, b)
		}
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	observe := func(node string, from, to vrrp.State, idx ...int) {
		for _, i := range idx {
			pub[node].Observe(name(i), from, to, vip(i), time.Now())
		}
	}

	observe("a", vrrp.StateBackup, vrrp.StateMaster, all...)
	want("a becomes master of all", "a", all...)
	writes("a becomes master of all", 1, 0)

	// b takes everything over; a steps down on hearing it (long before b's write).
	observe("b", vrrp.StateBackup, vrrp.StateMaster, all...)
	observe("a", vrrp.StateMaster, vrrp.StateBackup, all...)
	want("b takes over", "b", all...)
	writes("b takes over", 1, 1)
	if o := read(); len(o.Status.Holders) != n {
		t.Fatalf("%d entries, want %d", len(o.Status.Holders), n)
	}

	// a preempts one back.
	observe("b", vrrp.StateMaster, vrrp.StateBackup, 7)
	observe("a", vrrp.StateBackup, vrrp.StateMaster, 7)
	want("a takes 7 back", "a", 7)
	writes("a takes 7 back", 2, 1)
	var since7 metav1.MicroTime
	for _, h := range read().Status.Holders {
		if h.Instance == name(7) {
			since7 = h.Since
		}
	}

	// Service 9 is deleted: b, its master, drops the entry (nobody else would).
	g2 := g.DeepCopy()
	g2.Status.Instances = append(g2.Status.Instances[:9:9], g2.Status.Instances[10:]...)
	pub["a"].SetGroup(g2)
	pub["b"].SetGroup(g2)
	observe("b", vrrp.StateMaster, vrrp.StateInit, 9)
	want("9 deleted", "", 9)
	writes("9 deleted", 2, 2)

	// a is excluded (or stops): it leaves 7 with the instance still in the group and
	// writes nothing; b's takeover rewrites the entry.
	observe("a", vrrp.StateMaster, vrrp.StateInit, 7)
	writes("a resigns", 2, 2)
	observe("b", vrrp.StateBackup, vrrp.StateMaster, 7)
	want("b takes 7", "b", 7)
	writes("b takes 7", 2, 3)
	for _, h := range read().Status.Holders {
		if h.Instance == name(7) && !h.Since.After(since7.Time) {
			t.Errorf("7's since %v, want later than a's %v", h.Since, since7)
		}
	}
}

// TestMastershipHeals: a node that becomes master of an instance another node has
// mastered all along (two masters, as when a vrrpd starts and claims everything before it
// hears the others) overwrites the entry; when it steps down it writes nothing, and the
// node that stayed master, having made no transition, puts its entry back because it
// watches the object. Two nodes that both stay master do not overwrite each other in a
// loop: the entry keeps the longer mastership.
func TestMastershipHeals(t *testing.T) {
	needAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t, "mastership-heal")
	group := types.NamespacedName{Namespace: ns, Name: "lan"}
	if err := k8s.Create(ctx, &v1alpha1.KeepalivedMastership{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lan"}}); err != nil {
		t.Fatal(err)
	}
	g := &v1alpha1.KeepalivedGroup{}
	g.Status.Instances = []v1alpha1.Instance{{Key: ns + "/web"}}
	pub := startPublishers(ctx, t, group, g, "a", "b")
	vip := []netip.Prefix{netip.MustParsePrefix("10.99.0.9/32")}
	holder := func(want string) {
		t.Helper()
		poll.Until(t, 5*time.Second, func() error {
			var o v1alpha1.KeepalivedMastership
			if err := k8s.Get(ctx, group, &o); err != nil {
				return err
			}
			if len(o.Status.Holders) != 1 || o.Status.Holders[0].Node != want {
				return fmt.Errorf("holders %+v, want %s", o.Status.Holders, want)
			}
			return nil
		})
	}
	start := time.Now()
	pub["a"].Observe(ns+"/web", vrrp.StateBackup, vrrp.StateMaster, vip, start)
	holder("a")
	// b claims it (a stays master), then steps down: a puts its entry back.
	pub["b"].Observe(ns+"/web", vrrp.StateBackup, vrrp.StateMaster, vip, time.Now())
	holder("b")
	pub["b"].Observe(ns+"/web", vrrp.StateMaster, vrrp.StateBackup, vip, time.Now())
	holder("a")
	// Both master for good: b's claim is younger than a's, so a rewrites once and b
	// leaves it; nobody writes after that.
	pub["b"].Observe(ns+"/web", vrrp.StateBackup, vrrp.StateMaster, vip, time.Now())
	holder("a")
	time.Sleep(500 * time.Millisecond)
	wa, wb := pub["a"].Writes(), pub["b"].Writes()
	time.Sleep(time.Second)
	if pub["a"].Writes() != wa || pub["b"].Writes() != wb {
		t.Fatalf("writes go on while both stay master: a %d -> %d, b %d -> %d", wa, pub["a"].Writes(), wb, pub["b"].Writes())
	}
	holder("a")
	t.Logf("writes: a %d, b %d", wa, wb)
}

// TestMastershipSharedRouter: a shared router holds more VIPs than a holder entry may
// list (the API server refuses more than 64). Its entry is written, lists the first 64
// in address order whatever order the daemon gave them in, and a second node taking
// the same router over with the addresses in another order writes the same list.
func TestMastershipSharedRouter(t *testing.T) {
	needAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t, "mastership-shared")
	group := types.NamespacedName{Namespace: ns, Name: "lan"}
	if err := k8s.Create(ctx, &v1alpha1.KeepalivedMastership{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lan"}}); err != nil {
		t.Fatal(err)
	}
	const router = "@v6/a,b"
	g := &v1alpha1.KeepalivedGroup{}
	g.Status.Instances = []v1alpha1.Instance{{Key: router}}
	pub := startPublishers(ctx, t, group, g, "a", "b")
	// 200 addresses, from fd00:99::2:c8 down to fd00:99::2:1 (plus one
	// duplicate): the first 64 in address order are ::2:1 to ::2:40.
	var vips []netip.Prefix
	for i := 200; i >= 1; i-- {
		vips = append(vips, netip.PrefixFrom(netip.MustParseAddr(fmt.Sprintf("fd00:99::2:%x", i)), 128))
	}
	vips = append(vips, vips[150])
	var want []string
	for i := 1; i <= v1alpha1.MaxHolderVIPs; i++ {
		want = append(want, fmt.Sprintf("fd00:99::2:%x", i))
	}
	holder := func(node string) {
		t.Helper()
		poll.Until(t, 10*time.Second, func() error {
			var o v1alpha1.KeepalivedMastership
			if err := k8s.Get(ctx, group, &o); err != nil {
				return err
			}
			if len(o.Status.Holders) != 1 {
				return fmt.Errorf("%d holders, want 1", len(o.Status.Holders))
			}
			h := o.Status.Holders[0]
			if h.Node != node || h.Instance != router {
				return fmt.Errorf("holder %s of %s, want %s of %s", h.Node, h.Instance, node, router)
			}
			if fmt.Sprint(h.VIPs) != fmt.Sprint(want) {
				return fmt.Errorf("vips %v, want %v", h.VIPs, want)
			}
			return nil
		})
	}
	pub["a"].Observe(router, vrrp.StateBackup, vrrp.StateMaster, vips, time.Now())
	holder("a")
	// b takes over with the addresses in ascending order.
	slices.Reverse(vips)
	pub["b"].Observe(router, vrrp.StateBackup, vrrp.StateMaster, vips, time.Now())
	pub["a"].Observe(router, vrrp.StateMaster, vrrp.StateBackup, vips, time.Now())
	holder("b")
}

// startPublishers runs a Mastership publisher of group g for each node, with short
// coalescing and back-off, until ctx ends.
func startPublishers(ctx context.Context, t *testing.T, group types.NamespacedName, g *v1alpha1.KeepalivedGroup, nodes ...string) map[string]*Mastership {
	t.Helper()
	pub := map[string]*Mastership{}
	for _, node := range nodes {
		m, err := NewMastership(testConfig, group, node, nil)
		if err != nil {
			t.Fatal(err)
		}
		m.Coalesce, m.MinBackoff = 50*time.Millisecond, 50*time.Millisecond
		m.SetGroup(g)
		go m.Run(ctx)
		pub[node] = m
	}
	return pub
}
