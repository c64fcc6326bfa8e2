package controller

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

func withPool(addrs ...v1alpha1.AddressRange) func(*v1alpha1.KeepalivedGroup) {
	return func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: addrs}
	}
}

// allocated lists the LoadBalancer addresses of every Service in ns and
// fails on a duplicate or an ingress without ipMode VIP.
func allocated(t testing.TB, ns string) map[string][]string {
	t.Helper()
	var list corev1.ServiceList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	owner := map[string]string{}
	for _, s := range list.Items {
		for _, in := range s.Status.LoadBalancer.Ingress {
			if prev, dup := owner[in.IP]; dup {
				t.Fatalf("address %s allocated to both %s and %s", in.IP, prev, s.Name)
			}
			if in.IPMode == nil || *in.IPMode != corev1.LoadBalancerIPModeVIP {
				t.Fatalf("%s: ingress %s without ipMode VIP", s.Name, in.IP)
			}
			owner[in.IP] = s.Name
			out[s.Name] = append(out[s.Name], in.IP)
		}
	}
	return out
}

func getService(t testing.TB, ns, name string) *corev1.Service {
	t.Helper()
	var s corev1.Service
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestConcurrentAllocation: 20 LoadBalancer Services created at once
// against an 8-address pool, with 4 Service workers racing: exactly 8 get
// an address, all distinct, and the other 12 each get an AllocationFailed
// Event saying the pool is exhausted. Deleting a Service frees its address
// for a waiting one; a restarted operator keeps every allocation and still
// never duplicates.
func TestConcurrentAllocation(t *testing.T) {
	ns := newNamespace(t, "alloc")
	// A range, not the CIDR 10.99.0.200/29: a CIDR's network and broadcast
	// addresses are never handed out, and this test races for all eight.
	newGroup(t, ns, "g", withPool("10.99.0.200-10.99.0.207"))
	startManager(t, ns)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { newService(t, ns, fmt.Sprintf("s%02d", i), ns+"/g", asLoadBalancer) })
	}
	wg.Wait()
	pool := netip.MustParsePrefix("10.99.0.200/29")
	eventually(t, 30*time.Second, func() error {
		got := allocated(t, ns)
		if len(got) != 8 {
			return fmt.Errorf("%d Services have addresses, want 8", len(got))
		}
		for name, ips := range got {
			if len(ips) != 1 || !pool.Contains(netip.MustParseAddr(ips[0])) {
				return fmt.Errorf("%s got %v", name, ips)
			}
		}
		failed := serviceEvents(t, ns, ReasonAllocationFailed)
		if len(failed) != 12 {
			return fmt.Errorf("%d Services with AllocationFailed, want 12", len(failed))
		}
		for name, evs := range failed {
			if _, ok := got[name]; ok {
				return fmt.Errorf("%s both allocated and failed", name)
			}
			if !strings.Contains(evs[0].Note, "no free IPv4 address in the pool of group "+ns+"/g") {
				return fmt.Errorf("%s: event note %q", name, evs[0].Note)
			}
		}
		return nil
	})

	// The group's status carries the allocated VIPs, each in one instance (shared
	// routers, the default: as many as the 8 Services' hash buckets in a group
	// without nodes), and each Service's router ID.
	eventually(t, 20*time.Second, func() error {
		g := getGroup(t, ns, "g")
		listed := map[string]int{}
		for _, in := range g.Status.Instances {
			for _, v := range in.VIPs {
				listed[v]++
			}
		}
		for name, ips := range allocated(t, ns) {
			if listed[ips[0]] != 1 || g.Status.RouterIDs[ns+"/"+name] == 0 {
				return fmt.Errorf("%s's %s in %d instances, router ID %d", name, ips[0], listed[ips[0]], g.Status.RouterIDs[ns+"/"+name])
			}
		}
		if len(listed) != 8 || len(g.Status.RouterIDs) != 8 {
			return fmt.Errorf("%d VIPs in the instances, %d routerIDs, want 8", len(listed), len(g.Status.RouterIDs))
		}
		return nil
	})

	freeOne := func() {
		t.Helper()
		got := allocated(t, ns)
		var victim string
		for name := range got {
			victim = name
			break
		}
		freed := got[victim][0]
		if err := k8s.Delete(context.Background(), getService(t, ns, victim)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: victim}, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s not gone yet: %v", victim, err)
			}
			now := allocated(t, ns)
			if len(now) != 8 {
				return fmt.Errorf("%d allocated after deleting %s, want 8", len(now), victim)
			}
			for name, ips := range now {
				if ips[0] == freed {
					if _, before := got[name]; before {
						return fmt.Errorf("%s had an address already", name)
					}
					return nil
				}
			}
			return fmt.Errorf("freed %s not reassigned", freed)
		})
	}
	freeOne()

	// A new operator process: allocations survive, and the next free
	// address still goes to exactly one waiting Service.
	startManager(t, ns).stop()
	startManager(t, ns)
	freeOne()
}

