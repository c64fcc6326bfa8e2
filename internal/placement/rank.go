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
