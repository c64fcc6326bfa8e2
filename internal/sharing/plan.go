package sharing

import (
	"cmp"
	"hash/fnv"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/placement"
)

// DefaultBudget is the routers a class of one group may use by default: a
// quarter of a segment's 255 router IDs, so four large groups share a segment
// with IDs left over for Local Services and classes of their own.
const DefaultBudget = 64

// RouterKeyPrefix starts every router key. It is not in a namespace name, so
// a router key never equals an instance key ("ns/name", "ns/name/ip").
const RouterKeyPrefix = "@"

// Service is one Service of the group as sharing sees it.
type Service struct {
	// Key is "namespace/name".
	Key string
	// Class is its sharing class (ClassOf).
	Class string
	// VIPs are the addresses granted to it, of either family.
	VIPs []netip.Addr
	// Spread is spreadvips: each VIP is a member of its own, key
	// "namespace/name/ip", ranked on its own (placement.OrderService).
	Spread bool
	// Anchor is, for a Service that shares an address with others
	// (allow-shared-ip), the member key of the one granted it first (the
	// vetter knows it from the status): the members with common addresses
	// follow its vector, so a newcomer to the set moves nobody. Empty, or a
	// key outside the set, leaves the choice to Plan: the member whose key
	// sorts first.
	Anchor string
}

// Router is one shared virtual router.
type Router struct {
	// Key is stable for the router's life: RouterKeyPrefix, the class, "/",
	// then the exact ranks' node names joined by "," or "#" and the bucket.
	Key   string
	Class string
	// Exact are the nodes of the exact ranks, best first; empty for a bucket.
	Exact []string
	// Priorities are each node's priority, in the order of the nodes given
	// to Plan: the exact ranks first, then the router's own rendezvous order
	// of the rest, with placement's priorities (254, 204, 79, 29, ...).
	Priorities []uint8
	// VIPs are every member's addresses, sorted, without duplicates.
	VIPs []netip.Addr
	// Members are the member keys, sorted.
	Members []string
}

// Result is a group's shared routers.
type Result struct {
	// ExactRanks is the depth the routers were made with (ExactRanks).
	ExactRanks int
	// Routers are sorted by key; each has at least one member.
	Routers []Router
	// RouterOf maps each member key to its router's key.
	RouterOf map[string]string
}

// ExactRanks is how many ranks of a member's vector a router keeps exact in
// a group of n nodes with the given budget (<= 0: DefaultBudget): 2 while the
// (first, second) pairs fit, n(n-1) <= budget; 1 while the nodes do; 0 (hash
// buckets) beyond, and for a group without nodes. Never more than n. It
// depends on n and the budget only, so no Service changes it.
func ExactRanks(n, budget int) int {
	if budget <= 0 {
		budget = DefaultBudget
	}
	switch {
	case n == 0:
		return 0
	case n*(n-1) <= budget:
		return min(2, n)
	case n <= budget:
		return 1
	}
	return 0
}

// member is one placed unit: a Service, or one VIP of a spreadvips Service.
type member struct {
	key   string
	class string
	vips  []netip.Addr
	// anchor is the key whose vector the member follows: its own, or that of
	// its address-sharing set's anchor; hint is Service.Anchor.
	anchor, hint string
}

// Plan returns the shared routers of a group: nodes are the member nodes'
// names in the order of the status (the order of every Priorities), services
// the group's Services with their granted addresses. budget <= 0 means
// DefaultBudget.
//
// Members that list a common address (allow-shared-ip) follow the vector of
// one of them (Service.Anchor, else the first in key order), so one address
// is never in two routers.
// A Service without addresses is not a member; invalid addresses are
// skipped, and of two Services with one key the first is taken.
func Plan(nodes []string, services []Service, budget int) Result {
	return plan(nodes, services, budget, func(key string, exact []int) []uint8 { return priorities(key, exact, nodes) })
}

// plan is Plan with each new router's priorities from prio (PlanCached).
func plan(nodes []string, services []Service, budget int, prio func(key string, exact []int) []uint8) Result {
	if budget <= 0 {
		budget = DefaultBudget
	}
	depth := ExactRanks(len(nodes), budget)
	members, services := explode(services)
	anchorSets(members)

	res := Result{ExactRanks: depth, RouterOf: make(map[string]string, len(members))}
	// exact: each anchor's exact ranks (node indexes). The spreadvips
	// siblings' come from OrderService, which spreads their masters, the
	// others' from their own rendezvous order.
	exact := map[string][]int{}
	for _, s := range services {
		if !s.Spread || depth == 0 || len(s.VIPs) == 0 {
			continue
		}
		keys := make([]string, len(s.VIPs))
		for i, a := range s.VIPs {
			keys[i] = siblingKey(s.Key, a)
		}
		for k, idx := range placement.OrderService(keys, nodes) {
			exact[k] = idx[:depth]
		}
	}

	byKey := map[string]*Router{}
	for _, m := range members {
		var idx []int
		if depth > 0 {
			var ok bool
			if idx, ok = exact[m.anchor]; !ok {
				idx = placement.Top(m.anchor, nodes, depth)
				exact[m.anchor] = idx
			}
		}
		rk := routerKey(m, nodes, idx, budget)
		r := byKey[rk]
		if r == nil {
			r = &Router{Key: rk, Class: m.class, Priorities: prio(rk, idx)}
			for _, j := range idx {
				r.Exact = append(r.Exact, nodes[j])
			}
			byKey[rk] = r
		}
		r.VIPs = append(r.VIPs, m.vips...)
		r.Members = append(r.Members, m.key)
		res.RouterOf[m.key] = rk
	}
	res.Routers = make([]Router, 0, len(byKey))
	for _, r := range byKey {
		slices.SortFunc(r.VIPs, netip.Addr.Compare)
		r.VIPs = slices.Compact(r.VIPs)
		slices.Sort(r.Members)
		res.Routers = append(res.Routers, *r)
	}
	slices.SortFunc(res.Routers, func(a, b Router) int { return cmp.Compare(a.Key, b.Key) })
	return res
}

