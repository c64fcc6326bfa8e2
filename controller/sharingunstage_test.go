package controller

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// clockStepper takes the steps of one group as the reconciler does (moveClocks.stage:
// the clocks and the handovers remembered), on a clock of its own.
type clockStepper struct {
	clocks moveClocks
	now    time.Time
}

// step plans g's next status from its status and writes it into g.Status, with the
// KeepalivedMastership given (nil: not served); it returns the full plan's instances.
func (s *clockStepper) step(g *v1alpha1.KeepalivedGroup, services []corev1.Service, nodes []corev1.Node, masters map[string]string) ([]v1alpha1.Instance, moveResult) {
	p := computePlan(g, services, nodes, nil)
	full := slices.Clone(p.instances)
	var res moveResult
	if p.shared {
		res = s.clocks.stage(types.NamespacedName{Namespace: g.Namespace, Name: g.Name}, &g.Status, &p, masters, s.now)
	}
	g.Status.Instances, g.Status.RouterIDs, g.Status.Nodes = p.instances, p.routerIDs, p.nodes
	return full, res
}

// statusTops names each instance's top node in st: the master vrrpd settles on with
// preempt on (what a KeepalivedMastership written after the step says).
func statusTops(st *v1alpha1.KeepalivedGroupStatus) map[string]string {
	out := map[string]string{}
	for i := range st.Instances {
		out[st.Instances[i].Key] = topOf(st, &st.Instances[i])
	}
	return out
}

// handedOver are the routers of cur that prev had with another top than the plan's
// (full's) and cur has with the plan's: those the write un-staged, each with the
// node it was staged for.
func handedOver(prev, cur *v1alpha1.KeepalivedGroupStatus, full []v1alpha1.Instance) map[string]string {
	out := map[string]string{}
	for i := range full {
		t := &full[i]
		j, had := routerIndex(prev, t.Key)
		k, has := routerIndex(cur, t.Key)
		if !had || !has {
			continue
		}
		planned := topOf(cur, t)
		if was := topOf(prev, &prev.Instances[j]); was != planned && topOf(cur, &cur.Instances[k]) == planned {
			out[t.Key] = was
		}
	}
	return out
}

// joinGroup is a shared group of n Services (one IPv6 address each) planned on the
// nodes a, b and c, with 100 ms adverts; nodes are a..e.
func joinGroup(n int) (*v1alpha1.KeepalivedGroup, []corev1.Service, []corev1.Node, map[string]netip.Addr) {
	var nodes []corev1.Node
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	var services []corev1.Service
	vips := map[string]netip.Addr{}
	for i := range n {
		a := fmt.Sprintf("fd00:99::2:%x", i)
		services = append(services, sharedTestService("ns", fmt.Sprintf("s%03d", i), a, false))
		vips[fmt.Sprintf("ns/s%03d", i)] = netip.MustParseAddr(a)
	}
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared,
			AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond}}}
	stepGroup(g, services, nodes[:3], nil, 0)
	return g, services, nodes, vips
}

// stagedRouters are the routers of st whose top is not the plan's (full's).
func stagedRouters(st *v1alpha1.KeepalivedGroupStatus, full []v1alpha1.Instance) []string {
	var out []string
	for i := range full {
		if k, ok := routerIndex(st, full[i].Key); ok && topOf(st, &st.Instances[k]) != topOf(st, &full[i]) {
			out = append(out, full[i].Key)
		}
	}
	return out
}

