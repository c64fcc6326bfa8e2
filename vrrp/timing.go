package vrrp

import "time"

// SkewTime is RFC 5798's Skew_Time for a backup of the given priority when the master
// advertises every masterAdverInterval: ((256 - Priority) * Master_Adver_Interval) / 256.
//
// The product is taken before the division, in nanoseconds. Dividing the interval by 256
// first, in centiseconds as the RFC's units invite, truncates the skew to zero for every
// interval under 2.56s and makes all backups time out together.
func SkewTime(priority uint8, masterAdverInterval time.Duration) time.Duration {
	return time.Duration((256 - int64(priority)) * int64(masterAdverInterval) / 256)
}

// MasterDownInterval is RFC 5798's Master_Down_Interval:
// (3 * Master_Adver_Interval) + Skew_Time.
func MasterDownInterval(priority uint8, masterAdverInterval time.Duration) time.Duration {
	return 3*masterAdverInterval + SkewTime(priority, masterAdverInterval)
}
