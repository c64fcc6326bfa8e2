package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// heldEvents puts off the IPAllocated Events of a bulk allocation until the
// allocations are done, and then paces them.
//
// An Event is a write that costs the API server and etcd at least as much
// as the status write it narrates: at 5,000 Services, the 2,000
// IPAllocated Events were 40 % of the API server's CPU and half of etcd's
// while 2,000 addresses were being written, and convergence took 10.8-11.8 s
// with them against 7.1-7.5 s without (BenchmarkConvergence5000Services).
// What a user waits for is the address and the VIP; the Event only says it
// happened, so it goes after them, still carrying the allocation's own
// message. A Service allocated while no other Service waits for an address
// (a quiet cluster) gets its Event at once.
//
// Held Events are sent once no LoadBalancer Service of ours waits for an
// address (or the queue has stalled: pendingStall), or once the oldest has
// been held pendingMaxDefer, so a tenant that keeps Services queued cannot
// hold anyone's Events back for longer; and then at heldEventsPerTick a
// pendingRecheck (100 a second), oldest first. The pace keeps them from
// crowding out the groups' status writes, which wait for the same
// allocations (sent all at once, 2,000 Events took the API server from the
// 20 statuses for 6 s), and keeps the recorder's queue, which drops what
// does not fit, from overflowing.
type heldEvents struct {
	rec     events.EventRecorder
	pending *pendingAllocations
	now     func() time.Time

	mu     sync.Mutex
	held   []heldEvent
	oldest time.Time // when the first Event of the backlog being held or paced out was held
}

// heldEvent is one Event as Eventf takes it, its note already formatted.
type heldEvent struct {
	regarding, related              runtime.Object
	eventtype, reason, action, note string
}

// heldEventsPerTick is how many held Events go out each pendingRecheck once
// they may: 100 a second, a fraction of what the API server takes.
const heldEventsPerTick = 10

// heldEventsMax bounds the backlog: past it, an allocation's Event goes at
// once, as it did before Events were held. Allocations are bounded by the
// pools, but a tenant creating and deleting Services without pause keeps
// allocating; this keeps what that can make the operator hold (a few
// hundred bytes an Event) to a couple of MiB.
const heldEventsMax = 4096

func newHeldEvents(rec events.EventRecorder, pending *pendingAllocations) *heldEvents {
	return &heldEvents{rec: rec, pending: pending, now: time.Now}
}

// eventf sends an Event about svc (related to g) now, or holds it while
// other Services wait for an address and the backlog is under
// heldEventsMax.
func (h *heldEvents) eventf(svc *corev1.Service, g *v1alpha1.KeepalivedGroup, eventtype, reason, action, note string, args ...any) {
	regarding, related := serviceRef(svc), groupRef(g)
	if h.hold(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, heldEvent{regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...)}) {
		return
	}
	h.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// pace adds an Event about svc to the backlog whether or not other Services
// wait for an address: one of many sent together (the Services a group left
// out, reportLeftOut), which go heldEventsPerTick at a time like held
// IPAllocated Events, and like them wait while a bulk allocation lasts. It
// returns false, sending nothing, when the backlog is full (heldEventsMax):
// the caller tries again later rather than send it at once.
func (h *heldEvents) pace(svc *corev1.Service, g *v1alpha1.KeepalivedGroup, eventtype, reason, action, note string, args ...any) bool {
	e := heldEvent{serviceRef(svc), groupRef(g), eventtype, reason, action, fmt.Sprintf(note, args...)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) >= heldEventsMax {
		return false
	}
	if len(h.held) == 0 {
		h.oldest = h.now()
	}
	h.held = append(h.held, e)
	return true
}

// hold adds e to the backlog, unless it is to go at once.
func (h *heldEvents) hold(self types.NamespacedName, e heldEvent) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) >= heldEventsMax || !h.pending.othersWaiting(self) {
		return false
	}
	if len(h.held) == 0 {
		h.oldest = h.now()
	}
	h.held = append(h.held, e)
	return true
}

// due returns the held Events that may go now, at most heldEventsPerTick,
// and forgets them.
func (h *heldEvents) due() []heldEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) == 0 || (h.now().Sub(h.oldest) < pendingMaxDefer && h.pending.busy()) {
		return nil
	}
	n := min(len(h.held), heldEventsPerTick)
	out := slices.Clone(h.held[:n])
	h.held = slices.Delete(h.held, 0, n)
	return out
}

// send hands Events to the recorder, which sends them in the background.
func (h *heldEvents) send(evs []heldEvent) {
	for _, e := range evs {
		h.rec.Eventf(e.regarding, e.related, e.eventtype, e.reason, e.action, "%s", e.note)
	}
}

// Start sends held Events as they fall due, checking every pendingRecheck;
// a manager.Runnable. What is still held when the manager stops goes then.
func (h *heldEvents) Start(ctx context.Context) error {
	t := time.NewTicker(pendingRecheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.mu.Lock()
			evs := h.held
			h.held = nil
			h.mu.Unlock()
			h.send(evs)
			return nil
		case <-t.C:
			h.send(h.due())
		}
	}
}
