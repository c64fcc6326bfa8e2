package sharing

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/placement"
)

func nodesN(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("worker-%03d", i)
	}
	return out
}

// addr4 is the i-th address of 10.0.0.0/8 from 10.0.1.0 on.
func addr4(i int) netip.Addr {
	i += 256
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

// servicesN is n Services of the default class with one IPv4 address each,
// spread over 10 namespaces.
func servicesN(n int) []Service {
	out := make([]Service, n)
	for i := range out {
		out[i] = Service{Key: fmt.Sprintf("ns-%d/svc-%d", i%10, i), Class: DefaultClass, VIPs: []netip.Addr{addr4(i)}}
	}
	return out
}

func routerByKey(res Result, key string) *Router {
	i, ok := slices.BinarySearchFunc(res.Routers, key, func(r Router, k string) int { return strings.Compare(r.Key, k) })
	if !ok {
		return nil
	}
	return &res.Routers[i]
}

// masterOf is the node with priority 254 in r.
func masterOf(r *Router, nodes []string) string {
	i := slices.Index(r.Priorities, placement.MasterPriority)
	if i < 0 {
		return ""
	}
	return nodes[i]
}

// checkPlan asserts what every plan must hold: every member in exactly one
// router, routers sorted and non-empty, priorities valid (one per node, 1..254,
// distinct, the exact ranks' nodes on top in order), and every VIP in one
// router only.
func checkPlan(t *testing.T, nodes []string, services []Service, res Result) {
	t.Helper()
	if !slices.IsSortedFunc(res.Routers, func(a, b Router) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatal("routers not sorted by key")
	}
	seenMember := map[string]string{}
	seenVIP := map[netip.Addr]string{}
	for _, r := range res.Routers {
		if len(r.Members) == 0 || len(r.VIPs) == 0 {
			t.Fatalf("router %s is empty", r.Key)
		}
		if len(r.Priorities) != len(nodes) {
			t.Fatalf("router %s: %d priorities for %d nodes", r.Key, len(r.Priorities), len(nodes))
		}
		distinct := map[uint8]bool{}
		for _, p := range r.Priorities {
			if p < 1 || p > 254 || distinct[p] {
				t.Fatalf("router %s: priorities %v not distinct in 1..254", r.Key, r.Priorities)
			}
			distinct[p] = true
		}
		for rank, name := range r.Exact {
			if got, want := r.Priorities[slices.Index(nodes, name)], placement.TopPriorities[rank]; got != want {
				t.Fatalf("router %s: exact rank %d (%s) has priority %d, want %d", r.Key, rank, name, got, want)
			}
		}
		for _, m := range r.Members {
			if other, dup := seenMember[m]; dup {
				t.Fatalf("member %s in routers %s and %s", m, other, r.Key)
			}
			seenMember[m] = r.Key
			if res.RouterOf[m] != r.Key {
				t.Fatalf("RouterOf[%s] = %q, router %s lists it", m, res.RouterOf[m], r.Key)
			}
		}
		for _, a := range r.VIPs {
			if other, dup := seenVIP[a]; dup {
				t.Fatalf("VIP %s in routers %s and %s", a, other, r.Key)
			}
			seenVIP[a] = r.Key
		}
	}
	if len(seenMember) != len(res.RouterOf) {
		t.Fatalf("%d members in routers, %d in RouterOf", len(seenMember), len(res.RouterOf))
	}
	for _, s := range services {
		for _, a := range s.VIPs {
			if _, ok := seenVIP[a]; !ok {
				t.Fatalf("%s's VIP %s is in no router", s.Key, a)
			}
		}
	}
}

func TestExactRanks(t *testing.T) {
	for _, tc := range []struct{ n, budget, want int }{
		{0, 0, 0},
		{1, 0, 1},
		{2, 0, 2},
		{3, 0, 2},
		{8, 0, 2},  // 56 pairs
		{9, 0, 1},  // 72 pairs
		{64, 0, 1}, // 64 nodes
		{65, 0, 0},
		{100, 0, 0},
		{16, 255, 2}, // 240 pairs
		{17, 255, 1},
		{100, 255, 1},
		{256, 255, 0},
		{3, 5, 1},
		{3, 2, 0},
	} {
		if got := ExactRanks(tc.n, tc.budget); got != tc.want {
			t.Errorf("ExactRanks(%d, %d) = %d, want %d", tc.n, tc.budget, got, tc.want)
		}
	}
}

// TestRouterCounts: 2,000 Services need routers that grow with the nodes,
// never more than the depth's bound, and exactly as many as the distinct
// exact ranks placement gives the Services (counted here independently).
func TestRouterCounts(t *testing.T) {
	services := servicesN(2000)
	for _, tc := range []struct{ nodes, budget, depth, max int }{
		{3, 0, 2, 6},
		{16, 0, 1, 16},
		{100, 0, 0, 64},
		{16, 255, 2, 240},
		{100, 255, 1, 100},
	} {
		t.Run(fmt.Sprintf("%dnodes-budget%d", tc.nodes, tc.budget), func(t *testing.T) {
			nodes := nodesN(tc.nodes)
			res := Plan(nodes, services, tc.budget)
			checkPlan(t, nodes, services, res)
			if res.ExactRanks != tc.depth {
				t.Fatalf("depth %d, want %d", res.ExactRanks, tc.depth)
			}
			want := map[string]bool{}
			for _, s := range services {
				if tc.depth == 0 {
					budget := tc.budget
					if budget <= 0 {
						budget = DefaultBudget
					}
					want[fmt.Sprint(bucket(s.Key, budget))] = true
					continue
				}
				want[fmt.Sprint(placement.Rank(s.Key, nodes)[:tc.depth])] = true
			}
			if len(res.Routers) != len(want) || len(res.Routers) > tc.max {
				t.Fatalf("%d routers, want %d distinct exact ranks (at most %d)", len(res.Routers), len(want), tc.max)
			}
			t.Logf("%d nodes, budget %d: %d exact ranks, %d routers for %d Services", tc.nodes, tc.budget, res.ExactRanks, len(res.Routers), len(services))
		})
	}
}

// TestMastersAreRendezvousMasters: with exact ranks, a member's router has its
// rendezvous master on top (and its first backup second with 2 ranks).
func TestMastersAreRendezvousMasters(t *testing.T) {
	services := servicesN(500)
	for _, n := range []int{3, 8, 16} {
		nodes := nodesN(n)
		res := Plan(nodes, services, 0)
		for _, s := range services {
			r := routerByKey(res, res.RouterOf[s.Key])
			rank := placement.Rank(s.Key, nodes)
			if !slices.Equal(r.Exact, rank[:res.ExactRanks]) {
				t.Fatalf("%d nodes: %s in router %s (exact %v), its ranks are %v", n, s.Key, r.Key, r.Exact, rank[:res.ExactRanks])
			}
			if m := masterOf(r, nodes); m != rank[0] {
				t.Fatalf("%d nodes: %s's router has master %s, placement ranks %s first", n, s.Key, m, rank[0])
			}
		}
	}
}

// TestMastersSpreadOverThreeNodes: each of three nodes masters 20-47 % of
// 2,000 addresses (issue 31's bound), as placement spreads them.
func TestMastersSpreadOverThreeNodes(t *testing.T) {
	nodes := nodesN(3)
	res := Plan(nodes, servicesN(2000), 0)
	held := map[string]int{}
	total := 0
	for i := range res.Routers {
		held[masterOf(&res.Routers[i], nodes)] += len(res.Routers[i].VIPs)
		total += len(res.Routers[i].VIPs)
	}
	for _, n := range nodes {
		share := float64(held[n]) / float64(total)
		t.Logf("%s masters %d of %d addresses (%.1f%%)", n, held[n], total, 100*share)
		if share < 0.20 || share > 0.47 {
			t.Errorf("%s masters %.1f%% of the addresses, want 20-47%%", n, 100*share)
		}
	}
}

// moves counts, between two plans, the members whose router changed and
// those whose master changed, and the ideal: the members whose rendezvous
// master (placement.Master) changed.
func moves(services []Service, before, after []string, pb, pa Result) (router, master, ideal int) {
	for _, s := range services {
		rb, ra := routerByKey(pb, pb.RouterOf[s.Key]), routerByKey(pa, pa.RouterOf[s.Key])
		if rb.Key != ra.Key {
			router++
		}
		if masterOf(rb, before) != masterOf(ra, after) {
			master++
		}
		if placement.Master(s.Key, before) != placement.Master(s.Key, after) {
			ideal++
		}
	}
	return router, master, ideal
}

// TestMovementOnJoinAndLeave: when a node joins or leaves, the members whose
// master changes are exactly those whose rendezvous master changes (the ideal
// of rendezvous hashing), and a member changes router only when its exact
// ranks change.
func TestMovementOnJoinAndLeave(t *testing.T) {
	services := servicesN(2000)
	for _, n := range []int{3, 16} {
		nodes := nodesN(n)
		joined := append(slices.Clone(nodes), "worker-new")
		left := slices.Delete(slices.Clone(nodes), 1, 2)
		base := Plan(nodes, services, 0)
		for _, tc := range []struct {
			name  string
			after []string
		}{{"join", joined}, {"leave", left}} {
			t.Run(fmt.Sprintf("%dnodes-%s", n, tc.name), func(t *testing.T) {
				res := Plan(tc.after, services, 0)
				checkPlan(t, tc.after, services, res)
				router, master, ideal := moves(services, nodes, tc.after, base, res)
				if master != ideal {
					t.Errorf("%d members changed master, rendezvous hashing's ideal is %d", master, ideal)
				}
				// A member must change router exactly when its exact ranks
				// change (the depth is the same before and after here).
				if base.ExactRanks != res.ExactRanks {
					t.Fatalf("depth changed %d -> %d", base.ExactRanks, res.ExactRanks)
				}
				wantRouter := 0
				for _, s := range services {
					d := res.ExactRanks
					if !slices.Equal(placement.Rank(s.Key, nodes)[:d], placement.Rank(s.Key, tc.after)[:d]) {
						wantRouter++
					}
				}
				if router != wantRouter {
					t.Errorf("%d members changed router, %d changed exact ranks", router, wantRouter)
				}
				t.Logf("%d nodes, %s: %d of %d members changed master (ideal %d, %.1f%%); %d changed router, %d of them on the node that holds them",
					n, tc.name, master, len(services), ideal, 100*float64(ideal)/float64(len(services)), router, router-master)
			})
		}
	}
}

// TestDepthChangeKeepsMasters: the 9th node of a group takes it from 2 exact
// ranks to 1; members change router, but only those whose rendezvous master
// changed (to the new node) change master: the rest move on their own node.
func TestDepthChangeKeepsMasters(t *testing.T) {
	services := servicesN(2000)
	nodes := nodesN(8)
	more := nodesN(9)
	p8, p9 := Plan(nodes, services, 0), Plan(more, services, 0)
	if p8.ExactRanks != 2 || p9.ExactRanks != 1 {
		t.Fatalf("depths %d, %d; want 2, 1", p8.ExactRanks, p9.ExactRanks)
	}
	router, master, ideal := moves(services, nodes, more, p8, p9)
	if master != ideal {
		t.Fatalf("%d members changed master, rendezvous hashing's ideal is %d", master, ideal)
	}
	t.Logf("8 -> 9 nodes (2 -> 1 exact ranks): %d routers -> %d; %d members changed router, %d changed master (ideal %d)", len(p8.Routers), len(p9.Routers), router, master, ideal)
}

// TestBucketsMoveNoMember: beyond the budget, members sit in hash buckets; a
// node joining or leaving changes the buckets' vectors, never a member's
// router.
func TestBucketsMoveNoMember(t *testing.T) {
	services := servicesN(2000)
	nodes := nodesN(100)
	res := Plan(nodes, services, 0)
	checkPlan(t, nodes, services, res)
	more := append(slices.Clone(nodes), "worker-new")
	res2 := Plan(more, services, 0)
	checkPlan(t, more, services, res2)
	if !reflect.DeepEqual(res.RouterOf, res2.RouterOf) {
		t.Fatal("a join moved members between buckets")
	}
	router, master, _ := moves(services, nodes, more, res, res2)
	masters := map[string]bool{}
	for i := range res.Routers {
		masters[masterOf(&res.Routers[i], nodes)] = true
	}
	t.Logf("100 nodes, buckets: %d routers mastered by %d nodes; a join moves %d members between routers, %d change master", len(res.Routers), len(masters), router, master)
}

// TestStableUnderServiceChanges: adding or removing a Service moves no other
// member and changes no other router's priorities.
func TestStableUnderServiceChanges(t *testing.T) {
	for _, n := range []int{3, 16, 100} {
		nodes := nodesN(n)
		services := servicesN(1000)
		base := Plan(nodes, services, 0)
		added := append(slices.Clone(services), Service{Key: "ns-new/svc", Class: DefaultClass, VIPs: []netip.Addr{addr4(5000)}})
		removed := slices.Delete(slices.Clone(services), 17, 18)
		for name, svcs := range map[string][]Service{"add": added, "remove": removed} {
			res := Plan(nodes, svcs, 0)
			checkPlan(t, nodes, svcs, res)
			for m, rk := range res.RouterOf {
				if old, ok := base.RouterOf[m]; ok && old != rk {
					t.Fatalf("%d nodes, %s: %s moved %s -> %s", n, name, m, old, rk)
				}
			}
			for _, r := range res.Routers {
				if old := routerByKey(base, r.Key); old != nil && !slices.Equal(old.Priorities, r.Priorities) {
					t.Fatalf("%d nodes, %s: router %s changed priorities", n, name, r.Key)
				}
			}
		}
	}
}

// TestDeterministic: the same Services and nodes in any order give the same
// routers, and each node the same priority in each.
func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 16, 100} {
		nodes := nodesN(n)
		services := servicesN(1000)
		services[3].Spread = true
		services[3].VIPs = []netip.Addr{addr4(9000), addr4(9001), addr4(9002)}
		want := Plan(nodes, services, 0)
		for range 5 {
			sh := slices.Clone(services)
			rng.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
			if got := Plan(nodes, sh, 0); !reflect.DeepEqual(got, want) {
				t.Fatalf("%d nodes: Services in another order gave another plan", n)
			}
			shn := slices.Clone(nodes)
			rng.Shuffle(len(shn), func(i, j int) { shn[i], shn[j] = shn[j], shn[i] })
			got := Plan(shn, services, 0)
			if !reflect.DeepEqual(got.RouterOf, want.RouterOf) {
				t.Fatalf("%d nodes: nodes in another order gave other routers", n)
			}
			for i, r := range got.Routers {
				for j, name := range shn {
					if r.Priorities[j] != want.Routers[i].Priorities[slices.Index(nodes, name)] {
						t.Fatalf("%d nodes: router %s gives %s another priority with the nodes in another order", n, r.Key, name)
					}
				}
			}
		}
	}
}

