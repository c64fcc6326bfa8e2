package garp

import (
	"fmt"
	"time"
)

// Settings are keepalived's gratuitous ARP / NA knobs (global_defs
// vrrp_garp_* and vrrp_gna_interval, or the per-instance garp_* forms).
type Settings struct {
	// MasterDelay (vrrp_garp_master_delay) is how long after becoming master
	// the second burst goes out; 0 means no second burst. Default 5 s.
	MasterDelay time.Duration
	// MasterRepeat (vrrp_garp_master_repeat) is how many rounds each burst
	// after becoming master sends. Default 5.
	MasterRepeat int
	// MasterRefresh (vrrp_garp_master_refresh) is the period of refresh
	// bursts while master; 0 (the default) means none.
	MasterRefresh time.Duration
	// MasterRefreshRepeat (vrrp_garp_master_refresh_repeat) is how many
	// rounds a refresh burst sends. Default 1.
	MasterRefreshRepeat int
	// Interval (vrrp_garp_interval) spaces gratuitous ARPs on one interface:
	// the k-th of a run never goes before the run's start plus k intervals (a
	// sender woken late may send the slots it missed back to back: pacer); 0
	// (default) sends them back to back.
	Interval time.Duration
	// NAInterval (vrrp_gna_interval) is the same for neighbour
	// advertisements.
	NAInterval time.Duration
}

// Defaults returns keepalived 2.2.7's defaults.
func Defaults() Settings {
	return Settings{
		MasterDelay:         5 * time.Second,
		MasterRepeat:        5,
		MasterRefresh:       0,
		MasterRefreshRepeat: 1,
		Interval:            0,
		NAInterval:          0,
	}
}

// validate reports a setting keepalived would reject.
func (s Settings) validate() error {
	switch {
	case s.MasterDelay < 0:
		return fmt.Errorf("garp: master delay %v is negative", s.MasterDelay)
	case s.MasterRepeat < 0:
		return fmt.Errorf("garp: master repeat %d is negative", s.MasterRepeat)
	case s.MasterRefresh < 0:
		return fmt.Errorf("garp: master refresh %v is negative", s.MasterRefresh)
	case s.MasterRefreshRepeat < 1:
		// keepalived raises anything below 1 to 1; the config layer does
		// the same, with a warning.
		return fmt.Errorf("garp: master refresh repeat %d is below 1", s.MasterRefreshRepeat)
	case s.Interval < 0 || s.NAInterval < 0:
		return fmt.Errorf("garp: negative interval")
	}
	return nil
}
