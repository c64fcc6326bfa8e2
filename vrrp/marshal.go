package vrrp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// Limits of the interval fields, in their wire units.
const (
	maxIntervalCentiseconds = 0x0fff // v3: 12 bits of centiseconds, 40.95 s
	maxIntervalSeconds      = 0xff   // v2: one byte of seconds
)

// Len is the length of the encoded message for a's version and addresses, assuming
// addresses of the family of the first one (IPv4 when there are none).
func (a *Advertisement) Len() int {
	n := HeaderLen
	if a.Version == Version2 {
		n += AuthDataLen
	}
	addrLen := 4
	if len(a.Addresses) > 0 && !a.Addresses[0].Is4() {
		addrLen = 16
	}
	return n + len(a.Addresses)*addrLen
}

// AppendMarshal appends the encoded advertisement to b and returns the extended buffer. src
// and dst are the source and destination the IP header will carry: the v3 checksum covers
// them through the pseudo-header, so in unicast dst must be the real peer, not 224.0.0.18,
// and a message sent to several peers is encoded once per peer.
//
// The checksum is computed (v3 over IPv4 in the pseudo-header form, as keepalived sends it
// by default; AppendMarshalForm chooses the other) and stored into a.Checksum;
// a.ChecksumForm is ignored. Type may be left zero;
// TypeAdvertisement is written either way. For v2 the AuthData is written as it is, so with
// AuthNone it should be zero (RFC 3768 §5.3.6.1).
//
// It refuses, leaving b as it was: a version other than 2 or 3, v2 over IPv6, src and dst
// or the addresses of different families (ErrAddressFamily), no address (ErrNoAddresses)
// or more than MaxAddresses addresses, an interval of zero or out of its field, an auth type other than none or
// simple, and a Type other than 0 or TypeAdvertisement.
func (a *Advertisement) AppendMarshal(b []byte, src, dst netip.Addr) ([]byte, error) {
	return a.AppendMarshalForm(b, src, dst, ChecksumPseudoHeader)
}

// AppendMarshalForm is AppendMarshal with the checksum form of a v3 IPv4 advertisement
// chosen: ChecksumPseudoHeader (RFC 5798 §5.2.8 as keepalived and FRR read it, and what
// they send by default) or ChecksumNoPseudoHeader (RFC 9568 §5.2.8, which settled that
// IPv4 has no pseudo-header; keepalived >= 2.2.8's v3_checksum_as_v2, FRR's "no
// checksum-with-ipv4-pseudoheader"). VRRPv2 and IPv6 have one form each, so form is
// ignored for them. ChecksumMulticastPseudoHeader is refused: receivers accept it only
// for compatibility with old keepalived, nobody should send it.
func (a *Advertisement) AppendMarshalForm(b []byte, src, dst netip.Addr, form ChecksumForm) ([]byte, error) {
	return a.appendMarshal(b, src, dst, form, false)
}

func (a *Advertisement) appendMarshal(b []byte, src, dst netip.Addr, form ChecksumForm, allowEmpty bool) ([]byte, error) {
	if err := a.checkEncodable(src, dst, allowEmpty); err != nil {
		return b, err
	}
	if form != ChecksumPseudoHeader && form != ChecksumNoPseudoHeader {
		return b, fmt.Errorf("vrrp: cannot send checksum form %v", form)
	}
	ipv4 := src.Unmap().Is4()

	start := len(b)
	b = append(b, byte(a.Version)<<4|TypeAdvertisement, a.VRID, a.Priority, byte(len(a.Addresses)))
	if a.Version == Version3 {
		b = binary.BigEndian.AppendUint16(b, a.MaxAdvertInterval)
	} else {
		b = append(b, byte(a.AuthType), a.AdvertIntervalSeconds)
	}
	b = append(b, 0, 0) // checksum, filled in below
	for _, addr := range a.Addresses {
		if ipv4 {
			a4 := addr.As4()
			b = append(b, a4[:]...)
		} else {
			a16 := addr.As16()
			b = append(b, a16[:]...)
		}
	}
	if a.Version == Version2 {
		b = append(b, a.AuthData[:]...)
	}

	msg := b[start:]
	s := messageSum(msg)
	if a.Version == Version3 && (!ipv4 || form == ChecksumPseudoHeader) {
		s += pseudoHeaderSum(src.Unmap(), dst.Unmap(), len(msg))
	}
	a.Checksum = finish(s)
	binary.BigEndian.PutUint16(msg[6:8], a.Checksum)
	return b, nil
}

