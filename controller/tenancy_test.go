package controller

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// The attacks of a shared cluster (issue 10), each against a real API
// server: a tenant who may edit Services in its own namespace must not get
// more than the group's admin allowed.

// instanceVIPs maps each instance key of a group's status to its VIPs.
func instanceVIPs(t testing.TB, ns, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, in := range getGroup(t, ns, name).Status.Instances {
		out[in.Key] = strings.Join(in.VIPs, ",")
	}
	return out
}

// perService pins a group to routerSharing: PerService, then applies mutate (if any).
// For tests that see which Service holds which address through the per-Service
// instances (instanceVIPs, waitInstances): the vetter that grants addresses runs
// before the plan and is the same with shared routers, whose status names no Service
// per address (TestSharedGrantRecordKeepsFirstHolder covers the grant record there).
func perService(mutate func(*v1alpha1.KeepalivedGroup)) func(*v1alpha1.KeepalivedGroup) {
	return func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.RouterSharing = v1alpha1.RouterSharingPerService
		if mutate != nil {
			mutate(g)
		}
	}
}

// waitInstances waits until the group's instances are exactly want (per-Service keys:
// the group must be perService).
func waitInstances(t testing.TB, ns, name string, want map[string]string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if got := instanceVIPs(t, ns, name); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("group %s instances %v, want %v", name, got, want)
		}
		return nil
	})
}

// waitEvent waits for an Event with the reason on the Service whose note
// contains every part.
func waitEvent(t testing.TB, ns, svc, reason string, parts ...string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		evs := serviceEvents(t, ns, reason)[svc]
		for _, e := range evs {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(e.Note, p)
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("no %s Event on %s/%s containing %q; have %d: %v", reason, ns, svc, parts, len(evs), evs)
	})
}

// TestNamespaceNotAllowed: a group that admits only selected namespaces
// gives a Service of another namespace no VIP (neither its externalIPs nor
// a pool address) and a NamespaceNotAllowed Event; labelling the namespace
// admits it without touching the Service (the Namespace watch), and
// removing the label takes the VIPs away again and releases the address.
func TestNamespaceNotAllowed(t *testing.T) {
	admin := newNamespace(t, "adm")
	tenant := newNamespace(t, "tenant")
	newGroup(t, admin, "g", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{
			From:     v1alpha1.NamespacesFromSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"vip-tenant": tenant}},
		}
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.200-10.99.0.203"}}
	}))
	newService(t, admin, "own", admin+"/g", withExternalIPs("10.99.0.40"))
	newService(t, tenant, "ext", admin+"/g", withExternalIPs("10.99.0.41"))
	newService(t, tenant, "lb", admin+"/g", asLoadBalancer)
	startManager(t, admin, tenant)

	// The group's own namespace is not selected either: nothing is
	// admitted, and each Service is told why.
	waitInstances(t, admin, "g", map[string]string{})
	waitEvent(t, tenant, "ext", ReasonNamespaceNotAllowed, "namespace "+tenant, admin+"/g")
	waitEvent(t, tenant, "lb", ReasonNamespaceNotAllowed)
	waitEvent(t, admin, "own", ReasonNamespaceNotAllowed)
	if got := allocated(t, tenant); len(got) != 0 {
		t.Fatalf("disallowed namespace got addresses: %v", got)
	}

	ctx := context.Background()
	setLabel := func(value string) {
		t.Helper()
		var ns corev1.Namespace
		if err := k8s.Get(ctx, types.NamespacedName{Name: tenant}, &ns); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(ns.Labels, "vip-tenant")
		} else {
			ns.Labels["vip-tenant"] = value
		}
		if err := k8s.Update(ctx, &ns); err != nil {
			t.Fatal(err)
		}
	}
	setLabel(tenant)
	waitInstances(t, admin, "g", map[string]string{tenant + "/ext": "10.99.0.41", tenant + "/lb": "10.99.0.200"})

	setLabel("")
	waitInstances(t, admin, "g", map[string]string{})
	eventually(t, 30*time.Second, func() error {
		if got := allocated(t, tenant); len(got) != 0 {
			return fmt.Errorf("address not released: %v", got)
		}
		return nil
	})
}

