package vrrp

import "net/netip"

// A VRRPv2 instance without virtual addresses: keepalived runs one (with a warning, not in
// strict mode) for setups whose notify scripts move an address themselves, as cloud
// providers' floating IPs need. Its advertisements carry a count of zero, which RFC 3768
// does not forbid; keepalived accepts one when the instance has no address either (the
// count matches), so two such routers elect a master between them. RFC 5798 / 9568 forbid
// a count of zero for v3, and Unmarshal and AppendMarshal keep refusing it: these are the
// only ways in and out.

// AppendMarshalNoAddresses is AppendMarshal for a VRRPv2 advertisement that may carry no
// address (a.Addresses empty). Anything else is encoded and refused exactly as by
// AppendMarshal.
func (a *Advertisement) AppendMarshalNoAddresses(b []byte, src, dst netip.Addr) ([]byte, error) {
	return a.appendMarshal(b, src, dst, ChecksumPseudoHeader, true)
}

// UnmarshalNoAddresses is Unmarshal for the receiver of a VRRPv2 instance without
// addresses: a v2 advertisement with a count of zero is accepted; everything else is
// checked as by Unmarshal.
func (a *Advertisement) UnmarshalNoAddresses(b []byte, src, dst netip.Addr) error {
	return a.unmarshal(b, src, dst, true)
}
