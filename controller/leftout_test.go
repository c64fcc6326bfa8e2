package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestPacedEvents: Events given to heldEvents.pace go heldEventsPerTick at a
// time, oldest first, even in a quiet cluster (no Service waits for an
// address), and wait like held ones while a bulk allocation lasts; past
// heldEventsMax pace refuses (the caller tells that Service later) instead
// of sending at once.
func TestPacedEvents(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPendingAllocations()
	p.now = func() time.Time { return now }
	rec := &noteRecorder{}
	h := newHeldEvents(rec, p)
	h.now = p.now
	g := &v1alpha1.KeepalivedGroup{}
	g.Namespace, g.Name = "ns", "g"
	var all []string
	for i := range 2*heldEventsPerTick + 3 {
		s := pendingSvc(fmt.Sprintf("s%02d", i), "ns/g", nil)
		if !h.pace(s, g, corev1.EventTypeWarning, ReasonRouterIDsExhausted, actionAssignRouterID, "left out %s", s.Name) {
			t.Fatalf("pace refused %s with a short backlog", s.Name)
		}
		all = append(all, "left out "+s.Name)
	}
	if got := rec.sent(); len(got) != 0 {
		t.Fatalf("paced Events sent at once: %q", got)
	}
	for tick, want := range [][]string{all[:heldEventsPerTick], all[:2*heldEventsPerTick], all, all} {
		h.send(h.due())
		if got := rec.sent(); !slices.Equal(got, want) {
			t.Fatalf("tick %d: sent %q, want %q", tick, got, want)
		}
	}

	// A bulk allocation holds them as it holds IPAllocated.
	rec.notes = nil
	busy := pendingSvc("busy", "ns/g", nil)
	p.queued(busy)
	p.queued(pendingSvc("other", "ns/g", nil))
	h.pace(pendingSvc("x", "ns/g", nil), g, corev1.EventTypeWarning, ReasonRouterIDsExhausted, actionAssignRouterID, "left out x")
	h.send(h.due())
	if got := rec.sent(); len(got) != 0 {
		t.Fatalf("sent %q during a bulk allocation", got)
	}
	now = now.Add(pendingMaxDefer)
	h.send(h.due())
	if got := rec.sent(); !slices.Equal(got, []string{"left out x"}) {
		t.Fatalf("after pendingMaxDefer: sent %q", got)
	}

	// A full backlog refuses.
	for i := range heldEventsMax {
		if !h.pace(pendingSvc(fmt.Sprintf("f%d", i), "ns/g", nil), g, corev1.EventTypeWarning, ReasonRouterIDsExhausted, actionAssignRouterID, "f") {
			t.Fatalf("refused at %d of %d", i, heldEventsMax)
		}
	}
	if h.pace(pendingSvc("over", "ns/g", nil), g, corev1.EventTypeWarning, ReasonRouterIDsExhausted, actionAssignRouterID, "over") {
		t.Fatal("a full backlog took one more")
	}
}

// TestLeftOutEventsPaced: 150 Services of a shared group on a segment with
// two free router IDs: the Services of the 4 routers left out (about 100)
// get one RouterIDsExhausted Event each, sent heldEventsPerTick a
// pendingRecheck (100 a second), not all in one reconcile: the first and
// the last Event are at least half the nominal spread apart (load only
// spreads them further), where sent at once they would be milliseconds
// apart.
func TestLeftOutEventsPaced(t *testing.T) {
	ns := newNamespace(t, "lopace")
	lbl := map[string]string{"lopace-test": ns}
	newNodes(t, ns, 3, lbl)
	newTwoIDSharedGroup(t, ns, lbl)
	const n = 150
	createServices(t, ns, ns+"/g", n)
	startManager(t, ns)

	left := 0
	eventually(t, 60*time.Second, func() error {
		g := getGroup(t, ns, "g")
		if len(g.Status.Instances) != 2 {
			return fmt.Errorf("%d routers, want 2", len(g.Status.Instances))
		}
		left = n - len(g.Status.RouterIDs)
		return nil
	})
	if left < 3*heldEventsPerTick {
		t.Fatalf("only %d Services left out", left)
	}
	var first, last time.Time
	eventually(t, 60*time.Second, func() error {
		ev := serviceEvents(t, ns, ReasonRouterIDsExhausted)
		if len(ev) != left {
			return fmt.Errorf("%d Services with RouterIDsExhausted Events, want %d", len(ev), left)
		}
		first, last = time.Time{}, time.Time{}
		for name, e := range ev {
			if len(e) != 1 {
				return fmt.Errorf("%s: %d Events", name, len(e))
			}
			at := e[0].EventTime.Time
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
		return nil
	})
	ticks := (left+heldEventsPerTick-1)/heldEventsPerTick - 1
	nominal := time.Duration(ticks) * pendingRecheck
	t.Logf("%d Events from %v to %v: %v apart (paced: %v)", left, first.Format("05.000"), last.Format("05.000"), last.Sub(first), nominal)
	if last.Sub(first) < nominal/2 {
		t.Fatalf("%d Events %v apart, want at least %v: not paced", left, last.Sub(first), nominal/2)
	}
}
