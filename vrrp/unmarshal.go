package vrrp

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"net/netip"
	"time"
)

// Sizes of the parts of an advertisement on the wire.
const (
	// HeaderLen is the fixed header both versions start with: version/type, VRID, priority,
	// address count, two version-specific bytes and the checksum.
	HeaderLen = 8
	// AuthDataLen is the VRRPv2 Authentication Data block that follows the addresses.
	AuthDataLen = 8
	// MaxAddresses is the most virtual addresses one advertisement can carry (the count is
	// one byte).
	MaxAddresses = 255
)

// ErrAddressFamily reports IP header addresses that are not both IPv4 or both IPv6, or
// virtual addresses of another family than the IP header. It points at a bug in the caller
// (or a mixed configuration), not at a bad packet, so it feeds no counter.
var ErrAddressFamily = errors.New("vrrp: address family mismatch")

// ParseHeader peeks at the fixed header of the VRRP message b without validating it, so a
// receive loop can pick the instance a packet is for (by version and VRID) before decoding
// it, and count that instance's errors as keepalived does. ok is false only when b is
// shorter than HeaderLen: keepalived drops such a packet before it knows the instance.
//
// v is the raw version nibble, which may be any value from 0 to 15; Unmarshal is what
// rejects the ones this package does not speak.
func ParseHeader(b []byte) (v Version, vrid uint8, ok bool) {
	if len(b) < HeaderLen {
		return 0, 0, false
	}
	return Version(b[0] >> 4), b[1], true
}

// Unmarshal decodes and validates the VRRP message b (the IP payload, without the IP header)
// into a. src and dst are the source and destination of the IP header: they choose the
// address family and make up the v3 checksum pseudo-header.
//
// The checks run in keepalived's order (vrrp_check_packet), so that a packet wrong in two
// ways is counted where keepalived counts it: the length (which must be exactly the fixed
// part plus count addresses, with nothing trailing, as keepalived requires), the version
// (2 or 3, and 3 for IPv6), the message type, a count of zero, the checksum, then the v3
// interval. The
// v2 authentication is deliberately not checked here because it depends on the instance's
// configuration: see CheckAuth.
//
// The addresses are decoded into a.Addresses[:0], so a receive loop that reuses one
// Advertisement decodes without allocating once the slice has grown. On error a is left
// partly written and must not be used.
func (a *Advertisement) Unmarshal(b []byte, src, dst netip.Addr) error {
	return a.unmarshal(b, src, dst, false)
}

func (a *Advertisement) unmarshal(b []byte, src, dst netip.Addr, allowEmpty bool) error {
	src, dst = src.Unmap(), dst.Unmap()
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return ErrAddressFamily
	}
	ipv4 := src.Is4()
	if len(b) < HeaderLen {
		return ErrPacketLength
	}

	v := Version(b[0] >> 4)
	if v != Version2 && v != Version3 {
		return ErrVersion
	}
	addrLen := 16
	if ipv4 {
		addrLen = 4
	}
	fixed := HeaderLen
	if v == Version2 {
		fixed += AuthDataLen
	}
	if len(b) < fixed {
		return ErrPacketLength
	}
	count := int(b[3])
	if len(b) != fixed+count*addrLen {
		return ErrAddressCount
	}
	// keepalived has no VRRPv2 over IPv6 and reads the version against the instance's, so
	// a v2 message over IPv6 is a version error there and here.
	if v == Version2 && !ipv4 {
		return ErrVersion
	}
	if b[0]&0x0f != TypeAdvertisement {
		return ErrInvalidType
	}
	// RFC 9568 §5.2.5 (and erratum 8299 for §7.1): a count of zero MUST be ignored. A
	// backup that took one for its master's advertisement would follow a router that
	// claims no address. keepalived 2.2.7 counts it where it does (addr_list_err), just
	// after the type and before the checksum.
	if count == 0 && !(allowEmpty && v == Version2) {
		return ErrNoAddresses
	}

	a.Checksum = binary.BigEndian.Uint16(b[6:8])
	form, ok := verifyChecksum(v, b, src, dst, a.Checksum)
	if !ok {
		return ErrChecksum
	}
	a.ChecksumForm = form

	a.Version = v
	a.Type = TypeAdvertisement
	a.VRID = b[1]
	a.Priority = b[2]
	if v == Version3 {
		a.MaxAdvertInterval = binary.BigEndian.Uint16(b[4:6]) & 0x0fff
		a.AdvertIntervalSeconds = 0
		a.AuthType = AuthNone
		a.AuthData = [8]byte{}
	} else {
		a.MaxAdvertInterval = 0
		a.AuthType = AuthType(b[4])
		a.AdvertIntervalSeconds = b[5]
		copy(a.AuthData[:], b[len(b)-AuthDataLen:])
	}

	addrs := b[HeaderLen : HeaderLen+count*addrLen]
	a.Addresses = a.Addresses[:0]
	for len(addrs) > 0 {
		if ipv4 {
			a.Addresses = append(a.Addresses, netip.AddrFrom4([4]byte(addrs[:4])))
		} else {
			a.Addresses = append(a.Addresses, netip.AddrFrom16([16]byte(addrs[:16])))
		}
		addrs = addrs[addrLen:]
	}

	// RFC 5798 forbids a zero interval on send but says nothing on receive; a backup that
	// adopted it would compute a Master_Down_Interval of Skew_Time alone, so it is refused.
	if v == Version3 && a.MaxAdvertInterval == 0 {
		return ErrAdvertIntervalZero
	}
	return nil
}

