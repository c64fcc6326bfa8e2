package config

import (
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/keyword"
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
	DefaultDownTimerAdverts  = 3
	maxAuthPass              = 8
	maxAdvertIntervalV2      = 255 * time.Second
	maxAdvertIntervalV3      = 4095 * 10 * time.Millisecond
)

// Limits of the numbers that drive work or waiting, one set for keepalived.conf, YAML and
// a KeepalivedGroup's verbatim keywords: the keyword table's (package keyword, which the
// operator's check of a Service's verbatim keywords reads too).
const (
	MaxGARPRepeat  = keyword.MaxGARPRepeat
	MaxGARPDelay   = keyword.MaxGARPDelay
	MaxGARPRefresh = keyword.MaxGARPRefresh
	// MaxGARPInterval bounds vrrp_garp_interval and vrrp_gna_interval.
	MaxGARPInterval = keyword.MaxGARPInterval
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