// TestSpreadVIPsRankedOnTheirOwn: a spreadvips Service's VIPs are members of
// their own whose masters differ (placement.OrderService), each in the router
// of its own exact ranks.
func TestSpreadVIPsRankedOnTheirOwn(t *testing.T) {
	nodes := nodesN(3)
	// Addresses no other Service has (a common one would join their routers).
	spread := Service{Key: "web/front", Class: DefaultClass, Spread: true, VIPs: []netip.Addr{addr4(9001), addr4(9002), addr4(9003)}}
	services := append(servicesN(100), spread)
	res := Plan(nodes, services, 0)
	checkPlan(t, nodes, services, res)
	keys := []string{"web/front/10.0.36.41", "web/front/10.0.36.42", "web/front/10.0.36.43"}
	orders := placement.OrderService(keys, nodes)
	masters := map[string]bool{}
	for _, k := range keys {
		rk, ok := res.RouterOf[k]
		if !ok {
			t.Fatalf("sibling %s is no member", k)
		}
		r := routerByKey(res, rk)
		want := []string{nodes[orders[k][0]], nodes[orders[k][1]]}
		if !slices.Equal(r.Exact, want) {
			t.Fatalf("%s in %s, its exact ranks are %v", k, rk, want)
		}
		masters[masterOf(r, nodes)] = true
	}
	if len(masters) != 3 {
		t.Fatalf("three VIPs on three nodes have %d distinct masters", len(masters))
	}
	if _, ok := res.RouterOf["web/front"]; ok {
		t.Fatal("a spreadvips Service is a member itself")
	}
}