// TestAllowedNamespacesByNameAndSame: names admit by name, Same admits the
// group's namespace only.
func TestAllowedNamespacesByNameAndSame(t *testing.T) {
	admin := newNamespace(t, "adm")
	named := newNamespace(t, "named")
	other := newNamespace(t, "other")
	newGroup(t, admin, "byname", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Names: []string{named}}
		g.Spec.Segment = "byname"
	}))
	newGroup(t, admin, "same", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSame}
		g.Spec.Segment = "same"
	}))
	newService(t, named, "a", admin+"/byname", withExternalIPs("10.99.0.50"))
	newService(t, other, "b", admin+"/byname", withExternalIPs("10.99.0.51"))
	newService(t, admin, "c", admin+"/same", withExternalIPs("10.99.0.52"))
	newService(t, other, "d", admin+"/same", withExternalIPs("10.99.0.53"))
	startManager(t, admin, named, other)
	waitInstances(t, admin, "byname", map[string]string{named + "/a": "10.99.0.50"})
	waitInstances(t, admin, "same", map[string]string{admin + "/c": "10.99.0.52"})
	waitEvent(t, other, "b", ReasonNamespaceNotAllowed, "allowedNamespaces.names")
	waitEvent(t, other, "d", ReasonNamespaceNotAllowed, "from: Same")

	// The API server refuses a selector-less Selector and a selector
	// without from: Selector.
	for _, an := range []*v1alpha1.AllowedNamespaces{
		{From: v1alpha1.NamespacesFromSelector},
		{From: v1alpha1.NamespacesFromAll, Names: []string{"x"}},
	} {
		g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: admin, GenerateName: "bad-"},
			Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", AllowedNamespaces: an}}
		if err := k8s.Create(context.Background(), g); err == nil || !strings.Contains(err.Error(), "from: Selector needs") {
			t.Errorf("allowedNamespaces %+v: %v, want a validation error", an, err)
		}
	}
}

