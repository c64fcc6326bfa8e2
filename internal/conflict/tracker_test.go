package conflict

import (
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func targets(n int) []Target {
	ts := make([]Target, n)
	for i := range ts {
		ts[i] = Target{Addr: netip.AddrFrom4([4]byte{10, 99, byte(i / 250), byte(1 + i%250)}), Dev: "eth0",
			Instance: fmt.Sprintf("VI_%d", i), Intf: "eth0", VRID: uint8(1 + i%255)}
	}
	return ts
}

type probeAt struct {
	k  key
	at time.Time
}

// drive runs tr on a virtual clock from from to to, waking when nextWake says, and lets
// answer say which MACs answer each probe (at once). It returns every probe sent.
func drive(tr *tracker, from, to time.Time, answer func(k key, at time.Time) []string) []probeAt {
	var out []probeAt
	for now := from; now.Before(to); {
		for _, k := range tr.probes(now) {
			out = append(out, probeAt{k, now})
			if answer != nil {
				for _, mac := range answer(k, now) {
					tr.observe(k.addr, k.dev, mac, now)
				}
			}
		}
		at, ok := tr.nextWake()
		if !ok {
			break
		}
		if !at.After(now) {
			at = now.Add(time.Microsecond)
		}
		now = at
	}
	return out
}

// TestPacing: each held VIP is probed once per Interval, the first time settle after it
// became held, while the rate cap allows; beyond Rate × Interval VIPs the round stretches
// to n / Rate; the probes go in batches at least a tick apart (at most four wake-ups a
// second) and never more than the cap, whatever the number of VIPs.
func TestPacing(t *testing.T) {
	for _, tc := range []struct {
		n          int
		wantPeriod time.Duration
	}{
		{1, DefaultInterval},
		{3, DefaultInterval},
		{100, DefaultInterval},                   // exactly Rate × Interval
		{255, 255 * time.Second / DefaultRate},   // 5.1 s
		{1000, 1000 * time.Second / DefaultRate}, // 20 s
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			tr := newTracker(Settings{})
			tr.setHeld(targets(tc.n), t0)
			span := 5*tc.wantPeriod + settle
			probes := drive(tr, t0, t0.Add(span), nil)
			per := map[key][]time.Time{}
			for _, p := range probes {
				per[p.k] = append(per[p.k], p.at)
			}
			if len(per) != tc.n {
				t.Fatalf("%d of %d VIPs probed", len(per), tc.n)
			}
			for k, ats := range per {
				if ats[0].Before(t0.Add(settle)) {
					t.Fatalf("%v first probed %v after it was held, before settle %v", k.addr, ats[0].Sub(t0), settle)
				}
				for i := 1; i < len(ats); i++ {
					gap := ats[i].Sub(ats[i-1])
					// Probes go in a batch a tick: a VIP's gap is its period give or take
					// a tick.
					slop := tick + time.Millisecond
					if gap < tc.wantPeriod-slop || gap > tc.wantPeriod+slop {
						t.Fatalf("%v probed %v after its previous probe, want %v", k.addr, gap, tc.wantPeriod)
					}
				}
			}
			// The cap: in any second, at most Rate probes, plus the batch a wake-up
			// spends at once; and no two batches closer than a tick.
			batch := int(math.Ceil(DefaultRate * tick.Seconds()))
			for i := range probes {
				j := i
				for j < len(probes) && probes[j].at.Sub(probes[i].at) < time.Second {
					j++
				}
				if j-i > DefaultRate+batch {
					t.Fatalf("%d probes within a second from %v", j-i, probes[i].at.Sub(t0))
				}
			}
			wakes := 0
			for i := range probes {
				if i > 0 && probes[i].at.Equal(probes[i-1].at) {
					continue
				}
				wakes++
				if i > 0 && probes[i].at.Sub(probes[i-1].at) < tick {
					t.Fatalf("batches %v apart at %v: want a tick (%v) at least", probes[i].at.Sub(probes[i-1].at), probes[i].at.Sub(t0), tick)
				}
			}
			if perSec := float64(wakes) / span.Seconds(); perSec > float64(time.Second/tick) {
				t.Errorf("%.1f wake-ups with probes a second, want at most %v", perSec, time.Second/tick)
			}
			t.Logf("%d VIPs: %d probes in %v, each VIP every %v", tc.n, len(probes), span, tc.wantPeriod)
		})
	}
}

