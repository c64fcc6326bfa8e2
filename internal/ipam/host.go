package ipam

import "net/netip"

// HostProblem says why a is not a unicast address a host may own as a VIP,
// or returns "" when it is one. A VRRP master adds its VIPs to an interface
// and announces them with gratuitous ARP or unsolicited neighbour
// advertisements; for these addresses that would either fail, or take over
// traffic that is no single host's (a multicast group, the limited
// broadcast), or never leave the host (loopback, link-local scope).
func HostProblem(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "is not an IP address"
	case a.Zone() != "":
		return "has a zone"
	case a.Is4In6():
		return "is IPv4-mapped IPv6"
	case a.IsUnspecified():
		return "is the unspecified address"
	case a.IsLoopback():
		return "is a loopback address"
	case a.IsMulticast():
		return "is a multicast address"
	case a.IsLinkLocalUnicast():
		return "is a link-local address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "is the limited broadcast address"
	case a.Is4() && a.As4()[0] == 0:
		return "is in 0.0.0.0/8, which names this network, not a host"
	case a.Is4() && a.As4()[0] >= 240:
		return "is in 240.0.0.0/4, which is reserved"
	}
	return ""
}