// TestStolenAddressStaysWithFirstHolder: a Service that lists another's
// address gets an AddressInUse Event and no VIP, whether it is newer (the
// older one keeps the address) or older and lists an address the pool gave
// the other (an allocated address outranks an externalIP); two Services of
// one namespace share only when both carry the same allow-shared-ip value.
// When the holder goes, the next claimant gets the address.
func TestStolenAddressStaysWithFirstHolder(t *testing.T) {
	ns := newNamespace(t, "steal")
	thieves := newNamespace(t, "thieves")
	newGroup(t, ns, "g", perService(withPool("10.99.0.210-10.99.0.211")))
	startManager(t, ns, thieves)
	newService(t, ns, "first", ns+"/g", withExternalIPs("10.99.0.60"))
	waitInstances(t, ns, "g", map[string]string{ns + "/first": "10.99.0.60"})
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
	newService(t, thieves, "later", ns+"/g", withExternalIPs("10.99.0.60", "10.99.0.61"))
	waitEvent(t, thieves, "later", ReasonAddressInUse, "10.99.0.60 is held by Service "+ns+"/first")
	waitInstances(t, ns, "g", map[string]string{ns + "/first": "10.99.0.60", thieves + "/later": "10.99.0.61"})

	// An older Service lists the address the pool gave a newer one.
	newService(t, ns, "lb", ns+"/g", asLoadBalancer)
	waitInstances(t, ns, "g", map[string]string{ns + "/first": "10.99.0.60", thieves + "/later": "10.99.0.61", ns + "/lb": "10.99.0.210"})
	ctx := context.Background()
	first := getService(t, ns, "first")
	first.Spec.ExternalIPs = append(first.Spec.ExternalIPs, "10.99.0.210")
	if err := k8s.Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ns, "first", ReasonAddressInUse, "10.99.0.210 is held by Service "+ns+"/lb")
	time.Sleep(500 * time.Millisecond)
	waitInstances(t, ns, "g", map[string]string{ns + "/first": "10.99.0.60", thieves + "/later": "10.99.0.61", ns + "/lb": "10.99.0.210"})

	// Sharing: both must ask, with the same value, in one namespace.
	shared := func(v string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.ExternalIPs = []string{"10.99.0.62"}
			if v != "" {
				s.Annotations[v1alpha1.AnnotationSharedIP] = v
			}
		}
	}
	newService(t, ns, "share-a", ns+"/g", shared("web"))
	time.Sleep(1100 * time.Millisecond)
	newService(t, ns, "share-b", ns+"/g", shared("web"))
	newService(t, ns, "share-c", ns+"/g", shared("other"))
	newService(t, thieves, "share-d", ns+"/g", shared("web"))
	eventually(t, 30*time.Second, func() error {
		got := instanceVIPs(t, ns, "g")
		if got[ns+"/share-a"] != "10.99.0.62" || got[ns+"/share-b"] != "10.99.0.62" {
			return fmt.Errorf("share-a and share-b not both served: %v", got)
		}
		if _, ok := got[ns+"/share-c"]; ok {
			return fmt.Errorf("share-c (another value) served: %v", got)
		}
		if _, ok := got[thieves+"/share-d"]; ok {
			return fmt.Errorf("share-d (another namespace) served: %v", got)
		}
		return nil
	})
	waitEvent(t, ns, "share-c", ReasonAddressInUse, "10.99.0.62 is held by Service "+ns+"/share-a")
	waitEvent(t, thieves, "share-d", ReasonAddressInUse, "10.99.0.62")

	// The holder goes: the next claimant in rank order gets it.
	if err := k8s.Delete(ctx, getService(t, ns, "first")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if got := instanceVIPs(t, ns, "g")[thieves+"/later"]; got != "10.99.0.60,10.99.0.61" {
			return fmt.Errorf("later: %q", got)
		}
		return nil
	})
}

// TestUnservedServicesDoNotBlockPool: Services the operator does not serve
// (no group annotation, a namespace the group does not admit, an address
// its group does not allow) list every pool address in externalIPs; a
// LoadBalancer Service of the group still gets one.
func TestUnservedServicesDoNotBlockPool(t *testing.T) {
	ns := newNamespace(t, "block")
	outsider := newNamespace(t, "outsider")
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.220-10.99.0.221"}}
		g.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSame}
	}))
	newGroup(t, ns, "strict", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.ExternalIPs = &v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.128/28"}}
	})
	all := withExternalIPs("10.99.0.220", "10.99.0.221")
	newService(t, ns, "plain", "", all)
	newService(t, outsider, "foreign", ns+"/g", all)
	newService(t, ns, "strict", ns+"/strict", all)
	startManager(t, ns, outsider)
	newService(t, ns, "lb", ns+"/g", asLoadBalancer)
	eventually(t, 30*time.Second, func() error {
		if got := fmt.Sprint(allocated(t, ns)); got != "map[lb:[10.99.0.220]]" {
			return fmt.Errorf("allocated %s", got)
		}
		return nil
	})
	waitInstances(t, ns, "g", map[string]string{ns + "/lb": "10.99.0.220"})
	waitInstances(t, ns, "strict", map[string]string{})
	waitEvent(t, ns, "strict", ReasonExternalIPNotAllowed, "externalIP 10.99.0.221 is outside")
}

// TestExternalIPAllowList: with an externalIPs policy only addresses in
// allowedCIDRs (and the pool, with fromAddressPool) are served; the rest of
// the Service and the group go on.
func TestExternalIPAllowList(t *testing.T) {
	ns := newNamespace(t, "allow")
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.230-10.99.0.231"}, AutoAssign: ptr.To(false)}
		g.Spec.ExternalIPs = &v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.96/28", "fd00:99::/120"}, FromAddressPool: true}
	}))
	newService(t, ns, "mixed", ns+"/g", withExternalIPs("10.99.0.100", "10.99.0.150", "fd00:99::5", "10.99.0.231"))
	startManager(t, ns)
	waitInstances(t, ns, "g", map[string]string{ns + "/mixed": "10.99.0.100,10.99.0.231,fd00:99::5"})
	waitEvent(t, ns, "mixed", ReasonExternalIPNotAllowed, "10.99.0.150")
}

