package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pendingAllocations knows which LoadBalancer Services wait in the Service
// queue for an address, per group, so that the group's status write can
// wait for them instead of being rewritten once per allocation.
//
// A group's status holds every instance with each node's priority (230 KiB
// at 250 Services and 500 Nodes). When 2,000 Services need addresses at
// once (a first install, a restored cluster), a status written while they
// are being allocated is rewritten a moment later: at 5,000 Services that
// was 40 to 100 writes of 230 KiB competing with the allocations for the
// API server (BenchmarkConvergence5000Services). A new Service in a quiet
// cluster is never held back: its own allocation is what the group waits
// for, and the status write that gives it its VIP follows that allocation
// anyway.
//
// The wait is bounded both ways: it ends when the Service queue stops
// making progress (stall: a reconcile failing and backing off holds no
// group) and after pendingMaxDefer in any case, so a group under a steady
// stream of new Services is still written at least that often. That is
// also all a tenant can do to a group it shares: by keeping LoadBalancer
// Services of its own queued without pause (writes the API server's
// priority and fairness meters), it can hold the group's status back by at
// most pendingMaxDefer at a time; a Service is counted only from the event
// that queued it to the end of its reconcile, a few milliseconds.
type pendingAllocations struct {
	now func() time.Time

	mu sync.Mutex
	// bySvc: each queued Service's group.
	bySvc map[types.NamespacedName]types.NamespacedName
	// perGroup: how many queued Services each group has.
	perGroup map[types.NamespacedName]int
	// progress: when a queued Service was last added or finished.
	progress time.Time
	// since: when each group's status write was first put off.
	since map[types.NamespacedName]time.Time
}

const (
	// pendingStall: no Service reconcile finished for this long, and the
	// groups stop waiting.
	pendingStall = time.Second
	// pendingMaxDefer: the longest a group's status write is put off.
	pendingMaxDefer = 10 * time.Second
	// pendingRecheck: how soon a group that waits looks again (the
	// allocations' own status writes also wake it).
	pendingRecheck = 100 * time.Millisecond
)

func newPendingAllocations() *pendingAllocations {
	return &pendingAllocations{
		now:      time.Now,
		bySvc:    map[types.NamespacedName]types.NamespacedName{},
		perGroup: map[types.NamespacedName]int{},
		since:    map[types.NamespacedName]time.Time{},
	}
}

// needsAddress reports whether the Service, as an event shows it, is a
// LoadBalancer of ours with a group annotation and no address yet.
func needsAddress(svc *corev1.Service) (types.NamespacedName, bool) {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.DeletionTimestamp != nil ||
		len(svc.Status.LoadBalancer.Ingress) > 0 || !classIsOurs(svc) {
		return types.NamespacedName{}, false
	}
	return groupOf(svc)
}

// queued notes a Service event that enqueued the Service.
func (p *pendingAllocations) queued(svc *corev1.Service) {
	group, ok := needsAddress(svc)
	if !ok {
		return
	}
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.bySvc[self]; ok {
		if old == group {
			return
		}
		p.perGroup[old]--
	}
	p.bySvc[self] = group
	p.perGroup[group]++
	p.progress = p.now()
}

// done notes that a reconcile of the Service ended, whatever its outcome.
func (p *pendingAllocations) done(svc types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.progress = p.now()
	group, ok := p.bySvc[svc]
	if !ok {
		return
	}
	delete(p.bySvc, svc)
	if p.perGroup[group]--; p.perGroup[group] <= 0 {
		delete(p.perGroup, group)
	}
}

// wait returns how long the group's status write should be put off: 0
// when nothing of the group is queued, the queue has stalled, or the
// write has waited pendingMaxDefer already.
func (p *pendingAllocations) wait(group types.NamespacedName) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.perGroup[group] == 0 || now.Sub(p.progress) >= pendingStall {
		delete(p.since, group)
		return 0
	}
	first, ok := p.since[group]
	if !ok {
		p.since[group] = now
		first = now
	}
	if now.Sub(first) >= pendingMaxDefer {
		delete(p.since, group)
		return 0
	}
	return pendingRecheck
}

// othersWaiting reports whether a LoadBalancer Service other than self is
// queued for an address, and the queue is making progress.
func (p *pendingAllocations) othersWaiting(self types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.bySvc)
	if _, ok := p.bySvc[self]; ok {
		n--
	}
	return n > 0 && p.now().Sub(p.progress) < pendingStall
}

// busy reports whether any LoadBalancer Service is queued for an address
// and the queue is making progress.
func (p *pendingAllocations) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bySvc) > 0 && p.now().Sub(p.progress) < pendingStall
}
