package daemon

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestDeferTakeover: a due Master_Down_Timer does not make a backup master while its
// master's advertisement waits unhandled, in a batch a reader handed over (handled on
// the spot) or in the loop's hands (the timer thread steps back, at most takeoverGrace);
// with nothing unread it takes over at once.
func TestDeferTakeover(t *testing.T) {
	t.Run("batch handed over", func(t *testing.T) {
		d, c := backupDaemon(t, 1)
		in := c.byVRID[1]
		deadline := in.sm.Deadline()
		b := &batch{conn: c, free: make(chan *batch, 1), pkts: []transport.Packet{advertPacket(t, 1, 255)}, n: 1}
		d.unhandled.Add(1)
		d.batches <- b
		if d.deferTakeover(deadline) {
			t.Fatal("deferred although the advert could be handled at once")
		}
		if got := in.sm.State(); got != vrrp.StateBackup {
			t.Fatalf("state %v after the master's advert, want BACKUP", got)
		}
		if !in.sm.Deadline().After(deadline) {
			t.Errorf("Master_Down_Timer still at %v, want it restarted by the advert", in.sm.Deadline())
		}
		if d.unhandled.Load() != 0 || len(b.free) != 1 {
			t.Errorf("unhandled %d, batch returned %v", d.unhandled.Load(), len(b.free) == 1)
		}
	})
	t.Run("batch in the loop's hands", func(t *testing.T) {
		d, c := backupDaemon(t, 1)
		tt, err := startTimerThread(func() {}, func(error) {})
		if err != nil {
			t.Fatal(err)
		}
		defer tt.Close()
		d.timer = tt
		in := c.byVRID[1]
		deadline := in.sm.Deadline()
		grace := graceFor(in.cfg.AdvertInterval)
		if got := d.takeoverGrace(deadline); got != grace {
			t.Fatalf("grace %v for the due instance at %v adverts, want %v", got, in.cfg.AdvertInterval, grace)
		}
		d.unhandled.Add(1) // read, on its way to the loop
		if !d.deferTakeover(deadline) {
			t.Fatal("took over with a batch unhandled")
		}
		if !d.deferTakeover(deadline.Add(grace / 2)) {
			t.Fatal("gave up waiting within the grace")
		}
		if d.deferTakeover(deadline.Add(grace)) {
			t.Fatal("still waiting after the grace")
		}
		d.fireTimers(deadline.Add(grace))
		if got := in.sm.State(); got != vrrp.StateMaster {
			t.Fatalf("state %v, want MASTER once the grace ran out", got)
		}
	})
	t.Run("behind a due timer of another kind", func(t *testing.T) {
		// After a long reload every kind of timer is overdue at once; the earliest may be
		// the snapshot's publication (or a master's advert, an announcement round). The
		// unread advert must still be handled before the Master_Down_Timer fires: a leave
		// at 2,000 Services (TestMovementAtScale) had every vrrpd take over every router it
		// backs up at the end of its one-second reload, their masters' adverts unread.
		d, c := backupDaemon(t, 1)
		in := c.byVRID[1]
		deadline := in.sm.Deadline()
		d.timers.Set(d.publishK, deadline.Add(-time.Millisecond))
		b := &batch{conn: c, free: make(chan *batch, 1), pkts: []transport.Packet{advertPacket(t, 1, 255)}, n: 1}
		d.unhandled.Add(1)
		d.batches <- b
		if !d.deferTakeover(deadline) {
			d.fireTimers(deadline)
		}
		if got := in.sm.State(); got != vrrp.StateBackup {
			t.Fatalf("state %v with the master's advert unread behind a due publication, want BACKUP", got)
		}
		if d.unhandled.Load() != 0 {
			t.Errorf("unhandled %d, want the batch handled", d.unhandled.Load())
		}
	})
	t.Run("nothing unread", func(t *testing.T) {
		d, c := backupDaemon(t, 1)
		if d.deferTakeover(c.byVRID[1].sm.Deadline()) {
			t.Fatal("deferred with nothing unread")
		}
	})
}

