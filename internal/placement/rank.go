package placement

import (
	"cmp"
	"slices"
)

// The priorities used for members. MasterPriority is the first-ranked
// node's; LowestPriority is the floor for very large groups.
const (
	MasterPriority = 254
	LowestPriority = 1
)

// TopPriorities are the priorities of the first ranks (see priorityAt).
var TopPriorities = [...]uint8{MasterPriority, 204, 79, 29}

// weight is the rendezvous weight of (key, node).
func weight(key, node string) uint64 {
	return weightFrom(keyState(key), node)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// keyState is the FNV-1a state after key and the zero separator byte: the
// part of weight that does not depend on the node, computed once per key by
// callers that weigh many nodes.
func keyState(key string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= fnvPrime
	}
	return h * fnvPrime // the zero separator byte: h ^= 0 is a no-op
}

// weightFrom finishes weight from keyState(key).
func weightFrom(h uint64, node string) uint64 {
	for i := 0; i < len(node); i++ {
		h ^= uint64(node[i])
		h *= fnvPrime
	}
	// SplitMix64 finalizer: FNV-1a alone mixes its last bytes poorly into
	// the high bits, and keys often differ only at the end ("ns/svc-7").
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// order returns the indexes of nodes, best first, for key.
func order(key string, nodes []string) []int {
	w := make([]uint64, len(nodes))
	idx := make([]int, len(nodes))
	ks := keyState(key)
	for i, n := range nodes {
		w[i] = weightFrom(ks, n)
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(w[b], w[a]); c != 0 {
			return c
		}
		return cmp.Compare(nodes[a], nodes[b])
	})
	return idx
}

// Rank returns the nodes in key's order of preference, best first.
func Rank(key string, nodes []string) []string {
	out := make([]string, len(nodes))
	for i, j := range order(key, nodes) {
		out[i] = nodes[j]
	}
	return out
}

// priorityAt is the priority of the node ranked r (0 is first) among n.
//
// The first ranks get TopPriorities, far apart, so that backups racing for
// a lost master differ in Skew_Time by much more than timer lateness and the
// time a node takes to hear the winner's first advertisement (doc.go). The
// others, and every rank whose n-r is higher, get n-r: the least that keeps
// the n priorities distinct (the max of two decreasing sequences decreases),
// and never below 1 while n <= 254. A larger group cannot have distinct
// priorities; it keeps the plain countdown and ties only in its tail.
func priorityAt(r, n int) uint8 {
	if n > MasterPriority-LowestPriority+1 {
		if r >= MasterPriority-LowestPriority {
			return LowestPriority
		}
		return uint8(MasterPriority - r)
	}
	top := 0
	if r < len(TopPriorities) {
		top = int(TopPriorities[r])
	}
	return uint8(max(top, n-r))
}

// Priorities returns key's priority on each node, in the order of nodes.
// nodes should hold distinct names; a repeated name gets its own priority
// at each position, as if it were another node.
func Priorities(key string, nodes []string) []uint8 {
	return fromOrder(order(key, nodes))
}

// Order returns the indexes of nodes in key's order of preference, best
// first: the order Priorities and Rank follow.
func Order(key string, nodes []string) []int {
	return order(key, nodes)
}

// Top returns the indexes of the first k nodes of Order(key, nodes) (all of
// them when k >= len(nodes)), without ranking the rest: a partial selection,
// O(len(nodes)*k), for callers that only need the first ranks of many keys.
func Top(key string, nodes []string, k int) []int {
	k = max(0, min(k, len(nodes)))
	best := make([]int, 0, k)
	bw := make([]uint64, 0, k)
	ks := keyState(key)
	for i, n := range nodes {
		w := weightFrom(ks, n)
		// Position of node i among the best so far: after every better one.
		p := len(best)
		for p > 0 && (bw[p-1] < w || bw[p-1] == w && nodes[best[p-1]] > n) {
			p--
		}
		if p >= k {
			continue
		}
		if len(best) < k {
			best = append(best, 0)
			bw = append(bw, 0)
		}
		copy(best[p+1:], best[p:len(best)-1])
		copy(bw[p+1:], bw[p:len(bw)-1])
		best[p], bw[p] = i, w
	}
	return best
}

// PrioritiesFromOrder returns the priorities, in the order of the nodes the
// indexes point into, of the order idx (best first; a permutation of
// 0..len(idx)-1): what Priorities gives for its own order, for callers that
// build an order of their own (internal/sharing's shared routers).
func PrioritiesFromOrder(idx []int) []uint8 {
	return fromOrder(idx)
}

