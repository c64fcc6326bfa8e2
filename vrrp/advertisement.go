package vrrp

import (
	"errors"
	"net/netip"
)

// Version is the VRRP protocol version of an advertisement.
type Version uint8

// The VRRP versions this package speaks.
const (
	Version2 Version = 2 // RFC 3768, IPv4 only
	Version3 Version = 3 // RFC 5798 / RFC 9568, IPv4 and IPv6
)

// TypeAdvertisement is the only VRRP message type (RFC 5798 §5.2.2).
const TypeAdvertisement = 1

// IPProtocol is the IP protocol number (IPv4) and next header (IPv6) of VRRP.
const IPProtocol = 112

// Multicast destinations of VRRP advertisements (RFC 5798 §5.1.1.2, §5.1.2.2).
var (
	MulticastIPv4 = netip.AddrFrom4([4]byte{224, 0, 0, 18})
	MulticastIPv6 = netip.MustParseAddr("ff02::12")
)

// AuthType is the VRRPv2 authentication type (RFC 3768 §5.3.6). VRRPv3 has none.
type AuthType uint8

// VRRPv2 authentication types.
const (
	AuthNone   AuthType = 0
	AuthSimple AuthType = 1 // 8-byte cleartext password, keepalived's "auth_type PASS"
	// AuthIPAH is the IP Authentication Header type of RFC 2338, removed by RFC 3768. It is
	// never sent nor accepted, but it is a known type: keepalived 2.2.7 (built with
	// VRRP_AUTH, as Debian's is) counts an advertisement carrying it as an auth type
	// mismatch, not as an invalid auth type, and so does CheckAuth.
	AuthIPAH AuthType = 2
)

// An Advertisement is one VRRP advertisement message, without the IP header.
//
// The same value serves both versions; fields that exist in only one version are ignored by
// the other. Decoding fills a caller-owned value and reuses the capacity of Addresses, so a
// receive loop that keeps one Advertisement around decodes without allocating.
type Advertisement struct {
	Version  Version
	Type     uint8 // TypeAdvertisement on the wire; anything else fails decoding
	VRID     uint8
	Priority uint8

	// MaxAdvertInterval is the v3 Max Advertise Interval in centiseconds (12 bits).
	MaxAdvertInterval uint16
	// AdvertIntervalSeconds is the v2 Advertisement Interval in seconds.
	AdvertIntervalSeconds uint8
	// AuthType and AuthData are the v2 authentication fields; AuthData holds the
	// zero-padded simple password for AuthSimple.
	AuthType AuthType
	AuthData [8]byte

	// Checksum is the checksum as read from the wire (decoding) or as computed (encoding).
	Checksum uint16
	// ChecksumForm is the form the received checksum matched (decoding only; encoding
	// takes the form as an argument of AppendMarshalForm). Only v3 over IPv4 has more
	// than one form.
	ChecksumForm ChecksumForm

	// Addresses are the virtual addresses: all IPv4 or all IPv6.
	Addresses []netip.Addr
}

// Decoding errors. Each one feeds exactly one statistics counter (see Counters.CountError),
// so a receive path can count a malformed packet and drop it. The comments name that counter
// and what keepalived 2.2.7 (vrrp_check_packet) does with the same packet.
var (
	// ErrPacketLength: shorter than the fixed part of its version. packet_len_err, as keepalived.
	ErrPacketLength = errors.New("vrrp: packet length invalid")
	// ErrInvalidType: a message type other than Advertisement. invalid_type_rcvd, as keepalived.
	ErrInvalidType = errors.New("vrrp: invalid message type")
	// ErrVersion: a version other than 2 or 3, or v2 over IPv6 (the instance layer also
	// returns it for a version other than the instance's). keepalived has no vrrp_stats
	// counter for it (only the SNMP vrrpStatsVersionErrors), so it feeds vrrpd's own
	// vrrpd_version_err.
	ErrVersion = errors.New("vrrp: unsupported or unexpected version")
	// ErrChecksum: no accepted checksum form matches. keepalived counts it only in SNMP
	// (vrrpStatsChecksumErrors) and leaves IPv6 to the kernel; vrrpd_checksum_err here.
	ErrChecksum = errors.New("vrrp: checksum mismatch")
	// ErrAddressCount: the length is not the fixed part plus Count IPvX Addr addresses, too
	// short or with trailing bytes (keepalived: "vrrp packet too long/short"). packet_len_err.
	ErrAddressCount = errors.New("vrrp: address count does not match length")
	// ErrNoAddresses: Count IPvX Addr is zero, which RFC 5798 / RFC 9568 §5.2.5 forbid
	// (minimum 1; RFC 9568 erratum 8299 makes the receiver discard it). keepalived 2.2.7
	// drops it as an address count differing from its VIPs: addr_list_err.
	ErrNoAddresses = errors.New("vrrp: advertisement carries no addresses")
	// ErrAdvertIntervalZero: a v3 Max Advertise Interval of 0. keepalived 2.2.7 neither
	// rejects it nor ever increments advert_interval_err (it drops a v2 interval mismatch
	// uncounted); vrrpd gives the counter its RFC 2787 meaning and counts both here.
	ErrAdvertIntervalZero = errors.New("vrrp: advertisement interval is zero")
	// ErrAuthTypeMismatch: v2 auth type differing from the instance's. authtype_mismatch.
	ErrAuthTypeMismatch = errors.New("vrrp: authentication type mismatch")
	// ErrInvalidAuthType: v2 auth type not 0, 1 or 2. invalid_authtype.
	ErrInvalidAuthType = errors.New("vrrp: invalid authentication type")
	// ErrAuthFailure: v2 simple password differing from the instance's. auth_failure.
	ErrAuthFailure = errors.New("vrrp: authentication failure")
	// ErrTTL: IP TTL / hop limit not 255, checked where the IP header is read (keepalived
	// skips the check for unicast instances). ip_ttl_err.
	ErrTTL = errors.New("vrrp: IP TTL / hop limit is not 255")
)
