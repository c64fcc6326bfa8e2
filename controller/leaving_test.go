package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestDrainStepRules: drainStep keeps a leaving node while KeepalivedMastership names
// it master of an instance, or does not name a master of every instance listing
// addresses (an empty object proves nothing), and drops it once it names others for
// all of them, or after the timed fallback: moveWait, times mastershipWaitFactor with
// mastership served. While it keeps one, it polls every advertisement interval with
// mastership served, else waits for the fallback.
func TestDrainStepRules(t *testing.T) {
	s := v1alpha1.InstanceSettings{Version: 3, AdvertInterval: metav1.Duration{Duration: 100 * time.Millisecond}}
	wait := moveWait(s)
	status := []v1alpha1.Instance{
		{Key: "@c/m1,x", VIPs: []string{"fd00:99::1"}},
		{Key: "@c/x,m1", VIPs: []string{"fd00:99::2"}},
		{Key: "@c/x,y", VIPs: []string{"10.99.0.3", "fd00:99::3"}}, // dual-stack: two entries
		{Key: "@c/y,x"}, // lists nothing: needs no master
	}
	leaving := []v1alpha1.GroupNode{{Name: "m1", Addresses: []string{"10.99.0.1"}}}
	all := func(m1x string) map[string]string {
		return map[string]string{"@c/m1,x": m1x, "@c/x,m1": "x", "@c/x,y/ipv4": "x", "@c/x,y/ipv6": "x"}
	}
	partial := all("x")
	delete(partial, "@c/x,y/ipv6")
	for _, c := range []struct {
		name    string
		masters map[string]string
		age     time.Duration
		keep    bool
		requeue time.Duration
	}{
		{"still master", all("m1"), 0, true, 250 * time.Millisecond},
		{"others master all", all("x"), 0, false, 0},
		{"a family without a master", partial, 0, true, 250 * time.Millisecond},
		{"empty mastership", map[string]string{}, 0, true, 250 * time.Millisecond},
		{"still master near the fallback", all("m1"), mastershipWaitFactor*wait - 100*time.Millisecond, true, 100 * time.Millisecond},
		{"still master at the fallback", all("m1"), mastershipWaitFactor * wait, false, 0},
		{"not served", nil, 0, true, wait},
		{"not served, half way", nil, wait / 2, true, wait - wait/2},
		{"not served, at the fallback", nil, wait, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			keep, requeue := drainStep(status, leaving, c.masters, map[string]time.Duration{"m1": c.age}, s)
			if got := len(keep) == 1; got != c.keep {
				t.Fatalf("kept %v, want %v", keep, c.keep)
			}
			if c.keep && (keep[0].Excluded != v1alpha1.ExclusionLeaving || keep[0].Name != "m1" || !slices.Equal(keep[0].Addresses, leaving[0].Addresses)) {
				t.Errorf("kept %+v, want m1 with its addresses, excluded %q", keep[0], v1alpha1.ExclusionLeaving)
			}
			if requeue != c.requeue {
				t.Errorf("requeue %v, want %v", requeue, c.requeue)
			}
		})
	}
	if leaving[0].Excluded != "" {
		t.Error("drainStep modified its input")
	}
}

// TestLeavingOnlyShared: a PerService group (and one under a takeover) drops a node
// that left in one write, as before.
func TestLeavingOnlyShared(t *testing.T) {
	r := &GroupReconciler{}
	g := &v1alpha1.KeepalivedGroup{}
	g.Status.Nodes = []v1alpha1.GroupNode{{Name: "a"}, {Name: "b"}}
	members := []v1alpha1.GroupNode{{Name: "a"}}
	for _, c := range []struct {
		sharing   v1alpha1.RouterSharing
		migration *v1alpha1.Migration
	}{{v1alpha1.RouterSharingPerService, nil}, {v1alpha1.RouterSharingShared, &v1alpha1.Migration{}}} {
		g.Spec.RouterSharing, g.Status.Migration = c.sharing, c.migration
		keep, wait, err := r.leavingNodes(context.Background(), g, members)
		if err != nil || keep != nil || wait != 0 {
			t.Errorf("%s (migration %v): kept %v, requeue %v, err %v", c.sharing, c.migration != nil, keep, wait, err)
		}
	}
}