// TestStageMovesHandoversPaced: a 4th node joining 3 (300 Services) becomes the top
// of three new routers, each staged for the node holding its members (§4 case 2).
// Write 2 hands them over one a write: in each write at most one router goes from its
// staged top to its real top, the next only once KeepalivedMastership names the
// joining node master of the one before (here vrrpd's view follows each write at
// once). Every write is valid (checkStep), and the last is the plan. The joining node
// thus preempts one router's addresses at a time instead of all of them at once.
func TestStageMovesHandoversPaced(t *testing.T) {
	g, services, nodes, vips := joinGroup(300)
	s := &clockStepper{now: time.Unix(1e9, 0)}
	masters := statusTops(&g.Status)
	var staged []string
	var handed []string
	for w := 0; ; w++ {
		prev := g.Status.DeepCopy()
		full, res := s.step(g, services, nodes[:4], masters)
		if err := checkStep(prev, &g.Status, vips); err != nil {
			t.Fatalf("write %d: %v", w, err)
		}
		if w == 0 {
			staged = stagedRouters(&g.Status, full)
		}
		h := handedOver(prev, &g.Status, full)
		if len(h) > 1 {
			t.Fatalf("write %d hands over %d routers at once: %v", w, len(h), h)
		}
		if !reflect.DeepEqual(h, res.unstaged) && len(h)+len(res.unstaged) > 0 {
			t.Errorf("write %d: the step says it un-staged %v, the status shows %v", w, res.unstaged, h)
		}
		handed = slices.AppendSeq(handed, maps.Keys(h))
		if !res.pending {
			if !reflect.DeepEqual(g.Status.Instances, full) {
				t.Fatal("the last write is not the plan")
			}
			t.Logf("join of 300 Services: %d writes, %d staged routers %v handed over in order %v", w+1, len(staged), staged, handed)
			break
		}
		if w > 12 {
			t.Fatalf("not done after %d writes", w+1)
		}
		// vrrpd: each router's master is its top in the status just written.
		masters = statusTops(&g.Status)
		s.now = s.now.Add(300 * time.Millisecond)
	}
	slices.Sort(handed)
	if len(staged) < 2 || !slices.Equal(handed, staged) {
		t.Fatalf("handed over %v, want each of the %d routers staged by write 1 (%v) once", handed, len(staged), staged)
	}
}

// TestStageMovesHandoverWaits: the write after a handover holds the next staged router
// back until the handover is done. With KeepalivedMastership served, the handover is in
// flight while it names the node the router was staged for (its top has not preempted
// yet); an operator restarted then (no memory, every age zero) reads that from the
// status and KeepalivedMastership alone and hands nothing else over. Once
// KeepalivedMastership names the router's real top, the next one goes. Without
// KeepalivedMastership, the next goes moveWait after the handover, not before.
func TestStageMovesHandoverWaits(t *testing.T) {
	g, services, nodes, _ := joinGroup(300)
	s := &clockStepper{now: time.Unix(1e9, 0)}
	write1 := map[string]string{}
	full, _ := s.step(g, services, nodes[:4], map[string]string{})
	maps.Copy(write1, statusTops(&g.Status)) // the staged holders master their routers
	s.now = s.now.Add(300 * time.Millisecond)
	prev := g.Status.DeepCopy()
	s.step(g, services, nodes[:4], write1)
	first := handedOver(prev, &g.Status, full)
	if len(first) != 1 {
		t.Fatalf("write 2 handed over %v, want one router", first)
	}
	inFlight := g.DeepCopy()
	wait := moveWait(groupSettings(g))

	// The joining node has not preempted yet: KeepalivedMastership still names the
	// staged holder, or (the holder's entry gone, the joining node's not written yet)
	// nobody. The same operator, and a restarted one, hand nothing else over.
	between := maps.Clone(write1)
	for k := range first {
		delete(between, k)
	}
	for _, restarted := range []bool{false, true} {
		for _, masters := range []map[string]string{write1, between} {
			g2 := inFlight.DeepCopy()
			s2 := &clockStepper{now: s.now.Add(300 * time.Millisecond)}
			if !restarted {
				s2.clocks = moveClocks{since: maps.Clone(s.clocks.since), handed: maps.Clone(s.clocks.handed)}
			}
			prev := g2.Status.DeepCopy()
			if _, res := s2.step(g2, services, nodes[:4], masters); !res.pending || !reflect.DeepEqual(g2.Status, *prev) {
				t.Fatalf("restarted %v, %d masters named: the write after the handover is not the same step (handed over %v)", restarted, len(masters), handedOver(prev, &g2.Status, full))
			}
		}
	}
	// The joining node preempted: the next router goes, for a restarted operator too.
	preempted := maps.Clone(write1)
	for k := range first {
		preempted[k] = "d"
	}
	for _, restarted := range []bool{false, true} {
		g2 := inFlight.DeepCopy()
		s2 := &clockStepper{now: s.now.Add(300 * time.Millisecond)}
		if !restarted {
			s2.clocks = moveClocks{since: maps.Clone(s.clocks.since), handed: maps.Clone(s.clocks.handed)}
		}
		prev := g2.Status.DeepCopy()
		s2.step(g2, services, nodes[:4], preempted)
		if h := handedOver(prev, &g2.Status, full); len(h) != 1 || maps.Equal(h, first) {
			t.Fatalf("restarted %v: after the joining node preempted, handed over %v, want the next router", restarted, h)
		}
	}

	// KeepalivedMastership not served: the next handover comes moveWait after the
	// first, not before.
	g, services, nodes, _ = joinGroup(300)
	s = &clockStepper{now: time.Unix(1e9, 0)}
	s.step(g, services, nodes[:4], nil)
	s.now = s.now.Add(wait)
	prev = g.Status.DeepCopy()
	s.step(g, services, nodes[:4], nil)
	if h := handedOver(prev, &g.Status, full); len(h) != 1 {
		t.Fatalf("not served: write 2 at moveWait handed over %v, want one router", h)
	}
	for _, after := range []time.Duration{time.Millisecond, wait - time.Millisecond} {
		g2 := g.DeepCopy()
		s2 := &clockStepper{now: s.now.Add(after), clocks: moveClocks{since: maps.Clone(s.clocks.since), handed: maps.Clone(s.clocks.handed)}}
		prev := g2.Status.DeepCopy()
		if _, res := s2.step(g2, services, nodes[:4], nil); !reflect.DeepEqual(g2.Status, *prev) || res.due != wait-after {
			t.Fatalf("not served, %v after the handover: handed over %v, timed condition due in %v (want %v)", after, handedOver(prev, &g2.Status, full), res.due, wait-after)
		}
	}
	s.now = s.now.Add(wait)
	prev = g.Status.DeepCopy()
	s.step(g, services, nodes[:4], nil)
	if h := handedOver(prev, &g.Status, full); len(h) != 1 {
		t.Fatalf("not served: moveWait after the first handover, handed over %v, want the next router", h)
	}
}

