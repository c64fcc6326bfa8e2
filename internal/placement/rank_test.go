package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

func nodesN(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("worker-%02d", i)
	}
	return out
}

func keysN(ns string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/svc-%d", ns, i)
	}
	return out
}

// checkPriorities asserts a priority vector is usable: values in 1..254,
// distinct when there are at most 254 nodes, and the top one is 254.
func checkPriorities(t *testing.T, key string, p []uint8) {
	t.Helper()
	seen := map[uint8]bool{}
	top := uint8(0)
	for _, v := range p {
		if v < LowestPriority || v > MasterPriority {
			t.Fatalf("%s: priority %d outside 1..254", key, v)
		}
		if seen[v] && len(p) <= MasterPriority {
			t.Fatalf("%s: priority %d given twice in %v", key, v, p)
		}
		seen[v] = true
		top = max(top, v)
	}
	if len(p) > 0 && top != MasterPriority {
		t.Fatalf("%s: top priority %d, want 254", key, top)
	}
}

func masterOf(p []uint8, nodes []string) string {
	return nodes[slices.Index(p, slices.Max(p))]
}

// TestGolden pins the hash: changing it would move every instance of every
// cluster on upgrade, so it must never change by accident.
func TestGolden(t *testing.T) {
	if w := weight("default/web", "worker-00"); w != goldenWeight {
		t.Fatalf("weight changed: %#x, was %#x", w, uint64(goldenWeight))
	}
	got := Rank("default/web", nodesN(5))
	if strings.Join(got, ",") != goldenRank {
		t.Fatalf("rank changed: %s, was %s", strings.Join(got, ","), goldenRank)
	}
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	nodes := nodesN(12)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, k := range keysN("ns", 100) {
		p := Priorities(k, nodes)
		checkPriorities(t, k, p)
		if !reflect.DeepEqual(p, Priorities(k, nodes)) {
			t.Fatalf("%s: two calls differ", k)
		}
		// Shuffling the node list permutes the vector and nothing else:
		// each (key, node) pair keeps its priority.
		shuffled := slices.Clone(nodes)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		q := Priorities(k, shuffled)
		for i, n := range shuffled {
			if q[i] != p[slices.Index(nodes, n)] {
				t.Fatalf("%s: node %s priority depends on node order", k, n)
			}
		}
		if Master(k, nodes) != masterOf(p, nodes) || Rank(k, nodes)[0] != Master(k, nodes) {
			t.Fatalf("%s: Master, Rank and Priorities disagree", k)
		}
		// Rank order is priority order, each rank at its priority.
		r := Rank(k, nodes)
		for i := range r {
			if p[slices.Index(nodes, r[i])] != priorityAt(i, len(nodes)) {
				t.Fatalf("%s: rank %d not at priorityAt(%d)", k, i, i)
			}
		}
	}
	if Master("ns/a", nil) != "" || len(Priorities("ns/a", nil)) != 0 {
		t.Fatal("no nodes should give no master and no priorities")
	}
}

func TestManyNodesFloorAtOne(t *testing.T) {
	nodes := nodesN(300)
	p := Priorities("ns/big", nodes)
	count := map[uint8]int{}
	for _, v := range p {
		count[v]++
	}
	// 254 nodes get 254..1 ... then the floor: 253 distinct values above 1,
	// and the last 47 nodes share 1 with the 254th.
	if len(count) != 254 || count[1] != 300-253 || count[254] != 1 {
		t.Fatalf("got %d distinct values, %d at 1", len(count), count[1])
	}
	checkPriorities(t, "ns/big", Priorities("ns/big", nodesN(254)))
}

