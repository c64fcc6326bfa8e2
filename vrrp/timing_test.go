package vrrp

import (
	"testing"
	"time"
)

// TestV2SkewTimeIsSeconds checks RFC 3768 §6.1's Skew_Time, (256 - Priority) / 256 seconds
// whatever the interval, as keepalived 2.2.7 computes it for v2, against RFC 5798's, which
// scales with Master_Adver_Interval.
func TestV2SkewTimeIsSeconds(t *testing.T) {
	tests := []struct {
		v        Version
		prio     uint8
		interval time.Duration
		skew     time.Duration
	}{
		{Version2, 100, time.Second, 609375 * time.Microsecond},
		{Version2, 100, 3 * time.Second, 609375 * time.Microsecond},
		{Version2, 150, 3 * time.Second, 414062500 * time.Nanosecond},
		{Version2, 1, 255 * time.Second, 996093750 * time.Nanosecond},
		{Version2, 255, 10 * time.Second, time.Second / 256},
		// v3: (256-100) * 3s / 256 = 1.828125s
		{Version3, 100, 3 * time.Second, 1828125 * time.Microsecond},
	}
	for _, tt := range tests {
		if got := tt.v.SkewTime(tt.prio, tt.interval); got != tt.skew {
			t.Errorf("v%d SkewTime(%d, %v) = %v, want %v", tt.v, tt.prio, tt.interval, got, tt.skew)
		}
		if got, want := tt.v.MasterDownInterval(tt.prio, tt.interval), 3*tt.interval+tt.skew; got != want {
			t.Errorf("v%d MasterDownInterval(%d, %v) = %v, want %v", tt.v, tt.prio, tt.interval, got, want)
		}
	}
	if SkewTime(100, 3*time.Second) != Version3.SkewTime(100, 3*time.Second) ||
		MasterDownInterval(100, 3*time.Second) != Version3.MasterDownInterval(100, 3*time.Second) {
		t.Error("the package-level functions are not VRRPv3's")
	}
}

// TestV2BackupTimersAtAdvertInt3 runs a VRRPv2 backup at advert_int 3 through the events
// that arm Master_Down_Timer: startup, an advertisement, priority 0, and stepping down
// from Master. Each must use the v2 Skew_Time of 0.609375s (priority 100), not the
// 1.828125s a v3-style skew would give, or a keepalived backup of lower priority times out
// first and is then preempted: a double transition.
func TestV2BackupTimersAtAdvertInt3(t *testing.T) {
	c := v2Config(100)
	c.AdvertInterval = 3 * time.Second
	i := mustInstance(t, c)
	expect(t, "Start", i.Start(t0, nil), "State(INIT->BACKUP: startup) Arm(Master_Down_Timer@9.609375s)")
	if i.SkewTime() != 609375*time.Microsecond || i.MasterDownInterval() != 9609375*time.Microsecond {
		t.Errorf("SkewTime %v MasterDownInterval %v", i.SkewTime(), i.MasterDownInterval())
	}
	expect(t, "advert", i.HandleAdvert(at(time.Second), advertFor(c, 200), higher, nil),
		"Arm(Master_Down_Timer@10.609375s)")
	expect(t, "priority 0", i.HandleAdvert(at(2*time.Second), advertFor(c, 0), higher, nil),
		"Arm(Master_Down_Timer@2.609375s)")

	m, now := masterAt(t, c)
	expect(t, "stepping down", m.HandleAdvert(now, advertFor(c, 150), higher, nil),
		"State(MASTER->BACKUP: advertisement with higher priority) Remove[10.99.0.100/24 10.99.0.101/24] Arm(Master_Down_Timer@19.21875s)")

	// The order keepalived relies on: at advert_int 3 a vrrpd backup of priority 150
	// times out before a keepalived one of 100 (9.4140625s < 9.609375s) and after one of
	// 200 (9.21875s).
	v := i.Config().Version
	if !(v.MasterDownInterval(200, 3*time.Second) < v.MasterDownInterval(150, 3*time.Second) &&
		v.MasterDownInterval(150, 3*time.Second) < v.MasterDownInterval(100, 3*time.Second)) {
		t.Error("v2 Master_Down_Interval does not order backups by priority")
	}
}