// leaveWrite1 checks a status written while the node at index victim leaves: the same
// nodes in the same order, the victim excluded as leaving and the others not, the same
// instances (keys, router IDs, addresses) and routerIDs as before, and each instance's
// priorities as before but the victim's: one under the next node's where it ranked first
// (and that is above the third's), 0 elsewhere. It returns how many instances ranked the
// victim before.
func leaveWrite1(before, st *v1alpha1.KeepalivedGroupStatus, victim int) (int, error) {
	if len(st.Nodes) != len(before.Nodes) {
		return 0, fmt.Errorf("%d nodes, want %d", len(st.Nodes), len(before.Nodes))
	}
	for i, n := range st.Nodes {
		want := ""
		if i == victim {
			want = v1alpha1.ExclusionLeaving
		}
		if n.Name != before.Nodes[i].Name || n.Excluded != want {
			return 0, fmt.Errorf("node %d: %s excluded %q, want %s excluded %q", i, n.Name, n.Excluded, before.Nodes[i].Name, want)
		}
	}
	if len(st.Instances) != len(before.Instances) {
		return 0, fmt.Errorf("%d instances, want %d", len(st.Instances), len(before.Instances))
	}
	ranked := 0
	for i, in := range st.Instances {
		old := before.Instances[i]
		if in.Key != old.Key || in.VRID != old.VRID || !slices.Equal(in.VIPs, old.VIPs) {
			return 0, fmt.Errorf("instance %s (%d, %d VIPs) changed: was %s (%d, %d VIPs)", in.Key, in.VRID, len(in.VIPs), old.Key, old.VRID, len(old.VIPs))
		}
		p, err := v1alpha1.DecodePriorities(in.Priorities, len(st.Nodes))
		if err != nil {
			return 0, err
		}
		want, err := v1alpha1.DecodePriorities(old.Priorities, len(st.Nodes))
		if err != nil {
			return 0, err
		}
		if want[victim] != v1alpha1.PriorityNotMember {
			ranked++
		}
		wasTop := slices.Max(want) == want[victim] && want[victim] != v1alpha1.PriorityNotMember
		want[victim] = v1alpha1.PriorityNotMember
		if wasTop {
			// Handed over: one under the next node, when that is above the third.
			rest := slices.Clone(want)
			slices.Sort(rest)
			slices.Reverse(rest)
			if len(rest) > 1 && rest[0]-1 > rest[1] {
				want[victim] = rest[0] - 1
			}
		}
		if !slices.Equal(p, want) {
			return 0, fmt.Errorf("instance %s: priorities %v, want %v", in.Key, p, want)
		}
	}
	if len(st.RouterIDs) != len(before.RouterIDs) {
		return 0, fmt.Errorf("%d routerIDs, want %d", len(st.RouterIDs), len(before.RouterIDs))
	}
	for k, id := range before.RouterIDs {
		if st.RouterIDs[k] != id {
			return 0, fmt.Errorf("routerIDs[%s] = %d, was %d", k, st.RouterIDs[k], id)
		}
	}
	return ranked, nil
}

// leaveWrites finds, among the statuses logged since index from, the first write that
// differs from before (write 1, which must keep the victim: leaveWrite1) and the first
// with fewer nodes (write 2, or -1); every status between them must be write 1's form.
func leaveWrites(written []v1alpha1.KeepalivedGroupStatus, from int, before *v1alpha1.KeepalivedGroupStatus, victim int) (w1, w2 int, err error) {
	w1, w2 = -1, -1
	for i := from; i < len(written); i++ {
		st := &written[i]
		if len(st.Nodes) < len(before.Nodes) {
			if w1 < 0 {
				return -1, -1, fmt.Errorf("status %d dropped the node without a drain first (%d nodes)", i, len(st.Nodes))
			}
			return w1, i, nil
		}
		if w1 < 0 && slices.EqualFunc(st.Nodes, before.Nodes, func(a, b v1alpha1.GroupNode) bool { return a.Name == b.Name && a.Excluded == b.Excluded }) {
			continue
		}
		if _, err := leaveWrite1(before, st, victim); err != nil {
			return -1, -1, fmt.Errorf("status %d: %w", i, err)
		}
		if w1 < 0 {
			w1 = i
		}
	}
	return w1, w2, nil
}

