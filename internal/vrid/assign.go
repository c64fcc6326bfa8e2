package vrid

import (
	"maps"
	"slices"
)

// The range of VRRP virtual router IDs (RFC 5798 section 5.2.3).
const (
	MinID = 1
	MaxID = 255
)

// Result is the outcome of Assign.
type Result struct {
	// IDs maps every assigned key to its router ID; no two keys share one.
	IDs map[string]int
	// LeftOut lists, sorted, the keys that got no ID because none was free.
	LeftOut []string
	// Renumbered lists, sorted, the keys that had an ID in current but got
	// a different one (their old ID became reserved or was invalid).
	Renumbered []string
}

// Assign gives a router ID to each key. current holds the assignments
// published so far (entries for keys no longer present are ignored and
// their IDs freed). reserved reports IDs that must not be used; nil means
// none. Duplicate keys are treated as one.
//
// An entry of current is kept when its ID is in 1..255, not reserved, and
// not already kept for a key sorting earlier (a status edited by hand could
// hold a duplicate; the first key in sorted order keeps the ID).
func Assign(keys []string, current map[string]int, reserved func(int) bool) Result {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)

	var taken [MaxID + 1]bool
	usable := func(id int) bool {
		return id >= MinID && id <= MaxID && !taken[id] && (reserved == nil || !reserved(id))
	}

	res := Result{IDs: make(map[string]int, len(sorted))}
	var pending []string
	for _, k := range sorted {
		id, had := current[k]
		if had && usable(id) {
			taken[id] = true
			res.IDs[k] = id
			continue
		}
		pending = append(pending, k)
	}

	next := MinID
	for _, k := range pending {
		for next <= MaxID && !usable(next) {
			next++
		}
		if next > MaxID {
			res.LeftOut = append(res.LeftOut, k)
			continue
		}
		taken[next] = true
		res.IDs[k] = next
		if old, had := current[k]; had && old != next {
			res.Renumbered = append(res.Renumbered, k)
		}
		next++
	}
	return res
}

// Free returns how many IDs in 1..255 are neither assigned in ids nor
// reserved, so the caller can warn before they run out.
func Free(ids map[string]int, reserved func(int) bool) int {
	var used [MaxID + 1]bool
	for id := range maps.Values(ids) {
		if id >= MinID && id <= MaxID {
			used[id] = true
		}
	}
	n := 0
	for id := MinID; id <= MaxID; id++ {
		if !used[id] && (reserved == nil || !reserved(id)) {
			n++
		}
	}
	return n
}
