package vrrp

import (
	"fmt"
	"strings"
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

func TestFirstPreemptionAfterHandoverBreaksFirst(t *testing.T) {
	// A backup leaves handover-only with the top priority while a lower one is master
	// (where the takeover put the VIPs): it preempts, but adds the VIPs only once that
	// master has had HandoffDelay to hear it and remove them.
	c := handoverConfig(90)
	i := backupAt(t, c)
	n := v2Config(254)
	if _, err := i.Reconfigure(at(time.Second), n, nil); err != nil {
		t.Fatal(err)
	}
	lower := advertFor(n, 253)
	expect(t, "lower master", i.HandleAdvert(at(2*time.Second), lower, higher, nil), "")
	got := i.HandleTimer(i.Deadline(), nil)
	expect(t, "preempt", got, "Send(254) State(BACKUP->MASTER: master down timer expired) Arm(Adver_Timer@4.2598125s)") // 250 ms and 1 ms a VIP
	expect(t, "handoff", i.HandleTimer(i.Deadline(), nil),
		"Send(254) Add[10.99.0.100/24 10.99.0.101/24] Announce[10.99.0.100/24 10.99.0.101/24] Arm(Adver_Timer@5.2598125s)")

	// The next preemption is the RFC's again.
	expect(t, "higher master", i.HandleAdvert(at(6*time.Second), advertFor(n, 255), higher, nil),
		"State(MASTER->BACKUP: advertisement with higher priority) Remove[10.99.0.100/24 10.99.0.101/24] Arm(Master_Down_Timer@9.0078125s)")
	i.HandleAdvert(at(9*time.Second), lower, higher, nil)
	got = i.HandleTimer(i.Deadline(), nil)
	if describe(got) != "Send(254) State(BACKUP->MASTER: master down timer expired) Add[10.99.0.100/24 10.99.0.101/24] Announce[10.99.0.100/24 10.99.0.101/24] Arm(Adver_Timer@10.0078125s)" {
		t.Errorf("second preemption: %s", describe(got))
	}
}

func TestBreakFirstTakeoverLostBeforeTheVIPs(t *testing.T) {
	c := handoverConfig(90)
	i := backupAt(t, c)
	n := v2Config(254)
	i.Reconfigure(at(time.Second), n, nil)
	i.HandleAdvert(at(2*time.Second), advertFor(n, 253), higher, nil)
	i.HandleTimer(i.Deadline(), nil)
	// An owner appears before the VIPs were added: nothing to remove.
	expect(t, "owner", i.HandleAdvert(at(4*time.Second+10*time.Millisecond), advertFor(n, 255), higher, nil),
		"State(MASTER->BACKUP: advertisement with higher priority) Arm(Master_Down_Timer@7.0178125s)")
}

func TestNoBreakFirstWhenTheMasterIsSilent(t *testing.T) {
	// After the takeover the master goes silent: a plain master-down takeover, VIPs at once.
	c := handoverConfig(90)
	i := backupAt(t, c)
	n := v2Config(254)
	i.Reconfigure(at(time.Second), n, nil)
	got := i.HandleTimer(i.Deadline(), nil)
	if i.State() != StateMaster || !strings.Contains(describe(got), "Add[") {
		t.Errorf("silent master: %s", describe(got))
	}
}

func TestBreakFirstPreemptEveryTime(t *testing.T) {
	// With BreakFirstPreempt every preemption of a lower-priority master adds the VIPs
	// HandoffDelay after the advertisement; a master that merely went silent is still
	// replaced at once.
	c := v2Config(254)
	c.BreakFirstPreempt = true
	i := backupAt(t, c)
	lower := advertFor(c, 253)
	for round, start := range []time.Duration{2 * time.Second, 12 * time.Second} {
		expect(t, "lower master", i.HandleAdvert(at(start), lower, higher, nil), "")
		got := i.HandleTimer(i.Deadline(), nil)
		if i.State() != StateMaster || strings.Contains(describe(got), "Add[") || !strings.HasPrefix(describe(got), "Send(254)") {
			t.Fatalf("preemption %d: %s, want the advertisement first and no VIPs yet", round, describe(got))
		}
		d := i.Deadline()
		got = i.HandleTimer(d, nil)
		if !strings.Contains(describe(got), "Add[10.99.0.100/24 10.99.0.101/24]") {
			t.Fatalf("preemption %d: handoff %s", round, describe(got))
		}
		back := d.Add(time.Second)
		expect(t, "higher master", i.HandleAdvert(back, advertFor(c, 255), higher, nil),
			fmt.Sprintf("State(MASTER->BACKUP: advertisement with higher priority) Remove[10.99.0.100/24 10.99.0.101/24] Arm(Master_Down_Timer@%v)",
				back.Add(i.MasterDownInterval()).Sub(t0)))
	}
	// Silence: the VIPs at once.
	got := i.HandleTimer(i.Deadline(), nil)
	if i.State() != StateMaster || !strings.Contains(describe(got), "Add[") {
		t.Errorf("silent master: %s", describe(got))
	}
}

// breakFirstPending is a BreakFirstPreempt backup at 254 that has just preempted a master
// at 253 (heard at 2 s): Master, its VIPs not yet added; the takeover's time.
func breakFirstPending(t *testing.T, noAdvert bool) (*Instance, *Advertisement, time.Time) {
	t.Helper()
	c := v2Config(254)
	c.BreakFirstPreempt = true
	c.LowerPrioNoAdvert = noAdvert
	i := backupAt(t, c)
	lower := advertFor(c, 253)
	i.HandleAdvert(at(2*time.Second), lower, higher, nil)
	took := i.Deadline()
	i.HandleTimer(took, nil)
	if i.State() != StateMaster || !i.VIPsPending() {
		t.Fatalf("not a break-first master: %v, pending %v", i.State(), i.VIPsPending())
	}
	if want := took.Add(HandoffDelay(c.AdvertInterval) + time.Duration(len(c.VIPs))*HandoffPerAddress); !i.Deadline().Equal(want) {
		t.Fatalf("VIPs due at %v, want HandoffDelay and HandoffPerAddress a VIP after the takeover, %v", i.Deadline().Sub(t0), want.Sub(t0))
	}
	return i, lower, took
}

func TestBreakFirstWaitsWhileThePreemptedMasterIsHeard(t *testing.T) {
	// The preempted master's advertisement arrives after the takeover (it had not heard
	// ours yet, or it advertises while it removes the VIPs): this router answers it at
	// once and adds the VIPs HandoffDelay after it, not after its own advertisement.
	i, lower, took := breakFirstPending(t, false)
	heard := took.Add(200 * time.Millisecond)
	wait := HandoffDelay(i.Config().AdvertInterval) + time.Duration(len(i.Config().VIPs))*HandoffPerAddress
	expect(t, "the preempted master still advertising", i.HandleAdvert(heard, lower, higher, nil),
		fmt.Sprintf("Send(254) Arm(Adver_Timer@%v)", heard.Add(HandoffDelay(i.Config().AdvertInterval)).Sub(t0)))
	expect(t, "the first wait's end", i.HandleTimer(took.Add(wait), nil), "")
	if !i.VIPsPending() {
		t.Fatal("VIPs added at the first wait's end, beside a master heard since")
	}
	got := i.HandleTimer(heard.Add(HandoffDelay(i.Config().AdvertInterval)), nil)
	if !strings.Contains(describe(got), "Add[10.99.0.100/24 10.99.0.101/24]") || i.VIPsPending() {
		t.Errorf("HandoffDelay after the last advertisement heard: %s", describe(got))
	}

	// Heard right after the takeover, the preempted master does not cut the first wait
	// short: it covers the removal of the addresses.
	i, lower, took = breakFirstPending(t, false)
	i.HandleAdvert(took.Add(time.Millisecond), lower, higher, nil)
	if i.Deadline().Sub(took) != wait {
		t.Errorf("heard at once: VIPs due %v after the takeover, want the first wait, %v", i.Deadline().Sub(took), wait)
	}
}

func TestBreakFirstAddsAfterThreeMasterDownIntervalsAtMost(t *testing.T) {
	// A preempted master that never hears this router keeps advertising (and serving the
	// VIPs): they go on three Master_Down_Intervals after the takeover anyway (make before
	// break, as RFC 5798 does every time), not never. With lower_prio_no_advert nothing is
	// sent in answer.
	for _, noAdvert := range []bool{false, true} {
		i, lower, took := breakFirstPending(t, noAdvert)
		by := took.Add(3 * i.MasterDownInterval())
		var added time.Time
		for now := took.Add(100 * time.Millisecond); now.Before(by.Add(2 * time.Second)); now = now.Add(100 * time.Millisecond) {
			got := i.HandleAdvert(now, lower, higher, nil)
			if noAdvert == strings.Contains(describe(got), "Send(") {
				t.Fatalf("lower_prio_no_advert %v: answer to a lower priority %s", noAdvert, describe(got))
			}
			if i.Deadline().After(by) {
				t.Fatalf("VIPs due at %v, past three Master_Down_Intervals after the takeover (%v)", i.Deadline().Sub(t0), by.Sub(t0))
			}
			if got := i.HandleTimer(now, nil); strings.Contains(describe(got), "Add[") {
				added = now
				break
			}
		}
		if added.IsZero() || added.Before(by) || added.Sub(by) > 100*time.Millisecond {
			t.Errorf("lower_prio_no_advert %v: VIPs added at %v, want at the first wake-up from %v", noAdvert, added.Sub(t0), by.Sub(t0))
		}
	}
}

func TestBreakFirstWaitGrowsWithTheAddresses(t *testing.T) {
	// A preempted master of a shared router removes hundreds of addresses: the wait adds
	// HandoffPerAddress for each (its VIPs, or HandoffAddresses when the daemon holds
	// more), up to one Master_Down_Interval; the adverts go on every interval meanwhile,
	// or the other routers would time this one out during a wait as long as their
	// patience.
	for _, c := range []struct {
		addresses int
		want      time.Duration
	}{
		{0, 250*time.Millisecond + 2*HandoffPerAddress}, // the two VIPs
		{180, 250*time.Millisecond + 180*HandoffPerAddress},
		{5000, 0}, // capped: one Master_Down_Interval
	} {
		cfg := v2Config(254)
		cfg.BreakFirstPreempt = true
		cfg.HandoffAddresses = c.addresses
		i := backupAt(t, cfg)
		i.HandleAdvert(at(2*time.Second), advertFor(cfg, 253), higher, nil)
		took := i.Deadline()
		i.HandleTimer(took, nil)
		want := c.want
		if want == 0 {
			want = i.MasterDownInterval()
		}
		prev, adverts := took, 0
		for i.VIPsPending() && adverts < 10 {
			next := i.Deadline()
			if gap := next.Sub(prev); gap > cfg.AdvertInterval {
				t.Fatalf("%d addresses: no advert for %v while the VIPs wait", c.addresses, gap)
			}
			got := describe(i.HandleTimer(next, nil))
			if !strings.HasPrefix(got, "Send(254)") {
				t.Fatalf("%d addresses: Adver_Timer at %v: %s", c.addresses, next.Sub(t0), got)
			}
			adverts++
			if strings.Contains(got, "Add[") && next.Sub(took) != want {
				t.Errorf("%d addresses: VIPs added %v after the takeover, want %v", c.addresses, next.Sub(took), want)
			}
			prev = next
		}
		if i.VIPsPending() {
			t.Errorf("%d addresses: VIPs still pending after %d adverts", c.addresses, adverts)
		}
	}
}