// watchedLeaveWrites waits until the status watch has delivered both writes of a leave
// (leaveWrites) and returns the statuses watched and the writes' indexes. The watch
// delivers a write a moment after a Get has seen it: read at once, write 2 was missing
// from a clean-clone run's log.
func watchedLeaveWrites(t *testing.T, log *statusLog, from int, before *v1alpha1.KeepalivedGroupStatus, victim int) (written []v1alpha1.KeepalivedGroupStatus, w1, w2 int) {
	t.Helper()
	var errs []string
	eventually(t, 30*time.Second, func() error {
		written, errs = log.snapshot()
		var err error
		if w1, w2, err = leaveWrites(written, from, before, victim); err != nil {
			t.Fatal(err)
		}
		if w1 < 0 || w2 < 0 {
			return fmt.Errorf("writes 1 (%d) and 2 (%d) not both watched yet", w1, w2)
		}
		return nil
	})
	for _, e := range errs {
		t.Error(e)
	}
	return written, w1, w2
}

// dropLabel removes key from the labels of Node name.
func dropLabel(t *testing.T, name, key string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		var n corev1.Node
		if err := k8s.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
			return err
		}
		delete(n.Labels, key)
		return k8s.Update(context.Background(), &n)
	})
}

// TestSharedLeaveDrainsFirst: a node's label is removed in a 4-node Shared group of
// 300 Services. Write 1 keeps the node, excluded as leaving, one under the next node in
// the routers it masters and 0 in the others, and every router's key, ID and members
// unchanged (VRRP moves its routers whole to their next node, which preempts it); the operator is restarted and, while
// KeepalivedMastership still names the node master of its routers, keeps it; once
// KeepalivedMastership names the write-1 tops (as the vrrpd that took over would), the
// next write drops the node, sooner than the timed fallback, and every member is in a
// router of the remaining nodes mastered by its rendezvous top. No status on the way
// leaves an address out or gives a router ID to another key.
func TestSharedLeaveDrainsFirst(t *testing.T) {
	ns := newNamespace(t, "shleave")
	lbl := map[string]string{"shleave-test": ns}
	nodes := newNodes(t, ns, 4, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	})
	const n = 300
	vips := createServices(t, ns, ns+"/g", n)
	tm := startManager(t, ns)
	eventually(t, 2*time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 4, 12)
		return err
	})
	before := getGroup(t, ns, "g").Status
	// vrrpd's view before the leave: each router mastered by its top.
	masters := map[string]string{}
	for i := range before.Instances {
		masters[before.Instances[i].Key] = topOf(&before, &before.Instances[i])
	}
	setMasters(t, ns, "g", masters)
	victim := 1
	log := watchStatuses(t, ns, "g", vips)
	from := len(func() []v1alpha1.KeepalivedGroupStatus { w, _ := log.snapshot(); return w }())

	dropLabel(t, nodes[victim], "shleave-test")
	var step1 v1alpha1.KeepalivedGroupStatus
	eventually(t, time.Minute, func() error {
		written, _ := log.snapshot()
		w1, w2, err := leaveWrites(written, from, &before, victim)
		if err != nil {
			t.Fatal(err)
		}
		if w2 >= 0 {
			t.Fatalf("status %d dropped the node while KeepalivedMastership names it master", w2)
		}
		if w1 < 0 {
			return fmt.Errorf("no write 1 yet")
		}
		step1 = written[w1]
		return nil
	})
	ranked, err := leaveWrite1(&before, &step1, victim)
	if err != nil {
		t.Fatal(err)
	}
	if ranked != len(before.Instances) {
		t.Errorf("the leaving node was ranked by %d of %d routers before", ranked, len(before.Instances))
	}
	tm.stop()

	// A new operator carries on from the status: the node stays while
	// KeepalivedMastership names it.
	startManager(t, ns)
	time.Sleep(2 * time.Second)
	if st := getGroup(t, ns, "g").Status; len(st.Nodes) != 4 {
		t.Fatalf("the restarted operator dropped the node while KeepalivedMastership names it: %d nodes", len(st.Nodes))
	}

	// vrrpd's view after write 1: the leaving node was preempted, each of its routers is
	// mastered by its top in write 1 (its second before).
	masters = map[string]string{}
	took := 0
	for i := range step1.Instances {
		in := &step1.Instances[i]
		masters[in.Key] = topOf(&step1, in)
		if masters[in.Key] == nodes[victim] {
			t.Fatalf("write 1: router %s's top is the leaving node", in.Key)
		}
		if topOf(&before, &before.Instances[i]) == nodes[victim] {
			took++
		}
	}
	if took == 0 {
		t.Fatal("the leaving node mastered no router")
	}
	drained := time.Now()
	setMasters(t, ns, "g", masters)
	var final map[string]string
	eventually(t, time.Minute, func() error {
		var err error
		final, err = sharedView(getGroup(t, ns, "g"), vips, 3, 6)
		return err
	})
	elapsed := time.Since(drained)
	fallback := mastershipWaitFactor * moveWait(groupSettings(getGroup(t, ns, "g")))
	t.Logf("write 2 %v after KeepalivedMastership named the new masters (fallback %v); %d routers failed over whole", elapsed.Round(time.Millisecond), fallback, took)
	if elapsed >= fallback {
		t.Errorf("write 2 took %v: not on KeepalivedMastership's word", elapsed)
	}
	for key, node := range final {
		if node == nodes[victim] {
			t.Errorf("%s is still mastered by the node that left", key)
		}
	}
	written, w1, _ := watchedLeaveWrites(t, log, from, &before, victim)
	// Write 2's moves are all on the node holding them: each member's new router's top
	// is the master of the router it leaves.
	for key, a := range vips {
		var from, to string
		for i := range written[w1].Instances {
			if slices.Contains(written[w1].Instances[i].VIPs, a.String()) {
				from = masters[written[w1].Instances[i].Key]
			}
		}
		to = final[key]
		if from != to {
			t.Errorf("%s moves from %s's router to %s's in write 2", key, from, to)
		}
	}
}

