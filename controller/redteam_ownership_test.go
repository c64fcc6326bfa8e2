package controller

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// Issue 27, item 3: who holds an address. Each test attacks the rule "the
// first grant wins, whatever the Services' ages" against a real API server,
// and each failed on main at 687580a, where the older Service (or an address
// in status.loadBalancer.ingress, whoever wrote it) won.

// holdInstances checks, for the whole of d, that the group's instances stay
// exactly want: a takeover the operator is about to make shows within it.
func holdInstances(t *testing.T, ns, name string, want map[string]string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if got := instanceVIPs(t, ns, name); !reflect.DeepEqual(got, want) {
			t.Fatalf("group %s instances became %v, want them to stay %v", name, got, want)
		}
	}
}

// ingressOf is a Service's status.loadBalancer.ingress addresses, joined.
func ingressOf(t *testing.T, ns, name string) string {
	t.Helper()
	var ips []string
	for _, in := range getService(t, ns, name).Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	return strings.Join(ips, ",")
}

// TestRedTeamOlderThiefGetsAddressInUse: Service b/new holds externalIP
// 10.99.0.81; the older a/old then adds the same address. The holder keeps
// it, and the thief gets AddressInUse.
func TestRedTeamOlderThiefGetsAddressInUse(t *testing.T) {
	admin := newNamespace(t, "own-adm")
	a := newNamespace(t, "own-a")
	b := newNamespace(t, "own-b")
	newGroup(t, admin, "g", perService(nil))
	newService(t, a, "old", admin+"/g", withExternalIPs("10.99.0.80"))
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
	newService(t, b, "new", admin+"/g", withExternalIPs("10.99.0.81"))
	startManager(t, admin, a, b)
	want := map[string]string{a + "/old": "10.99.0.80", b + "/new": "10.99.0.81"}
	waitInstances(t, admin, "g", want)

	old := getService(t, a, "old")
	old.Spec.ExternalIPs = append(old.Spec.ExternalIPs, "10.99.0.81")
	if err := k8s.Update(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, a, "old", ReasonAddressInUse, "10.99.0.81 is held by Service "+b+"/new", "granted first")
	holdInstances(t, admin, "g", want, 3*time.Second)
}

// TestRedTeamRestartKeepsFirstHolder: a/s1 is allocated pool address .200,
// b/s2 lists .200 in externalIPs and gets AddressInUse; and c/new holds
// externalIP .90, which the older c/old adds later. After an operator restart
// (a new manager against the same API server, nothing in memory) s1 still
// has .200 and new still has .90: neither is moved nor taken.
func TestRedTeamRestartKeepsFirstHolder(t *testing.T) {
	admin := newNamespace(t, "rs-adm")
	a := newNamespace(t, "rs-a")
	b := newNamespace(t, "rs-b")
	c := newNamespace(t, "rs-c")
	newGroup(t, admin, "g", perService(withPool("10.99.0.200-10.99.0.203")))
	newService(t, c, "old", admin+"/g", withExternalIPs("10.99.0.91"))
	time.Sleep(1100 * time.Millisecond)
	newService(t, c, "new", admin+"/g", withExternalIPs("10.99.0.90"))
	m := startManager(t, admin, a, b, c)
	newService(t, a, "s1", admin+"/g", asLoadBalancer)
	eventually(t, 30*time.Second, func() error {
		if got := ingressOf(t, a, "s1"); got != "10.99.0.200" {
			return fmt.Errorf("s1 ingress %q", got)
		}
		return nil
	})
	want := map[string]string{a + "/s1": "10.99.0.200", c + "/old": "10.99.0.91", c + "/new": "10.99.0.90"}
	waitInstances(t, admin, "g", want)
	newService(t, b, "s2", admin+"/g", withExternalIPs("10.99.0.200"))
	waitEvent(t, b, "s2", ReasonAddressInUse, "10.99.0.200 is held by Service "+a+"/s1")
	old := getService(t, c, "old")
	old.Spec.ExternalIPs = append(old.Spec.ExternalIPs, "10.99.0.90")
	if err := k8s.Update(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, "old", ReasonAddressInUse, "10.99.0.90 is held by Service "+c+"/new")
	holdInstances(t, admin, "g", want, time.Second)

	m.stop()
	startManager(t, admin, a, b, c)
	// The new process reconciles every Service and the group at start; a
	// move shows within seconds.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if got := ingressOf(t, a, "s1"); got != "10.99.0.200" {
			t.Fatalf("after the restart s1 has %q, want 10.99.0.200", got)
		}
		if got := instanceVIPs(t, admin, "g"); !reflect.DeepEqual(got, want) {
			t.Fatalf("after the restart the group's instances are %v, want %v", got, want)
		}
	}
}

