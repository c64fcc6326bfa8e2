package vrrp

import (
	"fmt"
	"net/netip"
)

// Family is the address family a virtual router runs over. VRRP keeps the two apart: an
// IPv4 and an IPv6 virtual router with the same VRID are different routers (RFC 5798 §5.2.3).
type Family uint8

// The two families; the values are the IP versions.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// String returns "IPv4" or "IPv6".
func (f Family) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return fmt.Sprintf("Family(%d)", uint8(f))
}

// FamilyOf is the family of a; an IPv4-mapped IPv6 address is IPv4.
func FamilyOf(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return IPv4
	}
	return IPv6
}

// Multicast is the family's VRRP multicast group: 224.0.0.18 or ff02::12.
func (f Family) Multicast() netip.Addr {
	if f == IPv6 {
		return MulticastIPv6
	}
	return MulticastIPv4
}