// TestStageMovesHandoversPerNode: two nodes joining 3 at once. A node takes part in one
// handover at a time, as the router's real top (which preempts and adds the addresses)
// or as the node it was staged for (which releases them); handovers between different
// nodes go in the same write, since they load different nodes.
func TestStageMovesHandoversPerNode(t *testing.T) {
	g, services, nodes, vips := joinGroup(400)
	s := &clockStepper{now: time.Unix(1e9, 0)}
	masters := statusTops(&g.Status)
	most, total := 0, 0
	for w := 0; ; w++ {
		prev := g.Status.DeepCopy()
		full, res := s.step(g, services, nodes, masters)
		if err := checkStep(prev, &g.Status, vips); err != nil {
			t.Fatalf("write %d: %v", w, err)
		}
		h := handedOver(prev, &g.Status, full)
		busy := map[string]string{}
		for k, holder := range h {
			for _, n := range []string{holder, topOf(&g.Status, instanceByKey(&g.Status, k))} {
				if other, dup := busy[n]; dup {
					t.Fatalf("write %d: node %s in two handovers, %s and %s", w, n, other, k)
				}
				busy[n] = k
			}
		}
		most, total = max(most, len(h)), total+len(h)
		if !res.pending {
			if !reflect.DeepEqual(g.Status.Instances, full) {
				t.Fatal("the last write is not the plan")
			}
			t.Logf("two nodes joining, 400 Services: %d writes, %d handovers, at most %d in one write", w+1, total, most)
			break
		}
		if w > 20 {
			t.Fatalf("not done after %d writes", w+1)
		}
		masters = statusTops(&g.Status)
		s.now = s.now.Add(300 * time.Millisecond)
	}
	if total < 2 {
		t.Fatalf("%d handovers", total)
	}
}

