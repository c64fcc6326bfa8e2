package vrrp

import (
	"encoding/binary"
	"net/netip"
)

// ChecksumForm says how the checksum of a received advertisement was computed by its sender.
//
// VRRPv2 and VRRPv3 over IPv6 have exactly one form. VRRPv3 over IPv4 has three in the wild,
// and a receiver that wants to interoperate accepts them all; a sender uses
// ChecksumPseudoHeader, as keepalived does by default, or ChecksumNoPseudoHeader when
// configured to (Config.V3ChecksumAsV2, RFC 9568 §5.2.8).
type ChecksumForm uint8

const (
	// ChecksumPseudoHeader is the form of RFC 5798 §5.2.8: for v3, over an IP pseudo-header
	// carrying the real source and destination addresses, then the VRRP message. For v2
	// (which has no pseudo-header) it is the only form and means "over the VRRP message".
	ChecksumPseudoHeader ChecksumForm = iota
	// ChecksumNoPseudoHeader is a v3 IPv4 checksum over the VRRP message alone, as RFC 3768
	// computes it for v2 and RFC 9568 §5.2.8 settled it for v3 over IPv4. Cisco and
	// Juniper send v3 this way; keepalived >= 2.2.8 with v3_checksum_as_v2 and FRR with
	// "no vrrp checksum-with-ipv4-pseudoheader" do too.
	ChecksumNoPseudoHeader
	// ChecksumMulticastPseudoHeader is a v3 IPv4 unicast advertisement whose pseudo-header
	// carries 224.0.0.18 instead of the real unicast destination, as keepalived before 1.3.5
	// sent it. keepalived 2.x still accepts it (its unicast checksum compatibility mode).
	ChecksumMulticastPseudoHeader
)

// String names the form for logs.
func (f ChecksumForm) String() string {
	switch f {
	case ChecksumPseudoHeader:
		return "pseudo-header"
	case ChecksumNoPseudoHeader:
		return "no-pseudo-header"
	case ChecksumMulticastPseudoHeader:
		return "multicast-pseudo-header"
	}
	return "unknown"
}

// sum16 adds b to the running one's complement sum s as big-endian 16-bit words, padding
// an odd last byte with zero (RFC 1071). The carries are folded by finish, so s can grow
// well beyond 16 bits; a VRRP message is at most a few kilobytes, far from overflowing.
func sum16(s uint64, b []byte) uint64 {
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint16(b)) + uint64(binary.BigEndian.Uint16(b[2:])) +
			uint64(binary.BigEndian.Uint16(b[4:])) + uint64(binary.BigEndian.Uint16(b[6:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// finish folds the carries of s into 16 bits and complements the result: the Internet
// checksum of everything summed into s.
func finish(s uint64) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// pseudoHeaderSum is the one's complement sum of the pseudo-header for a VRRP message of
// length n from src to dst: the IPv4 one (RFC 768 style: src, dst, zero, protocol, length)
// or the IPv6 one (RFC 8200 §8.1: src, dst, 32-bit length, zeros, next header). Zones are
// ignored: they are not on the wire.
func pseudoHeaderSum(src, dst netip.Addr, n int) uint64 {
	var s uint64
	if src.Is4() {
		s4, d4 := src.As4(), dst.As4()
		s = sum16(s, s4[:])
		s = sum16(s, d4[:])
		return s + IPProtocol + uint64(n)
	}
	s16, d16 := src.As16(), dst.As16()
	s = sum16(s, s16[:])
	s = sum16(s, d16[:])
	// The 32-bit length is two 16-bit words; the next header sits in the low byte of the
	// last word after three zero bytes.
	return s + uint64(n>>16) + uint64(n&0xffff) + IPProtocol
}

// messageSum sums the VRRP message b with its checksum field (bytes 6 and 7) taken as zero,
// so the result can be finished into the checksum the sender should have written.
func messageSum(b []byte) uint64 {
	s := sum16(0, b[:6])
	return sum16(s, b[8:])
}