// TestBalance: over 255 keys and 10 nodes each node should master about
// 25.5 instances. A perfect random hash gives a binomial count with
// sd = sqrt(255 * 0.1 * 0.9) = 4.8; we allow 3 sd (25.5 +- 14.4, so 11..39),
// which a random function meets for all 10 nodes with probability ~97%;
// the hash is fixed, so the result is deterministic. Then, over 40
// namespaces (10200 keys), each node's share must be within 4 sd
// (1020 +- 4*30.3 = 899..1141) and a chi-square statistic with 9 degrees of
// freedom below 27.9 (p = 0.001).
func TestBalance(t *testing.T) {
	nodes := nodesN(10)
	count := map[string]int{}
	for _, k := range keysN("default", 255) {
		count[Master(k, nodes)]++
	}
	for _, n := range nodes {
		if c := count[n]; c < 11 || c > 39 {
			t.Errorf("%s masters %d of 255, want 11..39 (all: %v)", n, c, count)
		}
	}
	t.Logf("255 keys: %v", count)

	total := map[string]int{}
	second := map[string]int{}
	for ns := 0; ns < 40; ns++ {
		for _, k := range keysN(fmt.Sprintf("team-%d", ns), 255) {
			r := Rank(k, nodes)
			total[r[0]]++
			second[r[1]]++
		}
	}
	for name, m := range map[string]map[string]int{"master": total, "first backup": second} {
		chi := 0.0
		for _, n := range nodes {
			c := m[n]
			if c < 899 || c > 1141 {
				t.Errorf("%s: %d of 10200 keys on %s, want 899..1141", name, c, n)
			}
			chi += math.Pow(float64(c)-1020, 2) / 1020
		}
		if chi > 27.9 {
			t.Errorf("%s: chi-square %.1f > 27.9: %v", name, chi, m)
		}
		t.Logf("%s over 10200 keys: chi-square %.1f %v", name, chi, m)
	}
}

// TestMinimalMovement removes and adds nodes and checks that exactly the
// instances the rules name change master, and that the relative order of
// the remaining nodes never changes.
func TestMinimalMovement(t *testing.T) {
	nodes := nodesN(10)
	keys := keysN("default", 255)
	before := map[string][]string{}
	for _, k := range keys {
		before[k] = Rank(k, nodes)
	}

	// Leave: worker-03 goes away.
	leaving := "worker-03"
	fewer := slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n == leaving })
	moved, wantMoved := 0, 0
	for _, k := range keys {
		after := Rank(k, fewer)
		if after[0] != before[k][0] {
			moved++
		}
		if before[k][0] == leaving {
			wantMoved++
			if after[0] != before[k][1] {
				t.Fatalf("%s: master %s left; new master %s, want the first backup %s", k, leaving, after[0], before[k][1])
			}
		} else if after[0] != before[k][0] {
			t.Fatalf("%s moved from %s to %s though %s was not its master", k, before[k][0], after[0], leaving)
		}
		filtered := slices.DeleteFunc(slices.Clone(before[k]), func(n string) bool { return n == leaving })
		if !reflect.DeepEqual(after, filtered) {
			t.Fatalf("%s: order of remaining nodes changed: %v -> %v", k, filtered, after)
		}
	}
	if moved != wantMoved || moved == 0 {
		t.Fatalf("leave: %d moved, want %d", moved, wantMoved)
	}
	t.Logf("leave: %d of %d instances moved (all mastered by %s)", moved, len(keys), leaving)

	// Join: worker-10 comes up.
	more := append(slices.Clone(nodes), "worker-10")
	moved = 0
	for _, k := range keys {
		after := Rank(k, more)
		if after[0] != before[k][0] {
			moved++
			if after[0] != "worker-10" {
				t.Fatalf("%s moved to %s, not to the new node", k, after[0])
			}
		}
		filtered := slices.DeleteFunc(slices.Clone(after), func(n string) bool { return n == "worker-10" })
		if !reflect.DeepEqual(filtered, before[k]) {
			t.Fatalf("%s: order of existing nodes changed on join", k)
		}
	}
	// About 1/11 of 255 = 23 should move to the new node.
	if moved < 10 || moved > 40 {
		t.Fatalf("join: %d moved to the new node, want about 23", moved)
	}
	t.Logf("join: %d of %d instances moved to the new node", moved, len(keys))
}