// explode turns Services into members, sorted by key, and returns the
// Services it took (one per key, the first).
func explode(services []Service) ([]member, []Service) {
	seen := map[string]bool{}
	var out []member
	var taken []Service
	for _, s := range services {
		vips := slices.DeleteFunc(slices.Clone(s.VIPs), func(a netip.Addr) bool { return !a.IsValid() })
		if seen[s.Key] || len(vips) == 0 {
			continue
		}
		seen[s.Key] = true
		s.VIPs = vips
		taken = append(taken, s)
		if s.Spread {
			for _, a := range vips {
				out = append(out, member{key: siblingKey(s.Key, a), class: s.Class, vips: []netip.Addr{a}, hint: s.Anchor})
			}
			continue
		}
		out = append(out, member{key: s.Key, class: s.Class, vips: vips, hint: s.Anchor})
	}
	slices.SortFunc(out, func(a, b member) int { return cmp.Compare(a.key, b.key) })
	// A spreadvips sibling "ns/a/ip" can equal a Service key only if a
	// namespace were named "ns/a": not a valid name, but keep one.
	return slices.CompactFunc(out, func(a, b member) bool { return a.key == b.key }), taken
}

func siblingKey(service string, a netip.Addr) string {
	return service + "/" + a.String()
}

// anchorSets sets each member's anchor: itself, or for a set of members
// connected through common addresses, one member of the set: the first in
// key order of those a member names as its hint, or without such a hint the
// first member of the set in key order (ms is in key order). Members of
// different classes that share an address are joined too (the anchor's class
// wins): the address can have one holder only.
func anchorSets(ms []member) {
	parent := make([]int, len(ms))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	first := map[netip.Addr]int{}
	shared := false
	for i, m := range ms {
		for _, a := range m.vips {
			j, ok := first[a]
			if !ok {
				first[a] = i
				continue
			}
			shared = true
			// The lower index (the key sorting first) is the root.
			if ri, rj := find(i), find(j); ri < rj {
				parent[rj] = ri
			} else if rj < ri {
				parent[ri] = rj
			}
		}
	}
	anchor := make([]int, len(ms)) // per root: the anchor's index
	for i := range ms {
		anchor[i] = i
	}
	if shared {
		index := make(map[string]int, len(ms))
		for i, m := range ms {
			index[m.key] = i
		}
		// A named anchor in the member's own set wins over the root; of
		// several, the one sorting first.
		named := map[int]int{}
		for i, m := range ms {
			j, ok := index[m.hint]
			if !ok || m.hint == "" || find(j) != find(i) {
				continue
			}
			r := find(i)
			if cur, ok := named[r]; !ok || j < cur {
				named[r] = j
			}
		}
		for r, j := range named {
			anchor[r] = j
		}
	}
	for i := range ms {
		a := anchor[find(i)]
		ms[i].anchor = ms[a].key
		ms[i].class = ms[a].class
	}
}

// routerKey is the key of m's router, whose exact ranks are the nodes idx
// points to (none: m's bucket).
func routerKey(m member, nodes []string, idx []int, budget int) string {
	var b strings.Builder
	b.WriteString(RouterKeyPrefix)
	b.WriteString(m.class)
	b.WriteByte('/')
	if len(idx) == 0 {
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(bucket(m.anchor, budget)))
		return b.String()
	}
	for i, j := range idx {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(nodes[j])
	}
	return b.String()
}

// bucket is key's bucket among n: a fixed hash (FNV-1a, then SplitMix64's
// finalizer so the low bits, which the modulus keeps, depend on every byte),
// so the same key lands in the same bucket in every process.
func bucket(key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(n))
}

// priorities are a router's priorities in the order of nodes: its exact
// ranks (exact, node indexes) first, then the other nodes in the router
// key's rendezvous order.
func priorities(key string, exact []int, nodes []string) []uint8 {
	idx := placement.Order(key, nodes)
	if len(exact) > 0 {
		rest := slices.DeleteFunc(idx, func(i int) bool { return slices.Contains(exact, i) })
		idx = append(slices.Clone(exact), rest...)
	}
	return placement.PrioritiesFromOrder(idx)
}
