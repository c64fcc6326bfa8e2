package vrrp

// DefaultMTU is the MTU AddressesThatFit assumes when the interface's is not known:
// keepalived's DEFAULT_MTU.
const DefaultMTU = 1500

// AddressesThatFit is how many addresses an advertisement of version v and family f carries
// on an interface of MTU mtu, by keepalived 2.2.7's rule (vrrp_complete_instance): what
// fits in the MTU less an Ethernet header (14 bytes, which keepalived counts although
// the MTU does not include it), the IP header without options (20 or 40 bytes), the VRRP
// header (8) and, for VRRPv2, its authentication data (8), and at most MaxAddresses (the
// count is one byte). An instance's addresses beyond it are not advertised: keepalived
// moves them to its excluded addresses (added on MASTER, never advertised) with a
// warning, and vrrpd's configuration does the same, so both list the same addresses in
// their adverts and each accepts the other's. mtu <= 0 means DefaultMTU.
//
// IPv6 at MTU 1500 carries 89 addresses (a 1432-byte message); IPv4, with VRRPv2 or v3,
// 255 from an MTU of 1070 (v2) or 1062 (v3) up.
func AddressesThatFit(v Version, f Family, mtu int) int {
	if mtu <= 0 {
		mtu = DefaultMTU
	}
	const ethernetHeader, vrrpHeader, authData = 14, 8, 8
	overhead, size := ethernetHeader+vrrpHeader, 16
	if f == IPv4 {
		overhead, size = overhead+20, 4
		if v == Version2 {
			overhead += authData
		}
	} else {
		overhead += 40
	}
	n := (mtu - overhead) / size
	return max(0, min(n, MaxAddresses))
}
