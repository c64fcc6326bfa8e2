package vrrp

import "errors"

// Counters are one virtual router's statistics, with the meanings of keepalived's
// vrrp_stats (and of the keepalived_exporter metrics built on them), plus a few of vrrpd's
// own that keepalived folds elsewhere.
type Counters struct {
	AdvertRcvd    uint64 // valid advertisements received
	AdvertSent    uint64 // advertisements sent
	BecomeMaster  uint64 // transitions to Master
	ReleaseMaster uint64 // transitions out of Master
	PacketLenErr  uint64 // packet too short, or length not matching the address count
	// AdvertIntervalErr: v2 interval differing from ours, v3 interval of zero. keepalived
	// 2.2.7 exports this counter but never increments it (it drops a v2 mismatch
	// uncounted); vrrpd gives it the meaning of RFC 2787's vrrpStatsAdvertiseIntervalErrors.
	AdvertIntervalErr uint64
	IPTTLErr          uint64 // TTL / hop limit not 255
	InvalidTypeRcvd   uint64 // message type other than Advertisement
	AddrListErr       uint64 // address list differing from ours, or no address at all
	InvalidAuthType   uint64 // v2 auth type not 0 or 1
	AuthTypeMismatch  uint64 // v2 auth type differing from ours
	AuthFailure       uint64 // v2 password differing from ours
	PriZeroRcvd       uint64 // priority-0 advertisements received
	PriZeroSent       uint64 // priority-0 advertisements sent

	// vrrpd's own, exported with a vrrpd_ prefix. keepalived drops these packets too but
	// counts them only in its SNMP MIBs (vrrpStatsChecksumErrors, vrrpStatsVersionErrors),
	// not in vrrp_stats.
	ChecksumErr uint64 // checksum mismatch
	VersionErr  uint64 // version other than the instance's
}

// CountError adds one to the counter that err (a decoding error of this package, possibly
// wrapped) feeds, and reports whether err was one of them.
func (c *Counters) CountError(err error) bool {
	switch {
	case errors.Is(err, ErrPacketLength), errors.Is(err, ErrAddressCount):
		c.PacketLenErr++
	case errors.Is(err, ErrInvalidType):
		c.InvalidTypeRcvd++
	case errors.Is(err, ErrVersion):
		c.VersionErr++
	case errors.Is(err, ErrChecksum):
		c.ChecksumErr++
	case errors.Is(err, ErrNoAddresses):
		c.AddrListErr++
	case errors.Is(err, ErrAdvertIntervalZero):
		c.AdvertIntervalErr++
	case errors.Is(err, ErrAuthTypeMismatch):
		c.AuthTypeMismatch++
	case errors.Is(err, ErrInvalidAuthType):
		c.InvalidAuthType++
	case errors.Is(err, ErrAuthFailure):
		c.AuthFailure++
	case errors.Is(err, ErrTTL):
		c.IPTTLErr++
	default:
		return false
	}
	return true
}