// checkEncodable returns why a cannot be encoded from src to dst, or nil.
func (a *Advertisement) checkEncodable(src, dst netip.Addr, allowEmpty bool) error {
	src, dst = src.Unmap(), dst.Unmap()
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return fmt.Errorf("%w: source %v and destination %v", ErrAddressFamily, src, dst)
	}
	ipv4 := src.Is4()
	for _, addr := range a.Addresses {
		// A 4-in-6 address is a legitimate (if odd) IPv6 virtual address, so only Is4
		// decides, exactly as decoding an IPv6 advertisement produces them.
		if addr.Is4() != ipv4 || !addr.IsValid() {
			return fmt.Errorf("%w: virtual address %v with %v header addresses", ErrAddressFamily, addr, src)
		}
	}
	if len(a.Addresses) == 0 && !(allowEmpty && a.Version == Version2) {
		// RFC 5798 §5.2.5: the minimum count is 1, and receivers drop a zero count.
		return fmt.Errorf("%w: at least one virtual address is required", ErrNoAddresses)
	}
	if len(a.Addresses) > MaxAddresses {
		return fmt.Errorf("vrrp: %d virtual addresses, at most %d fit in one advertisement", len(a.Addresses), MaxAddresses)
	}
	if a.Type != 0 && a.Type != TypeAdvertisement {
		return fmt.Errorf("%w: %d", ErrInvalidType, a.Type)
	}
	switch a.Version {
	case Version3:
		if a.MaxAdvertInterval == 0 || a.MaxAdvertInterval > maxIntervalCentiseconds {
			return fmt.Errorf("vrrp: v3 advertisement interval %d cs outside 1..%d", a.MaxAdvertInterval, maxIntervalCentiseconds)
		}
	case Version2:
		if !ipv4 {
			return fmt.Errorf("%w: VRRPv2 is IPv4 only", ErrVersion)
		}
		if a.AdvertIntervalSeconds == 0 {
			return fmt.Errorf("vrrp: v2 advertisement interval of zero seconds")
		}
		if a.AuthType != AuthNone && a.AuthType != AuthSimple {
			return fmt.Errorf("%w: cannot send auth type %d", ErrInvalidAuthType, a.AuthType)
		}
	default:
		return fmt.Errorf("%w: cannot send version %d", ErrVersion, a.Version)
	}
	return nil
}

// SetInterval sets the interval field of a's version (set Version first) to d: whole
// centiseconds from 10 ms to 40.95 s for v3, whole seconds from 1 s to 255 s for v2. An
// interval that the field cannot carry exactly is an error rather than silently rounded,
// so a configuration mistake shows up where it was made.
func (a *Advertisement) SetInterval(d time.Duration) error {
	switch a.Version {
	case Version3:
		const unit = 10 * time.Millisecond
		if d%unit != 0 || d < unit || d > maxIntervalCentiseconds*unit {
			return fmt.Errorf("vrrp: v3 advertisement interval %v is not a whole number of centiseconds from 10ms to 40.95s", d)
		}
		a.MaxAdvertInterval = uint16(d / unit)
	case Version2:
		if d%time.Second != 0 || d < time.Second || d > maxIntervalSeconds*time.Second {
			return fmt.Errorf("vrrp: v2 advertisement interval %v is not a whole number of seconds from 1s to 255s", d)
		}
		a.AdvertIntervalSeconds = uint8(d / time.Second)
	default:
		return fmt.Errorf("%w: cannot set the interval of version %d", ErrVersion, a.Version)
	}
	return nil
}