// TestAdvertsBetweenSlowTransitions: when a transition's slow work (here a VIP add that
// takes 15 ms, longer than the 10 ms advert interval) holds the loop, a master whose
// advert fell due meanwhile sends it before the wake-up ends, not one interval late.
func TestAdvertsBetweenSlowTransitions(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	a := testInstance("VI_1", 1, 200, "10.99.0.100/24")
	b := testInstance("VI_2", 2, 100, "10.99.0.101/24")
	a.AdvertInterval, b.AdvertInterval = 10*time.Millisecond, 10*time.Millisecond
	startDaemon(t, d, a, b)
	mdi := func(p uint8) time.Duration { return vrrp.Version3.MasterDownInterval(p, 10*time.Millisecond) }
	advance(d, t0.Add(mdi(200))) // VI_1 takes over; its next advert is due 10 ms later
	next, ok := d.timers.Armed(d.byName["VI_1"].timerKey)
	if !ok || d.byName["VI_1"].sm.State() != vrrp.StateMaster {
		t.Fatal("VI_1 did not take over")
	}
	takeover := t0.Add(mdi(100))
	if !next.After(takeover) {
		t.Fatalf("VI_1's next advert at %v is not after VI_2's takeover at %v", next, takeover)
	}
	h.addDelay = 15 * time.Millisecond
	h.events = nil
	d.fireTimers(takeover) // VI_2 takes over, its VIP add outlasts VI_1's interval
	i := slices.Index(h.events, "add 10.99.0.101/24 dev eth0")
	j := slices.Index(h.events, "advert vrid 1 priority 200")
	if i < 0 || j < i {
		t.Fatalf("VI_1's advert did not follow VI_2's slow VIP add in the same wake-up:\n%s", strings.Join(h.events, "\n"))
	}
	if at, _ := d.timers.Armed(d.byName["VI_1"].timerKey); !at.After(next) {
		t.Errorf("VI_1's Adver_Timer at %v after sending, want after %v", at, next)
	}
}

// TestMassTakeoverTransitionsFirst: instances taking over in one wake-up send their
// adverts, then carry out and publish every transition (one snapshot), then add their
// VIPs; the transitions' log lines come after the VIPs (executeActs: a log write is not
// worth a takeover's time).
func TestMassTakeoverTransitionsFirst(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	var ics []config.Instance
	for i := 1; i <= 3; i++ {
		ics = append(ics, testInstance(fmt.Sprintf("VI_%d", i), uint8(i), 100, fmt.Sprintf("10.99.0.%d/24", 100+i)))
	}
	startDaemon(t, d, ics...)
	h.events = nil
	var atFirstAdd string
	h.onHold = func() {
		if atFirstAdd == "" {
			atFirstAdd = publishedStates(d)
		}
	}
	advance(d, t0.Add(vrrp.Version3.MasterDownInterval(100, time.Second)))
	firstAdd := slices.IndexFunc(h.events, func(e string) bool { return strings.HasPrefix(e, "add ") })
	if firstAdd < 0 {
		t.Fatalf("no VIP added:\n%s", strings.Join(h.events, "\n"))
	}
	for i, e := range h.events[:firstAdd] {
		if !strings.HasPrefix(e, "advert ") {
			t.Errorf("event %d before the first VIP add is %q, want only the adverts:\n%s", i, e, strings.Join(h.events, "\n"))
		}
	}
	if want := "VI_1=MASTER VI_2=MASTER VI_3=MASTER"; atFirstAdd != want {
		t.Errorf("published at the first VIP add: %s, want %s", atFirstAdd, want)
	}
	all := strings.Join(h.events, "\n")
	for _, ic := range ics {
		if w := "log (" + ic.Name + ") Entering MASTER STATE"; !strings.Contains(all, w) {
			t.Errorf("%q never logged:\n%s", w, all)
		}
	}
}

// TestTakeoverGraceScalesWithInterval: the grace a due Master_Down_Timer gives unread
// packets is a tenth of the advert interval, 1 ms at 10 ms adverts (a backup's margin there
// is 26 ms) up to 20 ms at 200 ms and beyond.
func TestTakeoverGraceScalesWithInterval(t *testing.T) {
	for _, c := range []struct{ interval, want time.Duration }{
		{3 * time.Millisecond, time.Millisecond},
		{10 * time.Millisecond, time.Millisecond},
		{100 * time.Millisecond, 10 * time.Millisecond},
		{time.Second, 20 * time.Millisecond},
	} {
		if got := graceFor(c.interval); got != c.want {
			t.Errorf("grace at %v adverts: %v, want %v", c.interval, got, c.want)
		}
	}
}