// TestNodeAddressesNeverVIPs: a pool overlapping the member nodes'
// addresses never hands them out, and an externalIP naming a node's address
// is refused with an Event.
func TestNodeAddressesNeverVIPs(t *testing.T) {
	ns := newNamespace(t, "nodeaddr")
	nodes := newNodes(t, ns, 3, map[string]string{"nodeaddr": ns}) // InternalIPs 10.99.0.1-3
	ctx := context.Background()
	var n corev1.Node
	if err := k8s.Get(ctx, types.NamespacedName{Name: nodes[2]}, &n); err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "10.99.0.4"})
	if err := k8s.Status().Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = map[string]string{"nodeaddr": ns}
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.1-10.99.0.5"}}
	}))
	newService(t, ns, "lb1", ns+"/g", asLoadBalancer)
	newService(t, ns, "ext", ns+"/g", withExternalIPs("10.99.0.2", "10.99.0.70"))
	newService(t, ns, "asks", ns+"/g", func(s *corev1.Service) {
		asLoadBalancer(s)
		s.Annotations[v1alpha1.AnnotationLoadBalancerIPs] = "10.99.0.3"
	})
	startManager(t, ns)
	eventually(t, 30*time.Second, func() error {
		if got := fmt.Sprint(allocated(t, ns)); got != "map[lb1:[10.99.0.5]]" {
			return fmt.Errorf("allocated %s", got)
		}
		return nil
	})
	newService(t, ns, "lb2", ns+"/g", asLoadBalancer)
	waitEvent(t, ns, "lb2", ReasonAllocationFailed, "no free IPv4 address")
	waitEvent(t, ns, "ext", ReasonAddressNotUsable, "10.99.0.2 is an address of node "+nodes[1])
	waitEvent(t, ns, "asks", ReasonAllocationFailed, "10.99.0.3 is an address of node "+nodes[2])
	waitInstances(t, ns, "g", map[string]string{ns + "/lb1": "10.99.0.5", ns + "/ext": "10.99.0.70"})
}

// TestUnusableAddressesDoNotFreezeGroup: multicast externalIPs (the API
// server refuses only the link-local 224.0.0.0/24) and a pool CIDR's network address are refused one by
// one with an Event; the Services' other addresses and the
// group's other instances are still in the status.
func TestUnusableAddressesDoNotFreezeGroup(t *testing.T) {
	ns := newNamespace(t, "mcast")
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.64/30"}}
	}))
	newService(t, ns, "good", ns+"/g", withExternalIPs("10.99.0.31"))
	newService(t, ns, "mcast", ns+"/g", withExternalIPs("224.1.2.3"))
	newService(t, ns, "mixed", ns+"/g", withExternalIPs("10.99.0.32", "239.1.2.3"))
	newService(t, ns, "edge", ns+"/g", withExternalIPs("10.99.0.64", "10.99.0.33"))
	newService(t, ns, "lb", ns+"/g", asLoadBalancer)
	startManager(t, ns)
	waitInstances(t, ns, "g", map[string]string{
		ns + "/good": "10.99.0.31", ns + "/mixed": "10.99.0.32", ns + "/edge": "10.99.0.33", ns + "/lb": "10.99.0.65",
	})
	waitEvent(t, ns, "mcast", ReasonAddressNotUsable, "224.1.2.3 is a multicast address")
	waitEvent(t, ns, "mixed", ReasonAddressNotUsable, "239.1.2.3 is a multicast address")
	waitEvent(t, ns, "edge", ReasonAddressNotUsable, "10.99.0.64 is the network")
}