// TestPacingNoWakeWhenNothingHeld: nothing held, nothing to wake for.
func TestPacingNoWakeWhenNothingHeld(t *testing.T) {
	tr := newTracker(Settings{})
	if _, ok := tr.nextWake(); ok {
		t.Error("a wake-up with nothing held")
	}
	tr.setHeld(targets(2), t0)
	tr.setHeld(nil, t0.Add(time.Second))
	if _, ok := tr.nextWake(); ok {
		t.Error("a wake-up after the held set emptied")
	}
}

const otherMAC = "52:54:00:00:00:02"

// TestConflictConfirmedAndCleared: a MAC answering the probes of a held VIP is a conflict
// once it answered a probe sent confirmAfter after it was first seen, reported once, and
// it ends after clearMisses probes it did not answer; one missed answer does not end it.
func TestConflictConfirmedAndCleared(t *testing.T) {
	tr := newTracker(Settings{})
	ts := targets(1)
	tr.setHeld(ts, t0)
	answering := true
	var missOnce bool
	answer := func(k key, at time.Time) []string {
		if missOnce {
			missOnce = false
			return nil
		}
		if answering {
			return []string{otherMAC}
		}
		return nil
	}
	drive(tr, t0, t0.Add(settle+10*time.Millisecond), answer) // the first probe: a suspect
	if c := tr.conflicts(); len(c) != 0 || len(tr.takeChanges()) != 0 {
		t.Fatalf("a conflict after one answer: %+v", c)
	}
	drive(tr, t0.Add(settle+10*time.Millisecond), t0.Add(5*time.Second), answer)
	cs := tr.conflicts()
	if len(cs) != 1 || cs[0].MAC != otherMAC || cs[0].Addr != ts[0].Addr || cs[0].Instance != ts[0].Instance {
		t.Fatalf("conflicts %+v", cs)
	}
	confirmed := cs[0].Since.Sub(t0)
	if confirmed > settle+answerWindow+10*time.Millisecond {
		t.Errorf("confirmed %v after holding, want at the second probe (%v)", confirmed, settle+answerWindow)
	}
	ch := tr.takeChanges()
	if len(ch) != 1 || !ch[0].Start {
		t.Fatalf("changes %+v, want one start", ch)
	}
	// While it lasts the VIP is probed once a window.
	probes := drive(tr, t0.Add(5*time.Second), t0.Add(10*time.Second), answer)
	if len(probes) < 4 || len(probes) > 6 {
		t.Errorf("%d probes in 5 s of conflict, want one a second", len(probes))
	}
	missOnce = true
	drive(tr, t0.Add(10*time.Second), t0.Add(13*time.Second), answer)
	if len(tr.conflicts()) != 1 || len(tr.takeChanges()) != 0 {
		t.Fatal("one missed answer ended the conflict")
	}
	answering = false
	stopped := t0.Add(13 * time.Second)
	var ended time.Time
	for now := stopped; now.Before(stopped.Add(10 * time.Second)); now = now.Add(10 * time.Millisecond) {
		drive(tr, now, now.Add(10*time.Millisecond), answer)
		if len(tr.conflicts()) == 0 {
			ended = now
			break
		}
	}
	if ended.IsZero() {
		t.Fatal("the conflict never ended")
	}
	if d := ended.Sub(stopped); d > clearMisses*answerWindow+answerWindow {
		t.Errorf("ended %v after the answers stopped", d)
	}
	if ch := tr.takeChanges(); len(ch) != 1 || ch[0].Start || ch[0].MAC != otherMAC {
		t.Errorf("changes %+v, want one end", ch)
	}
}

// TestPreemptedMasterNoConflict: the old master hears the new master's gratuitous ARP a
// moment before it steps down: a suspect, never a conflict, and gone with the VIP.
func TestPreemptedMasterNoConflict(t *testing.T) {
	tr := newTracker(Settings{})
	ts := targets(1)
	tr.setHeld(ts, t0)
	drive(tr, t0, t0.Add(30*time.Second), nil) // held a while, nobody else
	now := t0.Add(30 * time.Second)
	tr.observe(ts[0].Addr, ts[0].Dev, otherMAC, now) // the new master's GARP
	drive(tr, now, now.Add(2*time.Millisecond), nil)
	tr.setHeld(nil, now.Add(2*time.Millisecond)) // stepped down
	tr.observe(ts[0].Addr, ts[0].Dev, otherMAC, now.Add(5*time.Millisecond))
	drive(tr, now.Add(5*time.Millisecond), now.Add(10*time.Second), func(key, time.Time) []string { return []string{otherMAC} })
	if c, ch := tr.conflicts(), tr.takeChanges(); len(c) != 0 || len(ch) != 0 {
		t.Errorf("conflicts %+v, changes %+v", c, ch)
	}
}

