package ipam

import (
	"fmt"
	"net/netip"
)

// Family is an IP family, spelled as Kubernetes spells it in
// Service.spec.ipFamilies.
type Family string

// The two families.
const (
	IPv4 Family = "IPv4"
	IPv6 Family = "IPv6"
)

// FamilyOf returns the family of a, or "" for the zero Addr.
func FamilyOf(a netip.Addr) Family {
	switch {
	case a.Is4():
		return IPv4
	case a.Is6():
		return IPv6
	}
	return ""
}

// index maps a family to its slot in per-family arrays.
func (f Family) index() (int, bool) {
	switch f {
	case IPv4:
		return 0, true
	case IPv6:
		return 1, true
	}
	return 0, false
}

func parseFamily(s string) (Family, error) {
	switch Family(s) {
	case IPv4, IPv6:
		return Family(s), nil
	}
	return "", fmt.Errorf("unknown IP family %q (want %q or %q)", s, IPv4, IPv6)
}

// The Service.spec.ipFamilyPolicy values.
const (
	SingleStack      = "SingleStack"
	PreferDualStack  = "PreferDualStack"
	RequireDualStack = "RequireDualStack"
)

// Families returns the families a Service should get addresses of, primary
// first, given its spec.ipFamilies and spec.ipFamilyPolicy:
//
//   - SingleStack (or an empty policy): the first of ipFamilies, or IPv4 when
//     ipFamilies is empty (the API server's default on a single-stack IPv4
//     cluster);
//   - PreferDualStack: both families if the pool has both, otherwise the one
//     it has;
//   - RequireDualStack: both families; an error if the pool lacks one.
//
// Families are ordered as in ipFamilies, then the other family. It is an
// error when the pool has none of the families asked for, so the caller can
// say why nothing was allocated.
func (p *Pool) Families(ipFamilies []string, policy string) ([]Family, error) {
	var order []Family
	for i, s := range ipFamilies {
		f, err := parseFamily(s)
		if err != nil {
			return nil, fmt.Errorf("ipFamilies[%d]: %w", i, err)
		}
		for _, g := range order {
			if g == f {
				return nil, fmt.Errorf("ipFamilies[%d]: %s listed twice", i, f)
			}
		}
		order = append(order, f)
	}
	if len(order) == 0 {
		order = []Family{IPv4}
	}
	both := order
	if len(both) == 1 {
		other := IPv6
		if both[0] == IPv6 {
			other = IPv4
		}
		both = []Family{both[0], other}
	}

	switch policy {
	case "", SingleStack:
		f := order[0]
		if !p.Has(f) {
			return nil, fmt.Errorf("the address pool has no %s addresses", f)
		}
		return []Family{f}, nil
	case PreferDualStack:
		var out []Family
		for _, f := range both {
			if p.Has(f) {
				out = append(out, f)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("the address pool is empty")
		}
		return out, nil
	case RequireDualStack:
		for _, f := range both {
			if !p.Has(f) {
				return nil, fmt.Errorf("ipFamilyPolicy %s but the address pool has no %s addresses", RequireDualStack, f)
			}
		}
		return both, nil
	}
	return nil, fmt.Errorf("unknown ipFamilyPolicy %q", policy)
}