// TestOneRouterIDSpacePerSegment: a group naming an interface and one
// naming interfaceFromIP are on the cluster's default segment and never
// share a router ID; groups with different segment names may. Two groups
// whose status already collides (as after upgrading from per-interface
// spaces): the older keeps its IDs, the newer renumbers with an Event.
func TestOneRouterIDSpacePerSegment(t *testing.T) {
	ns := newNamespace(t, "segment")
	newGroup(t, ns, "byname", func(g *v1alpha1.KeepalivedGroup) { g.Spec.Interface = "eth0" })
	newGroup(t, ns, "byroute", func(g *v1alpha1.KeepalivedGroup) { g.Spec.Interface = ""; g.Spec.InterfaceFromIP = "10.99.0.254" })
	// byname and byroute share routers (the default); red and blue are per Service, so
	// that each reuses both IDs 1 and 2 of the other's segment.
	newGroup(t, ns, "red", perService(func(g *v1alpha1.KeepalivedGroup) { g.Spec.Segment = "red" }))
	newGroup(t, ns, "blue", perService(func(g *v1alpha1.KeepalivedGroup) { g.Spec.Segment = "blue" }))
	for gi, grp := range []string{"byname", "byroute", "red", "blue"} {
		for i := range 2 {
			newService(t, ns, fmt.Sprintf("%s%d", grp, i), ns+"/"+grp, withExternalIPs(fmt.Sprintf("10.99.0.%d", 100+10*gi+i)))
		}
	}
	startManager(t, ns)
	eventually(t, 30*time.Second, func() error {
		a, b := getGroup(t, ns, "byname").Status.RouterIDs, getGroup(t, ns, "byroute").Status.RouterIDs
		if len(a) != 2 || len(b) != 2 {
			return fmt.Errorf("byname %v, byroute %v", a, b)
		}
		for ka, ia := range a {
			for kb, ib := range b {
				if ia == ib {
					return fmt.Errorf("router ID %d on one segment for %s and %s", ia, ka, kb)
				}
			}
		}
		return nil
	})
	waitRouterIDs(t, ns, "red", map[string]int{ns + "/red0": 1, ns + "/red1": 2})
	waitRouterIDs(t, ns, "blue", map[string]int{ns + "/blue0": 1, ns + "/blue1": 2})
}

// TestCollisionFromUpgradeRenumbersLater: two groups on different
// interfaces (separate router-ID spaces before segments) both hold ID 1;
// on the shared default segment the older keeps it and the newer gets a
// fresh ID and a RouterIDRenumbered Event.
func TestCollisionFromUpgradeRenumbersLater(t *testing.T) {
	ns := newNamespace(t, "upgrade")
	ctx := context.Background()
	for i, name := range []string{"early", "late"} {
		if i == 1 {
			time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
		}
		g := newGroup(t, ns, name, perService(func(g *v1alpha1.KeepalivedGroup) { g.Spec.Interface = fmt.Sprintf("eth%d", i) }))
		g.Status.RouterIDs = map[string]int{ns + "/" + name: 1}
		if err := k8s.Status().Update(ctx, g); err != nil {
			t.Fatal(err)
		}
		newService(t, ns, name, ns+"/"+name, withExternalIPs(fmt.Sprintf("10.99.0.%d", 70+i)))
	}
	startManager(t, ns)
	waitRouterIDs(t, ns, "early", map[string]int{ns + "/early": 1})
	waitRouterIDs(t, ns, "late", map[string]int{ns + "/late": 2})
	eventually(t, 30*time.Second, func() error {
		evs := groupEvents(t, ns, "late", ReasonRouterIDRenumbered)
		if len(evs) != 1 || !strings.Contains(evs[0].Note, ns+"/late 1->2") {
			return fmt.Errorf("late: events %v", evs)
		}
		if evs := groupEvents(t, ns, "early", ReasonRouterIDRenumbered); len(evs) != 0 {
			return fmt.Errorf("early renumbered: %v", evs)
		}
		return nil
	})
}