func TestPlaceServiceSpreadsSiblings(t *testing.T) {
	for _, tc := range []struct{ vips, nodes int }{{1, 1}, {2, 2}, {3, 5}, {4, 4}, {8, 10}, {16, 16}, {5, 3}, {12, 5}, {3, 0}} {
		t.Run(fmt.Sprintf("%dvips-%dnodes", tc.vips, tc.nodes), func(t *testing.T) {
			nodes := nodesN(tc.nodes)
			for svc := 0; svc < 50; svc++ {
				var keys []string
				for i := 0; i < tc.vips; i++ {
					keys = append(keys, fmt.Sprintf("ns/svc-%d/10.99.0.%d", svc, 200+i))
				}
				placed := PlaceService(keys, nodes)
				if len(placed) != len(keys) {
					t.Fatalf("placed %d of %d keys", len(placed), len(keys))
				}
				masters := map[string]int{}
				for _, k := range keys {
					p := placed[k]
					if len(p) != tc.nodes {
						t.Fatalf("%s: %d priorities for %d nodes", k, len(p), tc.nodes)
					}
					if tc.nodes == 0 {
						continue
					}
					checkPriorities(t, k, p)
					masters[masterOf(p, nodes)]++
				}
				if tc.nodes == 0 {
					continue
				}
				lo, hi := tc.vips, 0
				for _, n := range nodes {
					lo, hi = min(lo, masters[n]), max(hi, masters[n])
				}
				if hi-lo > 1 {
					t.Fatalf("service %d: masters uneven %v", svc, masters)
				}
				if tc.nodes >= tc.vips && hi > 1 {
					t.Fatalf("service %d: two VIPs share a master with enough nodes: %v", svc, masters)
				}
				// Same input, same output, whatever the key order.
				rev := slices.Clone(keys)
				slices.Reverse(rev)
				if !reflect.DeepEqual(PlaceService(rev, nodes), placed) {
					t.Fatalf("service %d: depends on key order", svc)
				}
			}
		})
	}
	// A lone key is placed exactly as Priorities places it.
	nodes := nodesN(7)
	for _, k := range keysN("ns", 50) {
		if got := PlaceService([]string{k, k}, nodes)[k]; !reflect.DeepEqual(got, Priorities(k, nodes)) {
			t.Fatalf("%s: PlaceService of one key %v != Priorities %v", k, got, Priorities(k, nodes))
		}
	}
}

// TestPlaceServiceKeepsBackupOrder: below the chosen master each sibling's
// nodes keep their rendezvous order.
func TestPlaceServiceKeepsBackupOrder(t *testing.T) {
	nodes := nodesN(6)
	keys := []string{"ns/s/10.99.0.1", "ns/s/10.99.0.2", "ns/s/10.99.0.3", "ns/s/fd00:99::1"}
	placed := PlaceService(keys, nodes)
	for _, k := range keys {
		p := placed[k]
		m := masterOf(p, nodes)
		var byPrio []string
		desc := slices.Sorted(slices.Values(p))
		slices.Reverse(desc)
		for _, v := range desc[1:] {
			byPrio = append(byPrio, nodes[slices.Index(p, v)])
		}
		rest := slices.DeleteFunc(Rank(k, nodes), func(n string) bool { return n == m })
		if !reflect.DeepEqual(byPrio, rest) {
			t.Fatalf("%s: backups %v, want rendezvous order %v", k, byPrio, rest)
		}
	}
}

func BenchmarkPriorities100Nodes(b *testing.B) {
	nodes := nodesN(100)
	for b.Loop() {
		Priorities("default/web", nodes)
	}
}

// BenchmarkGroup255x100 computes and encodes a whole group's priorities.
func BenchmarkGroup255x100(b *testing.B) {
	nodes := nodesN(100)
	keys := keysN("default", 255)
	for b.Loop() {
		for _, k := range keys {
			v1alpha1.EncodePriorities(Priorities(k, nodes))
		}
	}
}