// TestSharedAddressOneRouter: Services listing a common address
// (allow-shared-ip) are in one router, whatever their own ranks.
func TestSharedAddressOneRouter(t *testing.T) {
	nodes := nodesN(16)
	shared := addr4(7777)
	services := servicesN(200)
	services[10].VIPs = append(services[10].VIPs, shared)
	services[150].VIPs = append(services[150].VIPs, shared)
	services[151].VIPs = append(services[151].VIPs, services[150].VIPs[0]) // chained
	res := Plan(nodes, services, 0)
	checkPlan(t, nodes, services, res)
	k := res.RouterOf[services[10].Key]
	for _, i := range []int{150, 151} {
		if res.RouterOf[services[i].Key] != k {
			t.Fatalf("%s in %s, %s in %s: they share an address", services[i].Key, res.RouterOf[services[i].Key], services[10].Key, k)
		}
	}
}

// TestSharedAddressNewcomerMovesNobody: with the first holder named as
// Anchor, a Service joining an address-sharing set (even one whose key sorts
// first) moves none of its members.
func TestSharedAddressNewcomerMovesNobody(t *testing.T) {
	nodes := nodesN(16)
	shared := addr4(8888)
	services := servicesN(300)
	i, j := 120, 250
	services[i].VIPs = append(services[i].VIPs, shared)
	services[j].VIPs = append(services[j].VIPs, shared)
	services[i].Anchor, services[j].Anchor = services[i].Key, services[i].Key
	base := Plan(nodes, services, 0)
	checkPlan(t, nodes, services, base)
	if base.RouterOf[services[j].Key] != base.RouterOf[services[i].Key] {
		t.Fatal("the set is split")
	}
	if !slices.Equal(routerByKey(base, base.RouterOf[services[i].Key]).Exact, placement.Rank(services[i].Key, nodes)[:1]) {
		t.Fatal("the set does not follow its anchor's vector")
	}
	newcomer := Service{Key: "aaa/first", Class: DefaultClass, VIPs: []netip.Addr{shared}, Anchor: services[i].Key}
	more := append(slices.Clone(services), newcomer)
	res := Plan(nodes, more, 0)
	checkPlan(t, nodes, more, res)
	for m, rk := range base.RouterOf {
		if res.RouterOf[m] != rk {
			t.Fatalf("%s moved %s -> %s when %s joined its set", m, rk, res.RouterOf[m], newcomer.Key)
		}
	}
	if res.RouterOf[newcomer.Key] != base.RouterOf[services[i].Key] {
		t.Fatal("the newcomer is not in its set's router")
	}
}