// TestSharedRequestedAddress: two LoadBalancer Services of one namespace
// with the same allow-shared-ip value that request one pool address both
// get it; a third with that value but no request is given another
// address (automatic assignment never shares); a Service without the value
// asking for it is refused.
func TestSharedRequestedAddress(t *testing.T) {
	ns := newNamespace(t, "shareip")
	newGroup(t, ns, "g", perService(withPool("10.99.0.240-10.99.0.243")))
	startManager(t, ns)
	lb := func(request, key string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			asLoadBalancer(s)
			if request != "" {
				s.Annotations[v1alpha1.AnnotationLoadBalancerIPs] = request
			}
			if key != "" {
				s.Annotations[v1alpha1.AnnotationSharedIP] = key
			}
		}
	}
	ingress := func(name string) string {
		var ips []string
		for _, in := range getService(t, ns, name).Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		return strings.Join(ips, ",")
	}
	// tcp first, so that it is the holder the others meet.
	newService(t, ns, "tcp", ns+"/g", lb("10.99.0.242", "dns"))
	eventually(t, 30*time.Second, func() error {
		if got := ingress("tcp"); got != "10.99.0.242" {
			return fmt.Errorf("tcp: %q", got)
		}
		return nil
	})
	newService(t, ns, "udp", ns+"/g", lb("10.99.0.242", "dns"))
	newService(t, ns, "auto", ns+"/g", lb("", "dns"))
	newService(t, ns, "loner", ns+"/g", lb("10.99.0.242", ""))
	eventually(t, 30*time.Second, func() error {
		got := fmt.Sprintf("tcp=%s udp=%s auto=%s loner=%s", ingress("tcp"), ingress("udp"), ingress("auto"), ingress("loner"))
		if got != "tcp=10.99.0.242 udp=10.99.0.242 auto=10.99.0.240 loner=" {
			return fmt.Errorf("%s", got)
		}
		return nil
	})
	waitEvent(t, ns, "loner", ReasonAllocationFailed, "10.99.0.242 is already in use by Service "+ns+"/")
	waitInstances(t, ns, "g", map[string]string{ns + "/tcp": "10.99.0.242", ns + "/udp": "10.99.0.242", ns + "/auto": "10.99.0.240"})
}

// TestOtherNodesAndForeignIngressHeld: an address of a node outside the group
// (a control-plane node, another group's) and an address another load
// balancer wrote to a Service's status are never a VIP of this group, whatever
// a tenant lists in externalIPs, and the pool never hands them out.
func TestOtherNodesAndForeignIngressHeld(t *testing.T) {
	ns := newNamespace(t, "foreign")
	ctx := context.Background()
	outside := newNodes(t, ns, 1, map[string]string{"role": "control-plane"}) // InternalIP 10.99.0.1
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = map[string]string{"foreign-member": ns}
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.1-10.99.0.3"}}
	}))
	// Another load balancer's Service, not annotated for any group, holding 10.99.0.2.
	other := newService(t, ns, "metallb", "", asLoadBalancer)
	other.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.99.0.2"}}
	if err := k8s.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	newService(t, ns, "thief", ns+"/g", withExternalIPs("10.99.0.1", "10.99.0.2", "10.99.0.40"))
	startManager(t, ns)
	newService(t, ns, "lb", ns+"/g", asLoadBalancer)
	eventually(t, 30*time.Second, func() error {
		if got := fmt.Sprint(allocated(t, ns)); got != "map[lb:[10.99.0.3] metallb:[10.99.0.2]]" {
			return fmt.Errorf("allocated %s", got)
		}
		return nil
	})
	waitInstances(t, ns, "g", map[string]string{ns + "/thief": "10.99.0.40", ns + "/lb": "10.99.0.3"})
	waitEvent(t, ns, "thief", ReasonAddressNotUsable, "10.99.0.1 is an address of node "+outside[0])
	waitEvent(t, ns, "thief", ReasonAddressInUse, "10.99.0.2")
}
