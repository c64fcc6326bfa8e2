package config

import (
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// keepalived 2.2.7's built-in defaults (keepalived/vrrp/vrrp_parser.c, global_data.c).
const (
	DefaultPriority          = 100
	DefaultVersion           = vrrp.Version2
	DefaultAdvertInterval    = time.Second
	DefaultGARPMasterDelay   = 5 * time.Second
	DefaultGARPMasterRepeat  = 5
	DefaultGARPMasterRefresh = 0
	DefaultGARPRefreshRepeat = 1
	DefaultGARPInterval      = 0
	DefaultGNAInterval       = 0
	DefaultInitialState      = StateBackup
	DefaultPreempt           = true
	DefaultAcceptMode        = true
	maxAuthPass              = 8
	maxAdvertIntervalV2      = 255 * time.Second
	maxAdvertIntervalV3      = 4095 * 10 * time.Millisecond
)

// Limits of the numbers that drive work or waiting, one set for keepalived.conf, YAML and
// a KeepalivedGroup's verbatim keywords (api/v1alpha1's VerbatimNumberLimit holds the
// operator to the same; TestLimitsAgreeWithAPI checks). keepalived 2.2.7 reads the repeat
// counts up to UINT_MAX, and vrrpd queues announcements lazily (package garp), yet every
// round is a frame per VIP on the wire: 255 rounds is far beyond any use (keepalived's
// default is 5) and bounds what one Service can make every member send. The delays are
// keepalived's own limit (UINT_MAX microseconds, in whole seconds); the refresh period is
// at least a second, as keepalived's whole seconds make it, and tighter than its UINT_MAX.
const (
	MaxGARPRepeat  = 255
	MaxGARPDelay   = 4294 * time.Second
	MaxGARPRefresh = (1<<31 - 1) * time.Second
	// MaxGARPInterval bounds vrrp_garp_interval and vrrp_gna_interval.
	MaxGARPInterval = 1000 * time.Second
)

// DefaultGARP returns keepalived's default announcement settings.
func DefaultGARP() GARP {
	return GARP{
		MasterDelay:         DefaultGARPMasterDelay,
		MasterRepeat:        DefaultGARPMasterRepeat,
		MasterRefresh:       DefaultGARPMasterRefresh,
		MasterRefreshRepeat: DefaultGARPRefreshRepeat,
		Interval:            DefaultGARPInterval,
		NAInterval:          DefaultGNAInterval,
	}
}