// TestRequestedAddressesAndRelease covers requests (annotation and
// spec.loadBalancerIP), a request outside the pool or already taken, dual
// stack, and release on type change and annotation removal; a Service of
// another load-balancer class is left alone.
func TestRequestedAddressesAndRelease(t *testing.T) {
	ns := newNamespace(t, "req")
	// Ranges, so the first addresses (a CIDR's edges) are handed out.
	newGroup(t, ns, "g", withPool("10.99.0.0-10.99.0.15", "fd00:99::-fd00:99::f"))
	startManager(t, ns)
	ann := func(k, v string) func(*corev1.Service) {
		return func(s *corev1.Service) { asLoadBalancer(s); s.Annotations[k] = v }
	}
	newService(t, ns, "asks", ns+"/g", ann(v1alpha1.AnnotationLoadBalancerIPs, "10.99.0.5"))
	newService(t, ns, "legacy", ns+"/g", func(s *corev1.Service) { asLoadBalancer(s); s.Spec.LoadBalancerIP = "10.99.0.7" })
	newService(t, ns, "outside", ns+"/g", ann(v1alpha1.AnnotationLoadBalancerIPs, "10.99.1.1"))
	newService(t, ns, "garbage", ns+"/g", ann(v1alpha1.AnnotationLoadBalancerIPs, "10.99.0.9,10.99.0.10"))
	newService(t, ns, "dual", ns+"/g", func(s *corev1.Service) {
		asLoadBalancer(s)
		s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
	})
	newService(t, ns, "other-class", ns+"/g", func(s *corev1.Service) {
		asLoadBalancer(s)
		s.Spec.LoadBalancerClass = ptr.To("example.com/other")
	})
	eventually(t, 20*time.Second, func() error {
		got := allocated(t, ns)
		want := map[string]string{"asks": "[10.99.0.5]", "legacy": "[10.99.0.7]", "dual": "[10.99.0.0 fd00:99::]"}
		if len(got) != len(want) {
			return fmt.Errorf("allocated %v, want %v", got, want)
		}
		for name, w := range want {
			if fmt.Sprint(got[name]) != w {
				return fmt.Errorf("%s: %v, want %s", name, got[name], w)
			}
		}
		if ev := serviceEvents(t, ns, ReasonAllocationFailed)["outside"]; len(ev) != 1 || !strings.Contains(ev[0].Note, "10.99.1.1, which is not in the address pool") {
			return fmt.Errorf("outside: events %v", ev)
		}
		if ev := serviceEvents(t, ns, ReasonInvalidAnnotation)["garbage"]; len(ev) != 1 || !strings.Contains(ev[0].Note, "at most one per family") {
			return fmt.Errorf("garbage: events %v", ev)
		}
		return nil
	})
	if s := getService(t, ns, "other-class"); controllerutil.ContainsFinalizer(s, serviceFinalizer) {
		t.Fatal("other-class Service got our finalizer")
	}

	// The same request again: refused, naming the holder.
	newService(t, ns, "copycat", ns+"/g", ann(v1alpha1.AnnotationLoadBalancerIPs, "10.99.0.5"))
	eventually(t, 20*time.Second, func() error {
		ev := serviceEvents(t, ns, ReasonAllocationFailed)["copycat"]
		if len(ev) != 1 || !strings.Contains(ev[0].Note, "10.99.0.5 is already in use by Service "+ns+"/asks") {
			return fmt.Errorf("copycat: events %v", ev)
		}
		return nil
	})

	// Release on type change and on annotation removal.
	ctx := context.Background()
	s := getService(t, ns, "asks")
	s.Spec.Type = corev1.ServiceTypeClusterIP
	s.Spec.AllocateLoadBalancerNodePorts = nil
	if err := k8s.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	s = getService(t, ns, "legacy")
	delete(s.Annotations, v1alpha1.AnnotationGroup)
	if err := k8s.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		for _, name := range []string{"asks", "legacy"} {
			s := getService(t, ns, name)
			if len(s.Status.LoadBalancer.Ingress) != 0 || controllerutil.ContainsFinalizer(s, serviceFinalizer) {
				return fmt.Errorf("%s not released: %v %v", name, s.Status.LoadBalancer.Ingress, s.Finalizers)
			}
		}
		if n := len(serviceEvents(t, ns, ReasonIPReleased)); n != 2 {
			return fmt.Errorf("%d IPReleased events, want 2", n)
		}
		return nil
	})
}

