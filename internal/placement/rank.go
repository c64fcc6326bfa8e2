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
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime
	}
	h *= prime // the zero separator byte: h ^= 0 is a no-op
	for i := 0; i < len(node); i++ {
		h ^= uint64(node[i])
		h *= prime
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
	for i, n := range nodes {
		w[i] = weight(key, n)
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
// sibling keys of one Service with spreadvips. Siblings are placed in sorted
// key order; each takes as master its best-ranked node among those that are
// master of the fewest siblings so far, so with len(nodes) >= len(keys) every
// sibling has a different master, and otherwise masters differ by at most one
// sibling per node. Below the master, each sibling keeps its own rendezvous
// order. Duplicate keys are placed once.
func PlaceService(keys []string, nodes []string) map[string][]uint8 {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)

	out := make(map[string][]uint8, len(sorted))
	masters := make([]int, len(nodes)) // siblings mastered per node index
	for _, k := range sorted {
		idx := order(k, nodes)
		if len(idx) == 0 {
			out[k] = []uint8{}
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
		out[k] = fromOrder(idx)
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
