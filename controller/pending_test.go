package controller

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

func pendingSvc(name, group string, mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{v1alpha1.AnnotationGroup: group}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// TestPendingAllocations: a group waits while its LoadBalancer Services are
// queued for an address, not for other groups' or for Services that need
// none, and never longer than pendingMaxDefer, nor once the queue stalls.
func TestPendingAllocations(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPendingAllocations()
	p.now = func() time.Time { return now }
	g1 := types.NamespacedName{Namespace: "ns", Name: "g1"}
	g2 := types.NamespacedName{Namespace: "ns", Name: "g2"}

	if d := p.wait(g1); d != 0 {
		t.Fatalf("nothing queued: wait %v", d)
	}
	// None of these needs an address from us.
	p.queued(pendingSvc("cluster", "ns/g1", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }))
	p.queued(pendingSvc("has", "ns/g1", func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.99.0.1"}}
	}))
	p.queued(pendingSvc("other-class", "ns/g1", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") }))
	p.queued(pendingSvc("unannotated", "", func(s *corev1.Service) { delete(s.Annotations, v1alpha1.AnnotationGroup) }))
	p.queued(pendingSvc("deleting", "ns/g1", func(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{Time: now} }))
	if d := p.wait(g1); d != 0 {
		t.Fatalf("only Services needing no address queued: wait %v", d)
	}

	a := pendingSvc("a", "ns/g1", nil)
	b := pendingSvc("b", "ns/g1", nil)
	p.queued(a)
	p.queued(b)
	p.queued(a) // queued twice, counted once
	if d := p.wait(g1); d != pendingRecheck {
		t.Fatalf("two queued: wait %v, want %v", d, pendingRecheck)
	}
	if d := p.wait(g2); d != 0 {
		t.Fatalf("another group: wait %v", d)
	}
	now = now.Add(500 * time.Millisecond)
	p.done(types.NamespacedName{Namespace: "ns", Name: "a"})
	if d := p.wait(g1); d != pendingRecheck {
		t.Fatalf("one left: wait %v", d)
	}
	p.done(types.NamespacedName{Namespace: "ns", Name: "b"})
	if d := p.wait(g1); d != 0 {
		t.Fatalf("all done: wait %v", d)
	}

	// A Service that moves to another group counts for the new one only.
	p.queued(a)
	p.queued(pendingSvc("a", "ns/g2", nil))
	if p.wait(g1) != 0 || p.wait(g2) != pendingRecheck {
		t.Fatalf("moved: g1 %v, g2 %v", p.wait(g1), p.wait(g2))
	}
	p.done(types.NamespacedName{Namespace: "ns", Name: "a"})

	// The queue stalls (no reconcile ends for pendingStall): no wait.
	p.queued(b)
	now = now.Add(pendingStall)
	if d := p.wait(g1); d != 0 {
		t.Fatalf("stalled: wait %v", d)
	}

	// Progress, but for longer than pendingMaxDefer: the group is written,
	// then may wait again.
	p.queued(a)
	first := now
	for now.Sub(first) < pendingMaxDefer {
		if d := p.wait(g1); d != pendingRecheck {
			t.Fatalf("after %v: wait %v", now.Sub(first), d)
		}
		now = now.Add(pendingStall / 2)
		p.done(types.NamespacedName{Namespace: "ns", Name: "x"}) // another Service's reconcile ends: progress
	}
	if d := p.wait(g1); d != 0 {
		t.Fatalf("after %v: wait %v, want 0", now.Sub(first), d)
	}
	if d := p.wait(g1); d != pendingRecheck {
		t.Fatalf("the next window: wait %v", d)
	}
}

// TestAllocatorHeldCount: heldBy stays right through reserve, undo, record
// and an address changing hands, and a Service that holds nothing leaves no
// count behind (allocatedHere relies on it for every Service it asks about).
func TestAllocatorHeldCount(t *testing.T) {
	a := newAllocator()
	s1 := types.NamespacedName{Namespace: "ns", Name: "s1"}
	s2 := types.NamespacedName{Namespace: "ns", Name: "s2"}
	x, y := netip.MustParseAddr("10.99.0.1"), netip.MustParseAddr("fd00:99::1")
	check := func(what string, svc types.NamespacedName, want ...netip.Addr) {
		t.Helper()
		if got := a.heldBy(svc); !slices.Equal(got, want) {
			t.Errorf("%s: heldBy(%s) = %v, want %v", what, svc.Name, got, want)
		}
		if _, ok := a.heldCount[svc]; ok != (len(want) > 0) {
			t.Errorf("%s: count entry for %s: %v, want %v", what, svc.Name, a.heldCount[svc], len(want))
		}
	}
	undo := a.reserve(s1, []netip.Addr{x, y})
	check("reserved", s1, x, y)
	undo()
	check("undone", s1)
	a.reserve(s1, []netip.Addr{x, y})
	a.record(s1, nil, []netip.Addr{x, y})
	check("recorded", s1, x, y)
	a.record(s2, nil, []netip.Addr{y}) // y changes hands
	check("after s2 took y", s1, x)
	check("s2 took y", s2, y)
	a.record(s1, []netip.Addr{x}, nil) // s1 releases x
	check("released", s1)
	if len(a.held) != 1 || len(a.heldCount) != 1 {
		t.Errorf("held %v, counts %v: want only s2's y", a.held, a.heldCount)
	}
}