// TestGratuitousOnlyIsNoConflict: announcements alone, outside any probe's window, and a
// confirming probe nobody answers: no conflict (a takeover's GARP burst, 5 s apart).
func TestGratuitousOnlyIsNoConflict(t *testing.T) {
	tr := newTracker(Settings{})
	ts := targets(1)
	tr.setHeld(ts, t0)
	for now := t0; now.Before(t0.Add(20 * time.Second)); now = now.Add(10 * time.Millisecond) {
		if now.Sub(t0)%(5*time.Second) == 0 {
			tr.observe(ts[0].Addr, ts[0].Dev, otherMAC, now)
		}
		drive(tr, now, now.Add(10*time.Millisecond), nil)
	}
	if c := tr.conflicts(); len(c) != 0 {
		t.Errorf("conflicts %+v from announcements nobody confirmed", c)
	}
}

// TestNewHolderSettles: a new holder's probes wait settle, and answers to nothing (before
// its first probe) confirm nothing: the master it replaced may still be stepping down.
func TestNewHolderSettles(t *testing.T) {
	tr := newTracker(Settings{})
	ts := targets(1)
	tr.setHeld(ts, t0)
	tr.observe(ts[0].Addr, ts[0].Dev, otherMAC, t0.Add(time.Millisecond))
	tr.observe(ts[0].Addr, ts[0].Dev, otherMAC, t0.Add(600*time.Millisecond))
	probes := drive(tr, t0, t0.Add(settle-time.Millisecond), nil)
	if len(probes) != 0 {
		t.Errorf("probed %v after becoming holder", probes[0].at.Sub(t0))
	}
	if len(tr.conflicts()) != 0 {
		t.Error("a conflict before the first probe")
	}
}

// TestSharedVIPConflictPerHolder: a VIP two instances hold is probed once and its
// conflict reported for each; evidence for a VIP not held is ignored.
func TestSharedVIPConflictPerHolder(t *testing.T) {
	tr := newTracker(Settings{})
	a := targets(1)[0]
	b := a
	b.Instance, b.VRID = "VI_B", 9
	tr.setHeld([]Target{a, b}, t0)
	tr.observe(netip.MustParseAddr("10.99.9.9"), "eth0", otherMAC, t0.Add(settle))
	probes := drive(tr, t0, t0.Add(4*time.Second), func(key, time.Time) []string { return []string{otherMAC} })
	seen := map[time.Time]int{}
	for _, p := range probes {
		if seen[p.at]++; seen[p.at] > 1 {
			t.Fatalf("the shared VIP probed twice at %v", p.at.Sub(t0))
		}
	}
	cs := tr.conflicts()
	if len(cs) != 2 || cs[0].Instance != "VI_0" || cs[1].Instance != "VI_B" {
		t.Fatalf("conflicts %+v, want one per holder", cs)
	}
}

// TestPacingShortInterval: an interval shorter than an answer window probes once a
// window, and the tracker never asks to be woken for nothing meanwhile.
func TestPacingShortInterval(t *testing.T) {
	tr := newTracker(Settings{Interval: 100 * time.Millisecond})
	tr.setHeld(targets(3), t0)
	wakes := 0
	now := t0
	var probes int
	for now.Before(t0.Add(11 * time.Second)) {
		probes += len(tr.probes(now))
		at, ok := tr.nextWake()
		if !ok {
			t.Fatal("nothing to wake for")
		}
		if !at.After(now) {
			t.Fatalf("asked to wake at %v, not after now (%v): a spin", at.Sub(t0), now.Sub(t0))
		}
		now = at
		wakes++
	}
	if probes != 30 || wakes > 40 {
		t.Errorf("%d probes and %d wake-ups in 10 s after settling, want 30 (3 VIPs once a second) and about one a probe batch", probes, wakes)
	}
}
