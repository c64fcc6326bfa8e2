package vrrp

import "time"

// SkewTime is Skew_Time for a backup of the given priority when the master advertises
// every masterAdverInterval, as version v computes it:
//
//   - VRRPv3 (RFC 5798 §6.1, RFC 9568): ((256 - Priority) * Master_Adver_Interval) / 256.
//   - VRRPv2 (RFC 3768 §6.1): (256 - Priority) / 256 seconds, whatever the interval.
//     keepalived 2.2.7 computes it so for v2 (VRRP_TIMER_SKEW_CALC in vrrp.h); scaling it
//     by an interval of 2 s or more would make a vrrpd backup wait longer than a keepalived
//     backup of lower priority, which would take over first and then be preempted.
//
// The v3 product is taken before the division, in nanoseconds. Dividing the interval by
// 256 first, in centiseconds as the RFC's units invite, truncates the skew to zero for
// every interval under 2.56s and makes all backups time out together.
func (v Version) SkewTime(priority uint8, masterAdverInterval time.Duration) time.Duration {
	if v == Version2 {
		return time.Duration((256 - int64(priority)) * int64(time.Second) / 256)
	}
	return time.Duration((256 - int64(priority)) * int64(masterAdverInterval) / 256)
}

// MasterDownInterval is Master_Down_Interval as version v computes it:
// (3 * Master_Adver_Interval) + Skew_Time (RFC 5798 §6.1; RFC 3768 §6.1 with its own
// Skew_Time, see SkewTime).
func (v Version) MasterDownInterval(priority uint8, masterAdverInterval time.Duration) time.Duration {
	return 3*masterAdverInterval + v.SkewTime(priority, masterAdverInterval)
}

// SkewTime is VRRPv3's Skew_Time: Version3.SkewTime. For VRRPv2, whose skew does not
// scale with the interval, use Version2.SkewTime (or the Instance's method).
func SkewTime(priority uint8, masterAdverInterval time.Duration) time.Duration {
	return Version3.SkewTime(priority, masterAdverInterval)
}

// MasterDownInterval is VRRPv3's Master_Down_Interval: Version3.MasterDownInterval. For
// VRRPv2 use Version2.MasterDownInterval (or the Instance's method).
func MasterDownInterval(priority uint8, masterAdverInterval time.Duration) time.Duration {
	return Version3.MasterDownInterval(priority, masterAdverInterval)
}