// TestBadInput: invalid addresses are skipped, a Service without valid ones
// is no member, a repeated key is taken once, and no nodes gives buckets
// without priorities rather than a panic.
func TestBadInput(t *testing.T) {
	services := []Service{
		{Key: "a/x", Class: DefaultClass, VIPs: []netip.Addr{{}, addr4(1)}},
		{Key: "a/y", Class: DefaultClass, VIPs: []netip.Addr{{}}},
		{Key: "a/x", Class: DefaultClass, VIPs: []netip.Addr{addr4(2)}},
		{Key: "a/z", Class: DefaultClass, Spread: true, VIPs: []netip.Addr{{}, addr4(3), addr4(4)}},
	}
	for _, n := range []int{0, 1, 3} {
		nodes := nodesN(n)
		res := Plan(nodes, services, 0)
		want := map[string]bool{"a/x": true, "a/z/10.0.1.3": true, "a/z/10.0.1.4": true}
		if len(res.RouterOf) != len(want) {
			t.Fatalf("%d nodes: members %v, want %v", n, res.RouterOf, want)
		}
		for m := range want {
			if _, ok := res.RouterOf[m]; !ok {
				t.Fatalf("%d nodes: %s is no member", n, m)
			}
		}
		r := routerByKey(res, res.RouterOf["a/x"])
		if !slices.Contains(r.VIPs, addr4(1)) || slices.Contains(r.VIPs, addr4(2)) {
			t.Fatalf("%d nodes: a/x's router has %v: want the first a/x's address only", n, r.VIPs)
		}
		for _, r := range res.Routers {
			if len(r.Priorities) != n {
				t.Fatalf("%d nodes: router %s has %d priorities", n, r.Key, len(r.Priorities))
			}
		}
	}
}

