package controller

import (
	"context"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// allocator decides which addresses are in use. Its truth is the API: the
// informer cache, indexed by address, lists every Service's ingress IPs and
// externalIPs (after a restart the cache is filled from the API server
// before any reconcile runs, so nothing allocated before is forgotten).
// The cache lags behind our own writes, so the allocator also remembers
// what this process allocated and released until the cache catches up, and
// one mutex serialises every decide-and-write, so two Services reconciled
// at the same time can never pick the same address.
type allocator struct {
	reader client.Reader

	mu sync.Mutex
	// held: addresses this process wrote to a Service's status.
	held map[netip.Addr]types.NamespacedName
	// released: addresses this process removed from a Service's status;
	// the cache may still show that Service holding them.
	released map[netip.Addr]types.NamespacedName
	// waiting: per group, Services that found the pool exhausted, to be
	// retried when an address of the group is released.
	waiting map[types.NamespacedName]map[types.NamespacedName]bool
}

func newAllocator(reader client.Reader) *allocator {
	return &allocator{
		reader:   reader,
		held:     map[netip.Addr]types.NamespacedName{},
		released: map[netip.Addr]types.NamespacedName{},
		waiting:  map[types.NamespacedName]map[types.NamespacedName]bool{},
	}
}

// inUseBy returns the other Service using a, if any. Call with mu held.
func (a *allocator) inUseBy(ctx context.Context, addr netip.Addr, self types.NamespacedName) (types.NamespacedName, bool, error) {
	if h, ok := a.held[addr]; ok && h != self {
		return h, true, nil
	}
	var list corev1.ServiceList
	if err := a.reader.List(ctx, &list, client.MatchingFields{indexServiceAddresses: addr.String()}); err != nil {
		return types.NamespacedName{}, false, err
	}
	for i := range list.Items {
		s := types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}
		if s == self {
			continue
		}
		if r, ok := a.released[addr]; ok && r == s {
			continue
		}
		if h, ok := a.held[addr]; ok && h == self {
			// We gave it to self after the cached holder released it.
			continue
		}
		return s, true, nil
	}
	return types.NamespacedName{}, false, nil
}

// record notes that svc now holds exactly addrs (after a successful write).
// Call with mu held.
func (a *allocator) record(svc types.NamespacedName, before, addrs []netip.Addr) {
	for _, b := range before {
		if h, ok := a.held[b]; !ok || h == svc {
			delete(a.held, b)
		}
		a.released[b] = svc
	}
	for _, x := range addrs {
		a.held[x] = svc
		delete(a.released, x)
	}
}

// heldBy lists, sorted, the addresses this process gave svc. Call with mu
// held.
func (a *allocator) heldBy(svc types.NamespacedName) []netip.Addr {
	var out []netip.Addr
	for addr, h := range a.held {
		if h == svc {
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
