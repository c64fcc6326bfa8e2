package controller

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// allocator decides which addresses are in use. Its truth is the API: the
// informer cache, indexed by address, lists every Service's ingress IPs and
// externalIPs, of which only those of Services the operator serves count
// (vetter.blockers; after a restart the cache is filled from the API server
// before any reconcile runs, so nothing allocated before is forgotten).
// The cache lags behind our own writes, so the allocator also remembers
// what this process allocated and released until the cache catches up, and
// one mutex serialises every decide-and-write, so two Services reconciled
// at the same time can never pick the same address.
type allocator struct {
	now func() time.Time

	mu sync.Mutex
	// held: addresses this process wrote to a Service's status; change
	// it only through hold and unhold, which keep heldCount.
	held map[netip.Addr]memo
	// heldCount: how many entries of held each Service has, so that
	// heldBy answers "none" (every reconcile of a Service that is not a
	// LoadBalancer asks, allocatedHere) without a walk through held.
	heldCount map[types.NamespacedName]int
	// released: addresses this process removed from a Service's status;
	// the cache may still show that Service holding them.
	released map[netip.Addr]memo
	// waiting: per group, Services that found the pool exhausted, to be
	// retried when an address of the group is released.
	waiting map[types.NamespacedName]map[types.NamespacedName]bool
}

// memo is one of our own writes the cache may not show yet.
type memo struct {
	svc types.NamespacedName
	at  time.Time
}

// cacheGrace is how long our own writes outrank the cache. The informer
// normally shows a write within milliseconds; after this long, a cache that
// still disagrees is right (someone else changed the Service, or removed
// our finalizer by hand and deleted it), so a stale memo cannot hold an
// address forever.
const cacheGrace = 30 * time.Second

func newAllocator() *allocator {
	return &allocator{
		now:       time.Now,
		held:      map[netip.Addr]memo{},
		heldCount: map[types.NamespacedName]int{},
		released:  map[netip.Addr]memo{},
		waiting:   map[types.NamespacedName]map[types.NamespacedName]bool{},
	}
}

// inUseBy returns the other Service using addr, if any: one the cache
// shows holding or validly claiming it (vetter.blockers: only Services the
// operator serves count), or one of this process's writes the cache does
// not show yet. share: see vetter.blockers. Call with mu held.
func (a *allocator) inUseBy(v *vetter, addr netip.Addr, svc *corev1.Service, share bool) (types.NamespacedName, bool, error) {
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	now := a.now()
	if h, ok := a.held[addr]; ok && now.Sub(h.at) < cacheGrace && h.svc != self && !(share && v.sharesWith(svc, h.svc)) {
		// Our own recent write says another Service has it, whatever the
		// cache shows: no need to ask the cache. (Pool.Allocate asks about
		// every address before a free one; when many Services are given
		// addresses at once, most were handed out by this process.)
		return h.svc, true, nil
	}
	cached, err := v.blockers(addr, svc, share)
	if err != nil {
		return types.NamespacedName{}, false, err
	}
	h, isHeld := a.held[addr]
	if isHeld && now.Sub(h.at) >= cacheGrace && !slices.Contains(cached, h.svc) {
		a.unhold(addr) // the cache has had time to show our write; it does not
		isHeld = false
	}
	if isHeld && h.svc != self && !(share && v.sharesWith(svc, h.svc)) {
		return h.svc, true, nil
	}
	r, isReleased := a.released[addr]
	if isReleased && now.Sub(r.at) >= cacheGrace {
		delete(a.released, addr)
		isReleased = false
	}
	for _, s := range cached {
		if isReleased && r.svc == s {
			continue // released by us; the cache has not caught up
		}
		if isHeld && h.svc == self && now.Sub(h.at) < cacheGrace {
			continue // we gave it to self after s released it
		}
		return s, true, nil
	}
	return types.NamespacedName{}, false, nil
}