// TestPlaceServiceMovement: placing siblings together costs some stability,
// bounded as follows (with more nodes than VIPs). When a node that masters
// none of a service's VIPs leaves, nothing of that service moves; when it
// masters one, the siblings sorting before that one stay put. When a node
// joins, siblings sorting before the first one that takes the new node stay
// put. The test also reports how many siblings move in all.
func TestPlaceServiceMovement(t *testing.T) {
	nodes := nodesN(10)
	const vips = 3
	movedLeave, movedJoin, total := 0, 0, 0
	for svc := 0; svc < 200; svc++ {
		keys := make([]string, vips)
		for i := range keys {
			keys[i] = fmt.Sprintf("ns/svc-%d/10.99.0.%d", svc, 200+i)
		}
		before := PlaceService(keys, nodes)
		masterBefore := map[string]string{}
		for _, k := range keys {
			masterBefore[k] = masterOf(before[k], nodes)
		}
		total += vips

		for _, leaving := range []string{"worker-00", "worker-05"} {
			fewer := slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n == leaving })
			after := PlaceService(keys, fewer)
			hit := slices.IndexFunc(keys, func(k string) bool { return masterBefore[k] == leaving })
			for i, k := range keys {
				m := masterOf(after[k], fewer)
				if m != masterBefore[k] {
					movedLeave++
					if hit < 0 || i < hit {
						t.Fatalf("svc %d: %s moved %s -> %s when %s (master of sibling %d) left", svc, k, masterBefore[k], m, leaving, hit)
					}
				}
			}
		}

		more := append(slices.Clone(nodes), "worker-new")
		after := PlaceService(keys, more)
		first := slices.IndexFunc(keys, func(k string) bool { return masterOf(after[k], more) == "worker-new" })
		for i, k := range keys {
			if m := masterOf(after[k], more); m != masterBefore[k] {
				movedJoin++
				if first < 0 || i < first {
					t.Fatalf("svc %d: %s moved %s -> %s on join before any sibling took the new node", svc, k, masterBefore[k], m)
				}
			}
		}
	}
	t.Logf("spreadvips, %d VIPs x 200 services over 10 nodes: a leaving node moves %d of %d sibling masters (%.1f%% per leave; ideal 10%%), a joining node %d (%.1f%%; ideal 9.1%%)",
		vips, movedLeave/2, total, 50*float64(movedLeave)/float64(total), movedJoin, 100*float64(movedJoin)/float64(total))
}

// TestPrioritySpacing: the first ranks get TopPriorities, far apart, so that their
// Skew_Times differ by a large part of an advertisement interval; the rest count down by
// one, distinct down to 1 for every group size up to 254, and every priority depends only
// on the rank while the group is small.
func TestPrioritySpacing(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []uint8
	}{
		{1, []uint8{254}},
		{2, []uint8{254, 204}},
		{3, []uint8{254, 204, 79}},
		{4, []uint8{254, 204, 79, 29}},
		{7, []uint8{254, 204, 79, 29, 3, 2, 1}},
		{40, []uint8{254, 204, 79, 37, 36}},
		{100, []uint8{254, 204, 98, 97, 96}},
	} {
		got := make([]uint8, len(tc.want))
		for r := range got {
			got[r] = priorityAt(r, tc.n)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d nodes: priorities by rank %v, want %v", tc.n, got, tc.want)
		}
	}
	for n := 1; n <= MasterPriority; n++ {
		checkPriorities(t, fmt.Sprintf("%d nodes", n), Priorities("ns/web", nodesN(n)))
		if p := priorityAt(n-1, n); n > len(TopPriorities) && p != LowestPriority {
			t.Fatalf("%d nodes: the last rank at %d, want %d", n, p, LowestPriority)
		}
	}
}

