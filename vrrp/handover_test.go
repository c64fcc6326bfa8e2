package vrrp

import (
	"testing"
	"time"
)

// handoverConfig is a keepalived-operator pod's virtual router as vrrpd shadows it:
// VRRPv2 with a password, nopreempt, below keepalived's priority 100, handover only.
func handoverConfig(prio uint8) Config {
	c := v2Config(prio)
	c.Preempt = false
	c.HandoverOnly = true
	return c
}

func TestHandoverOnlyNeverTimesOut(t *testing.T) {
	c := handoverConfig(90)
	i := mustInstance(t, c)
	expect(t, "Start", i.Start(t0, nil), "State(INIT->BACKUP: startup) Stop")
	if i.Timer() != TimerNone {
		t.Fatalf("timer %v armed after startup", i.Timer())
	}
	// Silence for far longer than Master_Down_Interval: still Backup.
	expect(t, "HandleTimer", i.HandleTimer(at(time.Hour), nil), "")
	if i.State() != StateBackup {
		t.Fatalf("state %v after an hour of silence, want BACKUP", i.State())
	}
	// The old master advertises: noted, no timer.
	expect(t, "advert 100", i.HandleAdvert(at(time.Second), advertFor(c, 100), higher, nil), "Stop")
	if i.Master() != higher || i.MasterPriority() != 100 {
		t.Errorf("master %v/%d, want %v/100", i.Master(), i.MasterPriority(), higher)
	}
}

func TestHandoverOnlyTakesOverOnPriorityZero(t *testing.T) {
	c := handoverConfig(90)
	i := backupAt(t, c)
	i.HandleAdvert(at(time.Second), advertFor(c, 100), higher, nil)
	// keepalived stops: priority 0, then Skew_Time (256-90)/256 s.
	expect(t, "priority 0", i.HandleAdvert(at(2*time.Second), advertFor(c, 0), higher, nil),
		"Arm(Master_Down_Timer@2.6484375s)")
	got := i.HandleTimer(i.Deadline(), nil)
	if i.State() != StateMaster {
		t.Fatalf("state %v after Skew_Time, want MASTER: %s", i.State(), describe(got))
	}
}

func TestHandoverOnlyYieldsToAFasterTakeover(t *testing.T) {
	// Another router (a keepalived pod still running, priority 100, shorter Skew_Time)
	// takes over first: its advertisement cancels our Skew_Time.
	c := handoverConfig(90)
	i := backupAt(t, c)
	i.HandleAdvert(at(2*time.Second), advertFor(c, 0), higher, nil)
	expect(t, "new master", i.HandleAdvert(at(2*time.Second+600*time.Millisecond), advertFor(c, 100), lowerIP, nil), "Stop")
	expect(t, "old deadline", i.HandleTimer(at(time.Hour), nil), "")
	if i.State() != StateBackup {
		t.Fatalf("state %v, want BACKUP", i.State())
	}
}

func TestHandoverOnlyMasterPreemptedStaysQuiet(t *testing.T) {
	c := handoverConfig(90)
	i := backupAt(t, c)
	i.HandleAdvert(at(time.Second), advertFor(c, 0), higher, nil)
	i.HandleTimer(i.Deadline(), nil)
	got := i.HandleAdvert(at(3*time.Second), advertFor(c, 100), higher, nil)
	expect(t, "higher master", got,
		"State(MASTER->BACKUP: advertisement with higher priority) Remove[10.99.0.100/24 10.99.0.101/24] Stop")
}

func TestLeavingHandoverOnly(t *testing.T) {
	t.Run("backup arms Master_Down_Timer", func(t *testing.T) {
		c := handoverConfig(90)
		i := backupAt(t, c)
		n := c
		n.HandoverOnly = false
		n.Preempt = true
		got, err := i.Reconfigure(at(10*time.Second), n, nil)
		if err != nil {
			t.Fatal(err)
		}
		// 3s + (256-90)/256 s
		expect(t, "Reconfigure", got, "Arm(Master_Down_Timer@13.6484375s)")
	})
	t.Run("master moving to v3 stays master", func(t *testing.T) {
		c := handoverConfig(90)
		c.AuthType, c.AuthPass = AuthNone, ""
		i := backupAt(t, c)
		i.HandleAdvert(at(time.Second), advertFor(c, 0), higher, nil)
		i.HandleTimer(i.Deadline(), nil)
		n := v3Config(254)
		got, err := i.Reconfigure(at(5*time.Second), n, nil)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "Reconfigure", got, "Send(254) Arm(Adver_Timer@6s)")
		if i.State() != StateMaster || i.Config().Version != Version3 || i.Priority() != 254 {
			t.Errorf("state %v version %v priority %d, want MASTER v3 254", i.State(), i.Config().Version, i.Priority())
		}
	})
	t.Run("backup moving to v3 restarts", func(t *testing.T) {
		c := handoverConfig(90)
		c.AuthType, c.AuthPass = AuthNone, ""
		i := backupAt(t, c)
		got, err := i.Reconfigure(at(5*time.Second), v3Config(254), nil)
		if err != nil {
			t.Fatal(err)
		}
		// 3s + (256-254)/256 s
		expect(t, "Reconfigure", got,
			"State(BACKUP->INIT: shutdown) Stop State(INIT->BACKUP: reconfigured) Arm(Master_Down_Timer@8.0078125s)")
	})
	t.Run("without handover a version change still restarts a master", func(t *testing.T) {
		c := v2Config(90)
		c.AuthType, c.AuthPass = AuthNone, ""
		i, _ := masterAt(t, c)
		got, err := i.Reconfigure(at(10*time.Second), v3Config(254), nil)
		if err != nil {
			t.Fatal(err)
		}
		if i.State() != StateBackup {
			t.Errorf("state %v, want BACKUP after the restart: %s", i.State(), describe(got))
		}
	})
}
