package ipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"
)

// addrRange is the inclusive range [first, last] of one family.
type addrRange struct {
	first, last netip.Addr
}

// Pool is a parsed address pool: for each family, sorted, disjoint,
// non-adjacent ranges of allocatable addresses. The zero Pool is empty.
// A Pool is immutable once parsed and safe for concurrent use.
type Pool struct {
	ranges [2][]addrRange // indexed by Family.index()
	// edges are the network and broadcast addresses of the CIDR entries
	// (see cidrEdges), sorted. They stay in ranges (Contains, Size and
	// Allocate count every address of an entry); the operator skips them
	// through IsEdge.
	edges []netip.Addr
}

// EntryError is a bad entry of the pool: which list, its index and its text.
type EntryError struct {
	Field string // "addresses" or "excludedAddresses"
	Index int
	Entry string
	Err   error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("%s[%d] %q: %v", e.Field, e.Index, e.Entry, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// Parse builds a pool from the addresses and excludedAddresses lists of a
// group's addressPool. Each entry is a CIDR, a range "first-last" (spaces
// around the dash allowed) or a single address. The first bad entry is
// returned as an *EntryError.
func Parse(addresses, excluded []string) (*Pool, error) {
	var incl, excl [2][]addrRange
	var edges []netip.Addr
	for i, s := range addresses {
		r, err := parseEntry(s)
		if err != nil {
			return nil, &EntryError{Field: "addresses", Index: i, Entry: s, Err: err}
		}
		fi, _ := FamilyOf(r.first).index()
		incl[fi] = append(incl[fi], r)
		edges = append(edges, cidrEdges(s)...)
	}
	for i, s := range excluded {
		r, err := parseEntry(s)
		if err != nil {
			return nil, &EntryError{Field: "excludedAddresses", Index: i, Entry: s, Err: err}
		}
		fi, _ := FamilyOf(r.first).index()
		excl[fi] = append(excl[fi], r)
	}
	slices.SortFunc(edges, netip.Addr.Compare)
	p := &Pool{edges: slices.Compact(edges)}
	for fi := range p.ranges {
		p.ranges[fi] = subtract(merge(incl[fi]), merge(excl[fi]))
	}
	return p, nil
}

// parseEntry reads one CIDR, range or single address.
func parseEntry(s string) (addrRange, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return addrRange{}, errors.New("empty entry")
	}
	if strings.Contains(t, "/") {
		p, err := netip.ParsePrefix(t)
		if err != nil {
			return addrRange{}, fmt.Errorf("not a CIDR: %w", err)
		}
		if err := checkAddr(p.Addr()); err != nil {
			return addrRange{}, err
		}
		p = p.Masked()
		return addrRange{first: p.Addr(), last: lastOf(p)}, nil
	}
	if a, b, ok := strings.Cut(t, "-"); ok {
		first, err := parseAddr(a)
		if err != nil {
			return addrRange{}, fmt.Errorf("range start: %w", err)
		}
		last, err := parseAddr(b)
		if err != nil {
			return addrRange{}, fmt.Errorf("range end: %w", err)
		}
		if first.Is4() != last.Is4() {
			return addrRange{}, errors.New("range mixes IPv4 and IPv6")
		}
		if last.Less(first) {
			return addrRange{}, fmt.Errorf("range start %s is after its end %s", first, last)
		}
		return addrRange{first: first, last: last}, nil
	}
	a, err := parseAddr(t)
	if err != nil {
		return addrRange{}, fmt.Errorf("not a CIDR, range or address: %w", err)
	}
	return addrRange{first: a, last: a}, nil
}

func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, err
	}
	return a, checkAddr(a)
}

// checkAddr refuses forms that would make one address look like two: zones,
// and IPv4-mapped IPv6 addresses (write the IPv4 address instead).
func checkAddr(a netip.Addr) error {
	if a.Zone() != "" {
		return fmt.Errorf("address %s has a zone; pool addresses cannot", a)
	}
	if a.Is4In6() {
		return fmt.Errorf("address %s is IPv4-mapped IPv6; write %s", a, a.Unmap())
	}
	return nil
}

// cidrEdges returns the addresses of a CIDR entry that are no host's: an
// IPv4 prefix's network and broadcast address (except /31 and /32, RFC
// 3021), an IPv6 prefix's first address, the subnet-router anycast address
// every router on the link answers (RFC 4291 section 2.6.1; except /127 and
// /128, RFC 6164). A pool entry written as a CIDR is taken to be the subnet
// (MetalLB's avoidBuggyIPs does the same for .0 and .255); write a range to
// hand out every address. Ranges and single addresses have no edges.
func cidrEdges(entry string) []netip.Addr {
	p, err := netip.ParsePrefix(strings.TrimSpace(entry))
	if err != nil {
		return nil
	}
	p = p.Masked()
	switch {
	case p.Addr().Is4() && p.Bits() <= 30:
		return []netip.Addr{p.Addr(), lastOf(p)}
	case p.Addr().Is6() && p.Bits() <= 126:
		return []netip.Addr{p.Addr()}
	}
	return nil
}