func TestTopIsOrderPrefix(t *testing.T) {
	for _, n := range []int{0, 1, 3, 16, 100} {
		nodes := nodesN(n)
		for _, key := range keysN("ns", 50) {
			full := Order(key, nodes)
			for _, k := range []int{-1, 0, 1, 2, 3, n, n + 1} {
				got := Top(key, nodes, k)
				want := full[:max(0, min(k, n))]
				if !slices.Equal(got, want) {
					t.Fatalf("Top(%q, %d nodes, %d) = %v, want %v", key, n, k, got, want)
				}
			}
		}
	}
}

func TestPrioritiesFromOrderMatchesPriorities(t *testing.T) {
	nodes := nodesN(20)
	for _, key := range keysN("ns", 20) {
		if got, want := PrioritiesFromOrder(Order(key, nodes)), Priorities(key, nodes); !slices.Equal(got, want) {
			t.Fatalf("%s: PrioritiesFromOrder(Order) = %v, Priorities = %v", key, got, want)
		}
	}
}

// A health-checked instance's failing members must rank below every passing
// member and stay distinct from each other, for every group size the band
// holds, with nodes left out (priority 0) anywhere.
func TestHealthCheckedFailingNodesStayApart(t *testing.T) {
	for n := 1; n <= 140; n++ {
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("node-%d", i)
		}
		base := Priorities(fmt.Sprintf("ns/svc-%d", n), nodes)
		if n > 3 {
			base[n/2] = 0 // an excluded node
		}
		got := HealthChecked(base)
		members := 0
		for i := range got {
			if (base[i] == 0) != (got[i] == 0) {
				t.Fatalf("n=%d: node %d: member changed: %d -> %d", n, i, base[i], got[i])
			}
			if got[i] != 0 {
				members++
			}
			for j := range got {
				if base[i] != 0 && base[j] != 0 && (base[i] > base[j]) != (got[i] > got[j]) {
					t.Fatalf("n=%d: order of nodes %d, %d changed: %d,%d -> %d,%d", n, i, j, base[i], base[j], got[i], got[j])
				}
			}
		}
		w, ok := CheckWeight(got)
		if members > MasterPriority-CheckedFloor {
			if !slices.Equal(got, base) || ok {
				t.Fatalf("n=%d (%d members, past the band): got %v, weight %d ok %v; want the priorities unchanged and no weight", n, members, got, w, ok)
			}
			continue
		}
		if !ok {
			t.Fatalf("n=%d: no weight for %v", n, got)
		}
		failed := map[int]bool{}
		for i, p := range got {
			if p == 0 {
				continue
			}
			if p <= CheckedFloor {
				t.Fatalf("n=%d: node %d at %d, not above %d", n, i, p, CheckedFloor)
			}
			f := int(p) + w
			if f < 1 || failed[f] {
				t.Fatalf("n=%d: node %d fails to %d (weight %d): below 1 or shared", n, i, f, w)
			}
			failed[f] = true
			for _, q := range got {
				if q != 0 && f >= int(q) {
					t.Fatalf("n=%d: node %d failing at %d is not below passing priority %d", n, i, f, q)
				}
			}
		}
	}
}

func TestCheckWeightNeedsTheBand(t *testing.T) {
	for _, c := range []struct {
		prios []uint8
		w     int
		ok    bool
	}{
		{[]uint8{254, 204, 79}, 0, false}, // an older operator's placement: no shift keeps 254 below 79
		{[]uint8{99, 91, 83}, -82, true},  // a 3-node takeover's shadow: 17, 9, 1
		{[]uint8{0, 254, 0}, -253, true},
		{[]uint8{0, 0}, 0, false},
		{[]uint8{254, 229, 167}, -166, true},
	} {
		w, ok := CheckWeight(c.prios)
		if w != c.w || ok != c.ok {
			t.Errorf("CheckWeight(%v) = %d, %v; want %d, %v", c.prios, w, ok, c.w, c.ok)
		}
	}
}
