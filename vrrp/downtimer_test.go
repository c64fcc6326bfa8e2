package vrrp

import (
	"testing"
	"time"
)

// TestDownTimerAdverts: keepalived's down_timer_adverts sets how many intervals of
// silence make the master down: a backup's Master_Down_Timer runs N * Master_Adver_Interval
// + Skew_Time from the start and from each advertisement, and 0 is RFC 5798's 3.
func TestDownTimerAdverts(t *testing.T) {
	skew := SkewTime(100, time.Second) // 156/256 s
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{{0, 3*time.Second + skew}, {3, 3*time.Second + skew}, {1, time.Second + skew}, {10, 10*time.Second + skew}} {
		c := v3Config(100)
		c.DownTimerAdverts = tt.n
		i := backupAt(t, c)
		if got := i.Deadline().Sub(t0); got != tt.want || i.MasterDownInterval() != tt.want {
			t.Errorf("down_timer_adverts %d: Master_Down_Timer after %v (interval %v), want %v", tt.n, got, i.MasterDownInterval(), tt.want)
		}
		heard := t0.Add(500 * time.Millisecond)
		i.HandleAdvert(heard, advertFor(c, 200), higher, nil)
		// The backup's own priority sets the skew; the master's interval is the same 1s.
		if got := i.Deadline().Sub(heard); got != tt.want {
			t.Errorf("down_timer_adverts %d: after an advertisement, %v, want %v", tt.n, got, tt.want)
		}
		if i.State() != StateBackup {
			t.Fatalf("state %v", i.State())
		}
		d := i.Deadline()
		if out := i.HandleTimer(d.Add(-time.Nanosecond), nil); len(out) != 0 || i.State() != StateBackup {
			t.Errorf("down_timer_adverts %d: took over early: %v", tt.n, out)
		}
		i.HandleTimer(d, nil)
		if i.State() != StateMaster {
			t.Errorf("down_timer_adverts %d: state %v at the deadline, want MASTER", tt.n, i.State())
		}
	}
	c := v3Config(100)
	c.DownTimerAdverts = MaxDownTimerAdverts + 1
	if err := c.Validate(); err == nil {
		t.Error("down timer adverts beyond keepalived's 100 accepted")
	}
}
