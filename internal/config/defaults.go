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