// TestAutoAssignOff: with autoAssign false only Services that ask for an
// address get one.
func TestAutoAssignOff(t *testing.T) {
	ns := newNamespace(t, "noauto")
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.32/30"}, AutoAssign: ptr.To(false)}
	})
	startManager(t, ns)
	newService(t, ns, "plain", ns+"/g", asLoadBalancer)
	newService(t, ns, "asks", ns+"/g", func(s *corev1.Service) {
		asLoadBalancer(s)
		s.Annotations[v1alpha1.AnnotationLoadBalancerIPs] = "10.99.0.34"
	})
	eventually(t, 20*time.Second, func() error {
		got := allocated(t, ns)
		if fmt.Sprint(got) != "map[asks:[10.99.0.34]]" {
			return fmt.Errorf("allocated %v", got)
		}
		return nil
	})
	// Still nothing for "plain" once everything has settled.
	time.Sleep(500 * time.Millisecond)
	if s := getService(t, ns, "plain"); len(s.Status.LoadBalancer.Ingress) != 0 || controllerutil.ContainsFinalizer(s, serviceFinalizer) {
		t.Fatalf("plain: %v %v", s.Status.LoadBalancer.Ingress, s.Finalizers)
	}
}

// TestAllocationWithoutFinalizer: an allocation is one status write (no
// finalizer; managedFields records the ingress as ours), so deleting the
// Service is immediate and frees the address for a waiting Service, and
// removing the group annotation releases it. A Service allocated by an
// earlier version (our finalizer, ingress written by another field
// manager) keeps its address, loses the finalizer, and is still released.
// Ingress another load balancer wrote on an unannotated Service is never
// touched.
func TestAllocationWithoutFinalizer(t *testing.T) {
	ns := newNamespace(t, "nofin")
	newGroup(t, ns, "g", withPool("10.99.0.40-10.99.0.41"))
	ctx := context.Background()
	setIngress := func(name, ip, manager string) {
		t.Helper()
		s := getService(t, ns, name)
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
		if err := k8s.Status().Update(ctx, s, client.FieldOwner(manager)); err != nil {
			t.Fatal(err)
		}
	}
	// As an earlier version of the operator left it: our finalizer, the address written
	// under the binary's default field manager.
	newService(t, ns, "old", ns+"/g", func(s *corev1.Service) {
		asLoadBalancer(s)
		s.Finalizers = []string{serviceFinalizer}
	})
	setIngress("old", "10.99.0.41", "operator")
	// Another load balancer's Service: no group annotation.
	newService(t, ns, "foreign", "", asLoadBalancer)
	setIngress("foreign", "10.99.0.200", "metallb-controller")

	startManager(t, ns)
	newService(t, ns, "a", ns+"/g", asLoadBalancer)
	newService(t, ns, "b", ns+"/g", asLoadBalancer)
	// One of a and b gets 10.99.0.40 (whichever is reconciled first), the
	// other waits.
	var holder, waiting string
	eventually(t, 20*time.Second, func() error {
		got := allocated(t, ns)
		holder, waiting = "a", "b"
		if len(got["b"]) > 0 {
			holder, waiting = "b", "a"
		}
		if fmt.Sprint(got["old"]) != "[10.99.0.41]" || fmt.Sprint(got[holder]) != "[10.99.0.40]" || len(got[waiting]) != 0 {
			return fmt.Errorf("allocated %v", got)
		}
		for _, name := range []string{"old", holder} {
			if s := getService(t, ns, name); len(s.Finalizers) != 0 {
				return fmt.Errorf("%s has finalizers %v", name, s.Finalizers)
			}
		}
		if !ownsIngress(getService(t, ns, holder).ManagedFields) {
			return fmt.Errorf("%s: managedFields do not show our ingress: %v", holder, getService(t, ns, holder).ManagedFields)
		}
		if len(serviceEvents(t, ns, ReasonAllocationFailed)[waiting]) == 0 {
			return fmt.Errorf("%s has no AllocationFailed event yet", waiting)
		}
		return nil
	})

	// Deleting the holder is immediate; its address goes to the other.
	if err := k8s.Delete(ctx, getService(t, ns, holder)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: holder}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Fatalf("%s still there after delete: %v", holder, err)
	}
	eventually(t, 20*time.Second, func() error {
		if got := allocated(t, ns); fmt.Sprint(got[waiting]) != "[10.99.0.40]" {
			return fmt.Errorf("allocated %v", got)
		}
		return nil
	})

	// Both kinds of allocation are released when the annotation goes.
	for _, name := range []string{"old", waiting} {
		s := getService(t, ns, name)
		delete(s.Annotations, v1alpha1.AnnotationGroup)
		if err := k8s.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, func() error {
		got := allocated(t, ns)
		if len(got) != 1 || fmt.Sprint(got["foreign"]) != "[10.99.0.200]" {
			return fmt.Errorf("allocated %v, want only foreign's", got)
		}
		return nil
	})
}
