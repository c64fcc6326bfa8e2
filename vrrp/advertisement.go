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

// VRRPv2 authentication types. Type 2 (IP authentication header) was removed by RFC 3768 and
// is rejected as invalid, as keepalived does.
const (
	AuthNone   AuthType = 0
	AuthSimple AuthType = 1 // 8-byte cleartext password, keepalived's "auth_type PASS"
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

	// Addresses are the virtual addresses: all IPv4 or all IPv6.
	Addresses []netip.Addr
}

// Decoding errors. Each one feeds exactly one keepalived statistics counter (see
// Counters.CountError), so a receive path can count a malformed packet and drop it.
var (
	ErrPacketLength       = errors.New("vrrp: packet length invalid")               // packet_len_err
	ErrInvalidType        = errors.New("vrrp: invalid message type")                // invalid_type_rcvd
	ErrVersion            = errors.New("vrrp: unsupported or unexpected version")   // vrrpd_version_err
	ErrChecksum           = errors.New("vrrp: checksum mismatch")                   // vrrpd_checksum_err
	ErrAddressCount       = errors.New("vrrp: address count does not match length") // packet_len_err
	ErrAdvertIntervalZero = errors.New("vrrp: advertisement interval is zero")      // advert_interval_err
	ErrAuthTypeMismatch   = errors.New("vrrp: authentication type mismatch")        // authtype_mismatch
	ErrInvalidAuthType    = errors.New("vrrp: invalid authentication type")         // invalid_authtype
	ErrAuthFailure        = errors.New("vrrp: authentication failure")              // auth_failure
	ErrTTL                = errors.New("vrrp: IP TTL / hop limit is not 255")       // ip_ttl_err
)