// followMasters plays vrrpd's KeepalivedMastership with preempt on, until the test
// ends: after each change of the group's status, delay later, every instance's master
// is its top node in that status.
func followMasters(t *testing.T, ns, name string, delay time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last map[string]string
		for ctx.Err() == nil {
			var g v1alpha1.KeepalivedGroup
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &g); err == nil {
				if tops := statusTops(&g.Status); !maps.Equal(tops, last) {
					select {
					case <-ctx.Done():
						return
					case <-time.After(delay):
					}
					if writeMasters(ctx, ns, name, tops) == nil {
						last = tops
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// writeMasters writes ns/name's KeepalivedMastership holders: each instance mastered
// by the node given.
func writeMasters(ctx context.Context, ns, name string, masters map[string]string) error {
	var m v1alpha1.KeepalivedMastership
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &m); err != nil {
		return err
	}
	m.Status.Holders = nil
	for inst, node := range masters {
		if node != "" {
			m.Status.Holders = append(m.Status.Holders, v1alpha1.VIPHolder{Instance: inst, Node: node, Since: metav1.NowMicro()})
		}
	}
	return k8s.Status().Update(ctx, &m)
}

// keyTop is the planned top node of a shared router key with exact ranks
// ("@class/a,b": a).
func keyTop(key string) string {
	_, rest, _ := strings.Cut(key, "/")
	top, _, _ := strings.Cut(rest, ",")
	return top
}

// TestSharedJoinHandoversPaced: a 4th node joins a 3-node shared group of 400 Services
// with 100 ms adverts, vrrpd's KeepalivedMastership following each status (each
// router's master its top there, 150 ms after the write). The joining node is the top
// of three new routers that write 1 stages for their holders; the writes after it
// give them their real priorities one a write (each status written differs from the
// one before in at most one router going from another top to its planned top), the
// next only after KeepalivedMastership names the joining node master of the one
// before. No status leaves an address in no router or a router ID twice, and the
// group ends with every Service in one router mastered by its rendezvous top.
func TestSharedJoinHandoversPaced(t *testing.T) {
	ns := newNamespace(t, "shhand")
	lbl := map[string]string{"shhand-test": ns}
	newNodes(t, ns, 3, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
		g.Spec.AdvertInterval = &metav1.Duration{Duration: 100 * time.Millisecond}
	})
	const n = 400
	vips := createServices(t, ns, ns+"/g", n)
	startManager(t, ns)
	followMasters(t, ns, "g", 150*time.Millisecond)
	eventually(t, 2*time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 3, 6)
		return err
	})
	log := watchStatuses(t, ns, "g", vips)
	start := time.Now()
	joined := newNodes(t, ns+"-j", 1, lbl)[0]
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("statuses:%s", log.summary(start))
		}
	})
	eventually(t, time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 4, 12)
		return err
	})
	settled := time.Since(start)
	// The watch may deliver the last status after the API server answered the read.
	final := getGroup(t, ns, "g").Status.Instances
	eventually(t, 30*time.Second, func() error {
		written, _ := log.snapshot()
		if !reflect.DeepEqual(written[len(written)-1].Instances, final) {
			return fmt.Errorf("the watch has not delivered the final status yet (%d statuses)", len(written))
		}
		return nil
	})

	written, errs := log.snapshot()
	for _, e := range errs {
		t.Error(e)
	}
	var handed []string
	first, last := -1, -1
	for i := 1; i < len(written); i++ {
		prev, cur := &written[i-1], &written[i]
		var h []string
		for k := range cur.Instances {
			in := &cur.Instances[k]
			j, had := routerIndex(prev, in.Key)
			if !had || len(prev.Nodes) != len(cur.Nodes) {
				continue
			}
			if top := keyTop(in.Key); topOf(prev, &prev.Instances[j]) != top && topOf(cur, in) == top {
				h = append(h, in.Key)
			}
		}
		if len(h) > 1 {
			t.Errorf("status %d hands over %d routers at once: %v", i, len(h), h)
		}
		handed = append(handed, h...)
		if len(cur.Nodes) == 4 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	log.mu.Lock()
	took := log.at[last].Sub(log.at[first])
	log.mu.Unlock()
	writes := last - first + 1
	for _, k := range handed {
		if keyTop(k) != joined {
			t.Errorf("router %s handed over to %s, not to the joining node %s", k, keyTop(k), joined)
		}
	}
	if len(handed) != 3 {
		t.Errorf("handed over %v, want the joining node's 3 routers, each once", handed)
	}
	t.Logf("statuses:%s", log.summary(start))
	t.Logf("join of %d Services: %d statuses with 4 nodes over %v (write 1 to the plan), settled %v after the node was made; handovers in order %v",
		n, writes, took.Round(time.Millisecond), settled.Round(time.Millisecond), handed)
}