// verifyChecksum reports whether want is a checksum of the message b that a sender of
// version v from src to dst may have written, and in which form.
//
// One's complement arithmetic has two zeros, so a sender may have written 0xffff where the
// computed checksum is 0x0000; keepalived (which sums the whole message and tests for zero)
// accepts both, and so does this. Everything else must match exactly.
func verifyChecksum(v Version, b []byte, src, dst netip.Addr, want uint16) (ChecksumForm, bool) {
	msg := messageSum(b)
	if v == Version2 {
		return ChecksumPseudoHeader, checksumEqual(finish(msg), want)
	}
	if checksumEqual(finish(msg+pseudoHeaderSum(src, dst, len(b))), want) {
		return ChecksumPseudoHeader, true
	}
	if !src.Is4() {
		return 0, false
	}
	if checksumEqual(finish(msg), want) {
		return ChecksumNoPseudoHeader, true
	}
	if dst != MulticastIPv4 && checksumEqual(finish(msg+pseudoHeaderSum(src, MulticastIPv4, len(b))), want) {
		return ChecksumMulticastPseudoHeader, true
	}
	return 0, false
}

func checksumEqual(computed, wire uint16) bool {
	return computed == wire || computed == 0 && wire == 0xffff
}

// CheckAuth checks the VRRPv2 authentication of a decoded advertisement against the
// instance's configuration: the auth type t it expects and, for AuthSimple, its password
// (see SimplePassword). It follows keepalived 2.2.7 (built with VRRP_AUTH, as Debian's is):
//
//  1. a type other than none, simple or IP AH is ErrInvalidAuthType (invalid_authtype);
//  2. a type other than t is ErrAuthTypeMismatch (authtype_mismatch), which is also how an
//     AH-typed advertisement ends, since this package does not implement AH;
//  3. with AuthSimple, a password other than pass is ErrAuthFailure (auth_failure),
//     compared in constant time.
//
// With AuthNone the Authentication Data is ignored, as RFC 3768 §5.3.6.1 says. VRRPv3 has
// no authentication, so a v3 advertisement always passes.
func (a *Advertisement) CheckAuth(t AuthType, pass [8]byte) error {
	if a.Version != Version2 {
		return nil
	}
	switch a.AuthType {
	case AuthNone, AuthSimple, AuthIPAH:
	default:
		return ErrInvalidAuthType
	}
	if a.AuthType != t {
		return ErrAuthTypeMismatch
	}
	if t == AuthSimple && subtle.ConstantTimeCompare(a.AuthData[:], pass[:]) != 1 {
		return ErrAuthFailure
	}
	return nil
}

// SimplePassword turns a configured password (keepalived's auth_pass) into the 8-byte
// Authentication Data of AuthSimple: zero-padded, and cut to 8 bytes as keepalived does,
// in which case truncated is true so the caller can warn.
func SimplePassword(s string) (pass [8]byte, truncated bool) {
	n := copy(pass[:], s)
	return pass, n < len(s)
}

// Interval is the advertisement interval the advertisement carries: the v3 Max Advertise
// Interval (centiseconds) or the v2 Advertisement Interval (seconds). It is zero for an
// advertisement of no known version.
func (a *Advertisement) Interval() time.Duration {
	switch a.Version {
	case Version3:
		return time.Duration(a.MaxAdvertInterval) * 10 * time.Millisecond
	case Version2:
		return time.Duration(a.AdvertIntervalSeconds) * time.Second
	}
	return 0
}