// TestSharedLeaveDrainsWithoutMastership: on an API server without the
// KeepalivedMastership CRD, a Node deleted from a 4-node Shared group (100 ms adverts)
// is kept, excluded as leaving, in write 1, and dropped by write 2 on the timed
// fallback (moveWait after write 1), with nothing else happening to the group.
func TestSharedLeaveDrainsWithoutMastership(t *testing.T) {
	withoutMastershipCRD(t)
	ns := newNamespace(t, "shleavet")
	lbl := map[string]string{"shleavet-test": ns}
	nodes := newNodes(t, ns, 4, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
		g.Spec.AdvertInterval = &metav1.Duration{Duration: 100 * time.Millisecond}
	})
	vips := createServices(t, ns, ns+"/g", 120)
	startManager(t, ns)
	eventually(t, time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 4, 12)
		return err
	})
	before := getGroup(t, ns, "g").Status
	log := watchStatuses(t, ns, "g", vips)
	from := len(func() []v1alpha1.KeepalivedGroupStatus { w, _ := log.snapshot(); return w }())
	victim := 2
	if err := k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[victim]}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 3, 6)
		return err
	})
	_, w1, w2 := watchedLeaveWrites(t, log, from, &before, victim)
	wait := moveWait(groupSettings(getGroup(t, ns, "g")))
	log.mu.Lock()
	gap := log.at[w2].Sub(log.at[w1])
	log.mu.Unlock()
	t.Logf("write 2 %v after write 1 (moveWait %v)", gap.Round(time.Millisecond), wait)
	// The operator's clock starts before write 1 reaches the watch: 200 ms of room.
	if gap < wait-200*time.Millisecond {
		t.Fatalf("write 2 came %v after write 1, before the timed fallback (%v)", gap, wait)
	}
}