func fromOrder(idx []int) []uint8 {
	out := make([]uint8, len(idx))
	for r, j := range idx {
		out[j] = priorityAt(r, len(idx))
	}
	return out
}

// Master returns the node key ranks first, or "" when nodes is empty.
func Master(key string, nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	return nodes[order(key, nodes)[0]]
}

// PlaceService returns the priorities (in the order of nodes) of each of the
// sibling keys of one Service with spreadvips, placed by OrderService.
func PlaceService(keys []string, nodes []string) map[string][]uint8 {
	orders := OrderService(keys, nodes)
	out := make(map[string][]uint8, len(orders))
	for k, idx := range orders {
		out[k] = fromOrder(idx)
	}
	return out
}

// OrderService returns the order (indexes into nodes, best first) of each of
// the sibling keys of one Service with spreadvips. Siblings are placed in
// sorted key order; each takes as master its best-ranked node among those
// that are master of the fewest siblings so far, so with len(nodes) >=
// len(keys) every sibling has a different master, and otherwise masters
// differ by at most one sibling per node. Below the master, each sibling
// keeps its own rendezvous order. Duplicate keys are placed once.
func OrderService(keys []string, nodes []string) map[string][]int {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)

	out := make(map[string][]int, len(sorted))
	masters := make([]int, len(nodes)) // siblings mastered per node index
	for _, k := range sorted {
		idx := order(k, nodes)
		if len(idx) == 0 {
			out[k] = []int{}
			continue
		}
		best := 0
		for r := 1; r < len(idx); r++ {
			if masters[idx[r]] < masters[idx[best]] {
				best = r
			}
		}
		masters[idx[best]]++
		// Move the chosen master to the front, keeping the others' order.
		m := idx[best]
		copy(idx[1:best+1], idx[:best])
		idx[0] = m
		out[k] = idx
	}
	return out
}

// CheckedFloor is the priority every member of a health-checked instance
// stays above (HealthChecked): half of MasterPriority, so that vrrpd can
// lower every member by the same amount when its check fails and still
// leave each failing node below every passing one.
const CheckedFloor = MasterPriority / 2

// CheckedTopPriorities are the first ranks' priorities of a health-checked
// instance: TopPriorities' first gap (50, as for any instance: the start
// race), then as wide as the band 128..254 leaves room for.
var CheckedTopPriorities = [...]uint8{MasterPriority, 204, 166, 141}

// HealthChecked maps an instance's priorities (PriorityNotMember, 0, for a
// node outside it) into CheckedFloor+1..MasterPriority, keeping their order.
//
// Why: a node whose health check fails (externalTrafficPolicy: Local without
// a local endpoint) must rank below every node whose check passes, and the
// failing nodes must still differ, or at a master's goodbye they take over
// after the same Skew_Time and both answer until one yields (RFC 5798 breaks
// the tie by address, a moment later). vrrpd lowers every member by the
// same amount, 1 minus the lowest member's priority (groupsource): the
// lowest failing member lands on 1 and every failing one stays below every
// passing one exactly when all members are above half of the highest. The
// band holds 127 distinct priorities; a larger instance keeps its
// priorities as they are (vrrpd then falls back to one failed priority, 1).
func HealthChecked(prios []uint8) []uint8 {
	idx := make([]int, 0, len(prios))
	for i, p := range prios {
		if p != 0 {
			idx = append(idx, i)
		}
	}
	n := len(idx)
	if n > MasterPriority-CheckedFloor {
		return slices.Clone(prios)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(prios[b], prios[a]) })
	out := make([]uint8, len(prios))
	for r, j := range idx {
		top := 0
		if r < len(CheckedTopPriorities) {
			top = int(CheckedTopPriorities[r])
		}
		out[j] = uint8(max(top, CheckedFloor+n-r))
	}
	return out
}

// CheckWeight is how much vrrpd lowers a member's priority while the
// instance's health check fails on its node: 1 minus the lowest member
// priority in prios, when that keeps every failing member below every
// passing one (HealthChecked's band; also a migration's shadow priorities
// of a small group). ok is false when no shift can (priorities from before
// HealthChecked, or a group past its band): the caller then uses a weight
// that takes every failing member to 1, where they tie.
func CheckWeight(prios []uint8) (weight int, ok bool) {
	lo, hi := 0, 0
	for _, p := range prios {
		if p == 0 {
			continue
		}
		if lo == 0 || int(p) < lo {
			lo = int(p)
		}
		hi = max(hi, int(p))
	}
	// hi+weight < lo with weight = 1-lo.
	if lo == 0 || hi+1-lo >= lo {
		return 0, false
	}
	return 1 - lo, true
}