// IsEdge reports whether a is the network, broadcast or subnet-router
// anycast address of one of the pool's CIDR entries: in the pool's ranges
// but never a host's address.
func (p *Pool) IsEdge(a netip.Addr) bool {
	if p == nil {
		return false
	}
	_, found := slices.BinarySearchFunc(p.edges, a, netip.Addr.Compare)
	return found
}

// lastOf returns the highest address of a masked prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// merge sorts ranges and joins overlapping or adjacent ones.
func merge(rs []addrRange) []addrRange {
	if len(rs) == 0 {
		return nil
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y addrRange) int { return x.first.Compare(y.first) })
	out := []addrRange{rs[0]}
	for _, r := range rs[1:] {
		cur := &out[len(out)-1]
		// Adjacent when r starts right after cur ends; Next() of the
		// family's highest address is invalid, and nothing can follow it.
		if n := cur.last.Next(); !cur.last.Less(r.first) || (n.IsValid() && n == r.first) {
			if cur.last.Less(r.last) {
				cur.last = r.last
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// subtract returns incl minus excl; both must be merged (sorted, disjoint).
func subtract(incl, excl []addrRange) []addrRange {
	var out []addrRange
	j := 0
	for _, r := range incl {
		cur := r
		alive := true
		for j < len(excl) && excl[j].last.Less(cur.first) {
			j++
		}
		for k := j; alive && k < len(excl) && !cur.last.Less(excl[k].first); k++ {
			x := excl[k]
			if cur.first.Less(x.first) {
				out = append(out, addrRange{first: cur.first, last: x.first.Prev()})
			}
			if x.last.Less(cur.last) {
				cur.first = x.last.Next()
			} else {
				alive = false
			}
		}
		if alive {
			out = append(out, cur)
		}
	}
	return out
}

// Has reports whether the pool has at least one address of family f.
func (p *Pool) Has(f Family) bool {
	fi, ok := f.index()
	return ok && p != nil && len(p.ranges[fi]) > 0
}

// Contains reports whether a is an allocatable address of the pool (inside
// an entry of addresses and not excluded). Zoned and IPv4-mapped addresses
// are never in a pool.
func (p *Pool) Contains(a netip.Addr) bool {
	fi, ok := FamilyOf(a).index()
	if !ok || p == nil || checkAddr(a) != nil {
		return false
	}
	rs := p.ranges[fi]
	// The first range ending at or after a is the only candidate.
	i, _ := slices.BinarySearchFunc(rs, a, func(r addrRange, a netip.Addr) int { return r.last.Compare(a) })
	return i < len(rs) && !a.Less(rs[i].first)
}

// Size returns the number of allocatable addresses of family f. It is a
// big.Int because an IPv6 /64 holds 2^64 addresses, one more than a uint64.
func (p *Pool) Size(f Family) *big.Int {
	n := new(big.Int)
	fi, ok := f.index()
	if !ok || p == nil {
		return n
	}
	one := big.NewInt(1)
	for _, r := range p.ranges[fi] {
		d := new(big.Int).Sub(new(big.Int).SetBytes(r.last.AsSlice()), new(big.Int).SetBytes(r.first.AsSlice()))
		n.Add(n, d.Add(d, one))
	}
	return n
}

// Allocatable is Size without the edges of CIDR entries (IsEdge) still in the pool:
// the addresses the operator would hand out, which is what "the pool is 90 % used"
// must be measured against (a /29 gives 6 Services an address, not 8).
func (p *Pool) Allocatable(f Family) *big.Int {
	n := p.Size(f)
	if p == nil {
		return n
	}
	for _, e := range p.edges {
		if FamilyOf(e) == f && p.Contains(e) {
			n.Sub(n, big.NewInt(1))
		}
	}
	return n
}

// Allocate returns the lowest address of family f that is in the pool and
// for which inUse returns false, or false when there is none. inUse is
// called in increasing address order, once per candidate, and may be nil
// (nothing in use). The walk stops at the first free address, so its cost
// is the number of in-use addresses below it, whatever the pool's size.
func (p *Pool) Allocate(f Family, inUse func(netip.Addr) bool) (netip.Addr, bool) {
	fi, ok := f.index()
	if !ok || p == nil {
		return netip.Addr{}, false
	}
	for _, r := range p.ranges[fi] {
		for a := r.first; ; a = a.Next() {
			if inUse == nil || !inUse(a) {
				return a, true
			}
			if a == r.last {
				break
			}
		}
	}
	return netip.Addr{}, false
}

// String lists the pool's ranges, IPv4 first, for logs and test failures.
func (p *Pool) String() string {
	if p == nil {
		return ""
	}
	var parts []string
	for _, rs := range p.ranges {
		for _, r := range rs {
			if r.first == r.last {
				parts = append(parts, r.first.String())
			} else {
				parts = append(parts, r.first.String()+"-"+r.last.String())
			}
		}
	}
	return strings.Join(parts, ",")
}
