package ipam

import (
	"fmt"
	"net/netip"
	"strings"
)

// RequestAnnotation is the Service annotation naming the addresses it wants.
const RequestAnnotation = "keepalived-operator.redhat-cop.io/loadbalancerips"

// ParseRequested reads the value of RequestAnnotation (or the deprecated
// spec.loadBalancerIP): a comma-separated list of at most one IPv4 and one
// IPv6 address, spaces allowed around each. A blank value means no request
// and returns nil. Empty items, duplicates, a second address of a family,
// zoned and IPv4-mapped addresses are errors naming the item.
func ParseRequested(s string) ([]netip.Addr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []netip.Addr
	for i, item := range strings.Split(s, ",") {
		t := strings.TrimSpace(item)
		if t == "" {
			return nil, fmt.Errorf("item %d is empty", i)
		}
		a, err := netip.ParseAddr(t)
		if err == nil {
			err = checkAddr(a)
		}
		if err != nil {
			return nil, fmt.Errorf("item %d %q: %w", i, t, err)
		}
		for _, b := range out {
			if b == a {
				return nil, fmt.Errorf("item %d %q: listed twice", i, t)
			}
			if FamilyOf(b) == FamilyOf(a) {
				return nil, fmt.Errorf("item %d %q: a second %s address (already %s); at most one per family", i, t, FamilyOf(a), b)
			}
		}
		out = append(out, a)
	}
	return out, nil
}