// keeps is inUseBy for an address svc names (requested, or its own
// ingress). An address svc already has in its ingress stays its own unless
// another Service holds it by the ownership rule (vetter.holdersOf: the
// first grant wins), or this process has just given it to another: a
// Service listing it in externalIPs, whatever its age, takes nothing away,
// across a restart of the operator too. Call with mu held.
func (a *allocator) keeps(v *vetter, addr netip.Addr, svc *corev1.Service, current []netip.Addr) (types.NamespacedName, bool, error) {
	if !slices.Contains(current, addr) {
		return a.inUseBy(v, addr, svc, true)
	}
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	if h, ok := a.held[addr]; ok && a.now().Sub(h.at) < cacheGrace && h.svc != self && !v.sharesWith(svc, h.svc) {
		return h.svc, true, nil // given to another since; the cache shows self's old status
	}
	h, err := v.holdersOf(addr)
	if err != nil {
		return types.NamespacedName{}, false, err
	}
	if len(h) == 0 || slices.Contains(h, self) {
		// Held by self (or the index has not caught up with self's
		// claim yet: the write that gave it is there already).
		return types.NamespacedName{}, false, nil
	}
	return h[0], true, nil
}

// reserve marks addrs as held by svc before the write that gives them to
// it, so no other Service can pick them while the write is in flight, and
// returns a function that undoes exactly that if the write fails. The
// addresses svc gives up are released only by record, after the write:
// until then svc still holds them in the API. Call both with mu held.
func (a *allocator) reserve(svc types.NamespacedName, addrs []netip.Addr) (undo func()) {
	type prev struct {
		held, released       memo
		wasHeld, wasReleased bool
	}
	saved := make(map[netip.Addr]prev, len(addrs))
	now := a.now()
	for _, x := range addrs {
		h, hok := a.held[x]
		r, rok := a.released[x]
		saved[x] = prev{held: h, released: r, wasHeld: hok, wasReleased: rok}
		a.hold(x, memo{svc: svc, at: now})
	}
	return func() {
		for x, p := range saved {
			if p.wasHeld {
				a.hold(x, p.held)
			} else {
				a.unhold(x)
			}
			if p.wasReleased {
				a.released[x] = p.released
			} else {
				delete(a.released, x)
			}
		}
	}
}

// record notes that svc now holds exactly addrs (after a successful write).
// Call with mu held.
func (a *allocator) record(svc types.NamespacedName, before, addrs []netip.Addr) {
	now := a.now()
	for _, b := range before {
		if h, ok := a.held[b]; !ok || h.svc == svc {
			a.unhold(b)
		}
		a.released[b] = memo{svc: svc, at: now}
	}
	for _, x := range addrs {
		a.hold(x, memo{svc: svc, at: now})
		delete(a.released, x)
	}
}

// hold records that this process gave addr to m.svc. Call with mu held.
func (a *allocator) hold(addr netip.Addr, m memo) {
	a.unhold(addr)
	a.held[addr] = m
	a.heldCount[m.svc]++
}

// unhold forgets addr's entry in held, if any. Call with mu held.
func (a *allocator) unhold(addr netip.Addr) {
	h, ok := a.held[addr]
	if !ok {
		return
	}
	delete(a.held, addr)
	if a.heldCount[h.svc]--; a.heldCount[h.svc] <= 0 {
		delete(a.heldCount, h.svc)
	}
}

// heldBy lists, sorted, the addresses this process gave svc. Call with mu
// held.
func (a *allocator) heldBy(svc types.NamespacedName) []netip.Addr {
	if a.heldCount[svc] == 0 {
		return nil
	}
	var out []netip.Addr
	for addr, h := range a.held {
		if h.svc == svc {
			out = append(out, addr)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func (a *allocator) wait(group, svc types.NamespacedName) {
	if a.waiting[group] == nil {
		a.waiting[group] = map[types.NamespacedName]bool{}
	}
	a.waiting[group][svc] = true
}

func (a *allocator) stopWaiting(group, svc types.NamespacedName) {
	delete(a.waiting[group], svc)
}

// takeWaiting returns and forgets the Services waiting on a group.
func (a *allocator) takeWaiting(group types.NamespacedName) []types.NamespacedName {
	var out []types.NamespacedName
	for s := range a.waiting[group] {
		out = append(out, s)
	}
	delete(a.waiting, group)
	return out
}