// TestStageMovesConversionHandoversPaced: 250 per-Service instances convert (§5) while
// KeepalivedMastership names, for each, a node other than its top (its top was down,
// or preempt is off), so the shared routers are staged for that node and each
// conversion ends in a handover. Still one router converts at a time, a router held
// back from its handover keeping the conversion's turn, and no node takes part in a
// handover while another of its handovers is in flight (here for three writes: the
// new top slow to preempt, while the next router is ready).
func TestStageMovesConversionHandoversPaced(t *testing.T) {
	g, services, nodes, vips := perServiceGroup(t, 250, 250)
	s := &clockStepper{now: time.Unix(1e9, 0)}
	masters := map[string]string{}
	for i := range g.Status.Instances {
		in := &g.Status.Instances[i]
		other := "a"
		if topOf(&g.Status, in) == "a" {
			other = "b"
		}
		masters[in.Key] = other
	}
	handovers := 0
	slow := map[string]int{}
	inFlight := map[string][2]string{}
	for w := 0; ; w++ {
		prev := g.Status.DeepCopy()
		full, res := s.step(g, services, nodes, masters)
		if err := checkStep(prev, &g.Status, vips); err != nil {
			t.Fatalf("write %d: %v", w, err)
		}
		perService := map[netip.Addr]bool{}
		for _, in := range g.Status.Instances {
			if !strings.HasPrefix(in.Key, "@") {
				for _, a := range parseVIPs(in.VIPs) {
					perService[a] = true
				}
			}
		}
		var converting []string
		for _, in := range g.Status.Instances {
			if strings.HasPrefix(in.Key, "@") && slices.ContainsFunc(parseVIPs(in.VIPs), func(a netip.Addr) bool { return perService[a] }) {
				converting = append(converting, in.Key)
			}
		}
		if len(converting) > 1 {
			t.Fatalf("write %d: %d routers converting at once: %v", w, len(converting), converting)
		}
		// The nodes of the handovers in flight (KeepalivedMastership does not name
		// the new top yet), then those of this write's.
		busy := map[string]string{}
		for k, nodes := range inFlight {
			if masters[k] == nodes[1] {
				delete(inFlight, k)
				continue
			}
			busy[nodes[0]], busy[nodes[1]] = k, k
		}
		for k, holder := range handedOver(prev, &g.Status, full) {
			handovers++
			top := topOf(&g.Status, instanceByKey(&g.Status, k))
			for _, n := range []string{holder, top} {
				if other, dup := busy[n]; dup {
					t.Fatalf("write %d: node %s in two handovers, %s and %s", w, n, other, k)
				}
				busy[n] = k
			}
			inFlight[k] = [2]string{holder, top}
		}
		if !res.pending {
			if !reflect.DeepEqual(g.Status.Instances, full) {
				t.Fatal("the last write is not the plan")
			}
			t.Logf("converted in %d writes, %d of them handovers", w+1, handovers)
			break
		}
		if w > 30 {
			t.Fatalf("not converted after %d writes", w+1)
		}
		// vrrpd: a router's master is its top in the status at once, but a
		// router handed over takes three writes to name its new top (the joining
		// top slow to preempt); the per-Service instances keep their masters.
		for k, n := range statusTops(&g.Status) {
			if !strings.HasPrefix(k, "@") || masters[k] == n {
				delete(slow, k)
				continue
			}
			if _, staged := masters[k]; staged && slow[k] < 3 {
				slow[k]++
				continue
			}
			masters[k] = n
			delete(slow, k)
		}
		s.now = s.now.Add(300 * time.Millisecond)
	}
	if handovers == 0 {
		t.Fatal("no conversion ended in a handover")
	}
}
