package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// noteRecorder keeps the notes of the Events it is given, in order.
type noteRecorder struct {
	mu    sync.Mutex
	notes []string
}

func (r *noteRecorder) Eventf(_, _ runtime.Object, _, _, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(note, args...))
}

func (r *noteRecorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notes...)
}

// TestHeldEvents: an allocation's Event goes at once when no other Service
// waits for an address; in a bulk allocation it is held until the queue is
// done or stalled, never longer than pendingMaxDefer, and then sent
// heldEventsPerTick at a time.
func TestHeldEvents(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPendingAllocations()
	p.now = func() time.Time { return now }
	rec := &noteRecorder{}
	h := newHeldEvents(rec, p)
	h.now = p.now
	g := &v1alpha1.KeepalivedGroup{}
	g.Namespace, g.Name = "ns", "g1"
	allocatedEvent := func(svc *corev1.Service) {
		h.eventf(svc, g, corev1.EventTypeNormal, ReasonIPAllocated, actionAllocate, "allocated %s", svc.Name)
	}
	name := func(s *corev1.Service) types.NamespacedName {
		return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	}
	want := func(step string, notes ...string) {
		t.Helper()
		h.send(h.due())
		if got := rec.sent(); fmt.Sprint(got) != fmt.Sprint(notes) {
			t.Fatalf("%s: sent %q, want %q", step, got, notes)
		}
	}

	// A quiet cluster: the Service's own reconcile is all that is queued.
	solo := pendingSvc("solo", "ns/g1", nil)
	p.queued(solo)
	allocatedEvent(solo)
	p.done(name(solo))
	if got := rec.sent(); len(got) != 1 || got[0] != "allocated solo" {
		t.Fatalf("a lone allocation: sent %q, want its Event at once", got)
	}

	// A bulk allocation: a, b and c queued together.
	a, b, c := pendingSvc("a", "ns/g1", nil), pendingSvc("b", "ns/g1", nil), pendingSvc("c", "ns/g2", nil)
	for _, s := range []*corev1.Service{a, b, c} {
		p.queued(s)
	}
	allocatedEvent(a)
	p.done(name(a))
	now = now.Add(50 * time.Millisecond)
	allocatedEvent(b)
	p.done(name(b))
	want("b and c still queued", "allocated solo")
	// c, of another group, is the last: its own Event needs no holding,
	// and the held ones may go.
	allocatedEvent(c)
	p.done(name(c))
	want("queue done", "allocated solo", "allocated c", "allocated a", "allocated b")
	want("nothing held", "allocated solo", "allocated c", "allocated a", "allocated b")

	// Many held Events go heldEventsPerTick at a time, oldest first.
	rec.notes = nil
	last := pendingSvc("last", "ns/g1", nil)
	p.queued(last)
	var all []string
	for i := range 2*heldEventsPerTick + 5 {
		s := pendingSvc(fmt.Sprintf("m%02d", i), "ns/g1", nil)
		p.queued(s)
		allocatedEvent(s)
		p.done(name(s))
		all = append(all, "allocated "+s.Name)
	}
	p.done(name(last))
	want("first tick", all[:heldEventsPerTick]...)
	want("second tick", all[:2*heldEventsPerTick]...)
	want("third tick", all...)

	// A queue that never empties: held at most pendingMaxDefer.
	rec.notes = nil
	first := now
	for i := 0; ; i++ {
		s := pendingSvc(fmt.Sprintf("s%d", i), "ns/g1", nil)
		next := pendingSvc(fmt.Sprintf("s%d", i+1), "ns/g1", nil)
		p.queued(s)
		p.queued(next)
		allocatedEvent(s)
		p.done(name(s))
		h.send(h.due())
		if len(rec.sent()) > 0 {
			if held := now.Sub(first); held != pendingMaxDefer {
				t.Fatalf("steady stream: first Events sent after %v, want %v", held, pendingMaxDefer)
			}
			if len(rec.sent()) != heldEventsPerTick {
				t.Fatalf("steady stream: %d held Events sent in a tick, want %d", len(rec.sent()), heldEventsPerTick)
			}
			p.done(name(next))
			for len(h.due()) > 0 { // the rest of the stream's Events
			}
			break
		}
		if now.Sub(first) > pendingMaxDefer {
			t.Fatalf("steady stream: nothing sent after %v", now.Sub(first))
		}
		now = now.Add(100 * time.Millisecond)
	}

	// A stalled queue (a reconcile backing off) holds nobody's Event.
	rec.notes = nil
	d, e := pendingSvc("d", "ns/g1", nil), pendingSvc("e", "ns/g1", nil)
	p.queued(d)
	p.queued(e)
	allocatedEvent(d)
	p.done(name(d))
	want("e queued")
	now = now.Add(pendingStall - time.Millisecond)
	want("e queued, not yet stalled")
	now = now.Add(time.Millisecond)
	want("stalled", "allocated d")
	p.done(name(e))

	// A backlog at heldEventsMax holds no more: the next Event goes at once.
	rec.notes = nil
	p.queued(e)
	for i := range heldEventsMax {
		allocatedEvent(pendingSvc(fmt.Sprintf("f%04d", i), "ns/g1", nil))
	}
	if got := rec.sent(); len(got) != 0 {
		t.Fatalf("filling the backlog: %d Events sent at once", len(got))
	}
	allocatedEvent(d)
	if got := rec.sent(); len(got) != 1 || got[0] != "allocated d" {
		t.Fatalf("past heldEventsMax: sent %q, want d's Event at once", got)
	}
	p.done(name(e))
	for len(h.due()) > 0 {
	}
	rec.notes = []string{"allocated d"}

	// What is held when the manager stops is sent then.
	p.queued(d)
	p.queued(e)
	allocatedEvent(d)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.sent(); len(got) != 2 || got[1] != "allocated d" {
		t.Fatalf("on stop: sent %q", got)
	}
}

// TestBulkAllocationEvents: Services created together, before the
// operator starts, each get their address and then their one IPAllocated
// Event, though the Events wait for the allocations (heldevents.go).
func TestBulkAllocationEvents(t *testing.T) {
	ns := newNamespace(t, "bulkev")
	newNodes(t, ns, 2, map[string]string{"bulkev": ns})
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = map[string]string{"bulkev": ns}
		withPool("10.99.0.64/27")(g)
	})
	const n = 24
	for i := range n {
		newService(t, ns, fmt.Sprintf("svc-%02d", i), ns+"/g", asLoadBalancer)
	}
	startManager(t, ns)
	eventually(t, 60*time.Second, func() error {
		if got := len(allocated(t, ns)); got != n {
			return fmt.Errorf("%d of %d Services have an address", got, n)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		evs := serviceEvents(t, ns, ReasonIPAllocated)
		for i := range n {
			name := fmt.Sprintf("svc-%02d", i)
			if len(evs[name]) != 1 {
				return fmt.Errorf("%s has %d IPAllocated Events, want 1", name, len(evs[name]))
			}
		}
		return nil
	})
}