// TestClasses: Services of different classes never share; ClassOf separates
// verbatim settings and health checks and ignores map order.
func TestClasses(t *testing.T) {
	a := ClassOf("ns/a", map[string]string{"garp_master_delay": "5", "advert_int": "2"}, false)
	b := ClassOf("ns/b", map[string]string{"advert_int": "2", "garp_master_delay": "5"}, false)
	if a != b {
		t.Fatalf("equal settings give classes %s and %s", a, b)
	}
	for _, other := range []map[string]string{
		{"garp_master_delay": "5"},
		{"advert_int": "2", "garp_master_delay": "6"},
		{"advert_int": "2garp_master_delay", "": "5"},
	} {
		if c := ClassOf("ns/a", other, false); c == a {
			t.Fatalf("settings %v share class %s with different ones", other, c)
		}
	}
	if ClassOf("ns/a", nil, false) != DefaultClass {
		t.Fatal("no settings is not the default class")
	}
	l1, l2 := ClassOf("ns/a", nil, true), ClassOf("ns/b", nil, true)
	if l1 == l2 || l1 == DefaultClass {
		t.Fatalf("Local Services get classes %s and %s", l1, l2)
	}

	nodes := nodesN(3)
	services := servicesN(300)
	for i := range 100 {
		services[i].Class = a
	}
	services[200].Class, services[201].Class = l1, l2
	res := Plan(nodes, services, 0)
	checkPlan(t, nodes, services, res)
	for _, r := range res.Routers {
		for _, m := range r.Members {
			var s Service
			for _, x := range services {
				if x.Key == m {
					s = x
				}
			}
			if s.Class != r.Class {
				t.Fatalf("%s (class %s) in router %s of class %s", m, s.Class, r.Key, r.Class)
			}
		}
	}
	if r := routerByKey(res, res.RouterOf[services[200].Key]); len(r.Members) != 1 {
		t.Fatalf("a Local Service shares router %s with %v", r.Key, r.Members)
	}
}

func BenchmarkPlan10000x500(b *testing.B) {
	nodes := nodesN(500)
	services := servicesN(10000)
	for _, budget := range []int{0, 500} {
		b.Run(fmt.Sprintf("budget%d", budget), func(b *testing.B) {
			var res Result
			for b.Loop() {
				res = Plan(nodes, services, budget)
			}
			b.ReportMetric(float64(len(res.Routers)), "routers")
		})
	}
}