// TestRedTeamForeignIngressNotTrusted: addresses another controller (or
// anyone who may write a Service's status) put in status.loadBalancer.ingress
// of a Service of the group are checked against the pool, the group's
// externalIPs policy and the holder: an address outside the pool counts as
// an externalIP (no allocated address's rank, the policy applies), one inside
// does not outrank the Service the pool gave it to, however old the writer's
// Service.
func TestRedTeamForeignIngressNotTrusted(t *testing.T) {
	ns := newNamespace(t, "fing")
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.200-10.99.0.203"}, AutoAssign: ptr.To(false)}
		g.Spec.ExternalIPs = &v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.0/26"}, FromAddressPool: true}
	}))
	// The thief is the oldest Service, a LoadBalancer the operator gives
	// nothing (no request, autoAssign off).
	newService(t, ns, "thief", ns+"/g", asLoadBalancer)
	time.Sleep(1100 * time.Millisecond)
	newService(t, ns, "holder", ns+"/g", withExternalIPs("10.99.0.60"))
	newService(t, ns, "lb", ns+"/g", func(s *corev1.Service) {
		asLoadBalancer(s)
		s.Annotations[v1alpha1.AnnotationLoadBalancerIPs] = "10.99.0.200"
	})
	startManager(t, ns)
	want := map[string]string{ns + "/holder": "10.99.0.60", ns + "/lb": "10.99.0.200"}
	waitInstances(t, ns, "g", want)

	// "Another controller" writes three addresses into the thief's status.
	thief := getService(t, ns, "thief")
	for _, ip := range []string{"10.99.0.60", "10.99.0.200", "10.99.0.150"} {
		thief.Status.LoadBalancer.Ingress = append(thief.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if err := k8s.Status().Update(context.Background(), thief); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ns, "thief", ReasonAddressInUse, "10.99.0.60 is held by Service "+ns+"/holder")
	waitEvent(t, ns, "thief", ReasonAddressInUse, "10.99.0.200 is held by Service "+ns+"/lb")
	waitEvent(t, ns, "thief", ReasonExternalIPNotAllowed, "status.loadBalancer.ingress 10.99.0.150")
	holdInstances(t, ns, "g", want, 3*time.Second)
}

// TestUnsyncedViewGrantsNothingNew: while the operator's view of the
// Services is not complete, a grant the group's status records stays, and no
// address is granted or allocated that it does not record (fail closed: a
// Service the view has not seen may hold it); once the view is complete,
// they are.
func TestUnsyncedViewGrantsNothingNew(t *testing.T) {
	ns := newNamespace(t, "unsynced")
	newGroup(t, ns, "g", perService(withPool("10.99.0.200-10.99.0.203")))
	newService(t, ns, "holder", ns+"/g", withExternalIPs("10.99.0.70"))
	m := startManager(t, ns)
	waitInstances(t, ns, "g", map[string]string{ns + "/holder": "10.99.0.70"})
	m.stop()

	var synced atomic.Bool
	startManagerWith(t, testConfig, Options{VrrpdImage: testImage, viewSynced: synced.Load}, ns)
	newService(t, ns, "fresh", ns+"/g", withExternalIPs("10.99.0.71"))
	newService(t, ns, "lb", ns+"/g", asLoadBalancer)
	// The holder gets its address back in the status the group's next reconcile
	// writes (the new Services wake it) and nothing else comes in.
	held := map[string]string{ns + "/holder": "10.99.0.70"}
	holdInstances(t, ns, "g", held, 3*time.Second)
	if got := allocated(t, ns); len(got) != 0 {
		t.Fatalf("allocated while the view is not synced: %v", got)
	}

	synced.Store(true)
	all := maps.Clone(held)
	all[ns+"/fresh"] = "10.99.0.71"
	all[ns+"/lb"] = "10.99.0.200"
	waitInstances(t, ns, "g", all)
}

// TestVetterDefersWhatTheIndexDoesNotShow: a Service the operator's cache (and so its
// address index) does not show yet gets no VIP and marks the decision deferred (the
// reconcile retries), where before its own claim was taken as all there was. The
// operator's cache here sees only one namespace; the Service lives in another, as a
// Service just created does until its watch event arrives.
func TestVetterDefersWhatTheIndexDoesNotShow(t *testing.T) {
	ns := newNamespace(t, "lag")
	unseen := newNamespace(t, "lag-unseen")
	newGroup(t, ns, "g", perService(nil))
	m := startManager(t, ns)
	newService(t, ns, "seen", ns+"/g", withExternalIPs("10.99.0.75"))
	waitInstances(t, ns, "g", map[string]string{ns + "/seen": "10.99.0.75"})
	lagging := newService(t, unseen, "lagging", ns+"/g", withExternalIPs("10.99.0.76"))

	ctx := context.Background()
	v := newVetter(ctx, m.r.Services.Client)
	got, refused, err := v.vips(lagging)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || len(refused) != 0 || !v.deferred {
		t.Errorf("a Service the index does not show: VIPs %v, refused %v, deferred %v; want none, none, true", got, refused, v.deferred)
	}
	// The same question about a Service the cache shows is answered.
	v = newVetter(ctx, m.r.Services.Client)
	got, _, err = v.vips(getService(t, ns, "seen"))
	if err != nil || fmt.Sprint(got) != "[10.99.0.75]" || v.deferred {
		t.Errorf("a Service the index shows: VIPs %v (%v), deferred %v", got, err, v.deferred)
	}
}
