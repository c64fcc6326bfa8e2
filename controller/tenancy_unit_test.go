package controller

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/ipam"
)

// Fast tests of the pure rules in tenancy.go; the envtest tests in
// tenancy_test.go run them against a real API server.

func TestNamespaceAllowedRules(t *testing.T) {
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "g"}}
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"vip": "yes"}}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"vip": "yes"}}
	badSel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "vip", Operator: "Bogus"}}}
	for _, c := range []struct {
		an   *v1alpha1.AllowedNamespaces
		name string
		ns   *corev1.Namespace
		want bool
	}{
		{nil, "team-b", plain, true},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}, "team-b", plain, true},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSame}, "infra", nil, true},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSame}, "team-a", team, false},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Selector: sel}, "team-a", team, true},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Selector: sel}, "team-b", plain, false},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Selector: sel}, "team-a", nil, false}, // not found: no labels
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Selector: &metav1.LabelSelector{}}, "team-b", plain, true},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Names: []string{"team-b"}}, "team-b", plain, true},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Names: []string{"team-b"}}, "team-a", team, false},
		{&v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector, Names: []string{"x"}, Selector: badSel}, "team-a", team, false},
		{&v1alpha1.AllowedNamespaces{From: "Everyone"}, "team-a", team, false},
	} {
		g.Spec.AllowedNamespaces = c.an
		got, why := namespaceAllowed(g, c.name, c.ns)
		if got != c.want || (got == (why != "")) {
			t.Errorf("%+v, namespace %s: %v %q, want %v", c.an, c.name, got, why, c.want)
		}
	}
}

func TestExternalIPAllowedRules(t *testing.T) {
	pool, err := ipam.Parse([]string{"10.99.0.200-10.99.0.203"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	for _, c := range []struct {
		p    *v1alpha1.ExternalIPPolicy
		addr string
		want bool
	}{
		{nil, "192.0.2.1", true},
		{&v1alpha1.ExternalIPPolicy{}, "10.99.0.200", false},
		{&v1alpha1.ExternalIPPolicy{FromAddressPool: true}, "10.99.0.200", true},
		{&v1alpha1.ExternalIPPolicy{FromAddressPool: true}, "10.99.0.204", false},
		{&v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.97/28"}}, "10.99.0.100", true}, // host bits ignored
		{&v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.96/28"}}, "10.99.0.112", false},
		{&v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"fd00:99::/64", "garbage"}}, "fd00:99::1", true},
		{&v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.0/24"}}, "fd00:99::1", false},
	} {
		if got := externalIPAllowed(c.p, pool, a(c.addr)); got != c.want {
			t.Errorf("%+v %s: %v, want %v", c.p, c.addr, got, c.want)
		}
	}
	if !externalIPAllowed(&v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.0/24"}}, nil, a("10.99.0.1")) {
		t.Error("nil pool breaks allowedCIDRs")
	}
}

func TestFirstHolders(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1_700_000_000, 0))
	t1 := metav1.NewTime(t0.Add(time.Second))
	c := func(ns, name string, at metav1.Time, ingress bool, share string) claimant {
		return claimant{svc: types.NamespacedName{Namespace: ns, Name: name}, created: at, ingress: ingress, share: share}
	}
	granted := func(c claimant) claimant { c.granted = true; return c }
	for i, tc := range []struct {
		in   []claimant
		want string
	}{
		{nil, "[]"},
		{[]claimant{c("b", "new", t1, false, ""), c("b", "old", t0, false, "")}, "[b/old]"},
		// Same second: namespace, then name.
		{[]claimant{c("b", "x", t0, false, ""), c("a", "y", t0, false, ""), c("a", "x", t0, false, "")}, "[a/x]"},
		// An allocated address outranks an older externalIPs claim.
		{[]claimant{c("a", "old", t0, false, ""), c("a", "lb", t1, true, "")}, "[a/lb]"},
		// Sharing: same namespace and value as the first holder.
		{[]claimant{c("a", "s1", t0, false, "web"), c("a", "s2", t1, false, "web"), c("a", "s3", t1, false, "api"), c("b", "s4", t1, false, "web")}, "[a/s1 a/s2]"},
		// The first holder did not ask to share: nobody shares.
		{[]claimant{c("a", "s1", t0, false, ""), c("a", "s2", t1, false, "web")}, "[a/s1]"},
		// The first grant wins over an older Service and over an allocated
		// address not granted yet (issue 27).
		{[]claimant{c("a", "old", t0, false, ""), granted(c("b", "new", t1, false, ""))}, "[b/new]"},
		{[]claimant{c("a", "lb", t0, true, ""), granted(c("b", "new", t1, false, ""))}, "[b/new]"},
		// A granted sharer keeps sharing with the granted first holder.
		{[]claimant{granted(c("a", "s1", t1, false, "web")), c("a", "s0", t0, false, "web"), c("a", "s2", t0, false, "api")}, "[a/s1 a/s0]"},
	} {
		if got := fmt.Sprint(firstHolders(tc.in)); got != tc.want {
			t.Errorf("case %d: %s, want %s", i, got, tc.want)
		}
	}
}

func TestAddrProblem(t *testing.T) {
	pool, err := ipam.Parse([]string{"10.99.0.64/29"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &groupFacts{
		g: &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "g"},
			Spec: v1alpha1.KeepalivedGroupSpec{ExternalIPs: &v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.0/24"}}}},
		pool:      pool,
		nodeAddrs: map[netip.Addr]string{netip.MustParseAddr("10.99.0.1"): "n1"},
	}
	for _, c := range []struct {
		addr string
		src  addrSource
		want string
	}{
		{"10.99.0.10", fromExternalIPs, ""},
		{"10.99.0.65", fromPool, ""},
		{"224.0.0.18", fromExternalIPs, ReasonAddressNotUsable},
		{"255.255.255.255", fromExternalIPs, ReasonAddressNotUsable},
		{"10.99.0.64", fromPool, ReasonAddressNotUsable},
		{"10.99.0.71", fromExternalIPs, ReasonAddressNotUsable},
		{"10.99.0.1", fromExternalIPs, ReasonAddressNotUsable},
		{"10.99.1.10", fromExternalIPs, ReasonExternalIPNotAllowed},
		{"10.99.1.10", fromPool, ""}, // an allocated address is not the tenant's word
		// Another controller's ingress is checked as an externalIP is.
		{"10.99.1.10", fromOtherIngress, ReasonExternalIPNotAllowed},
		{"10.99.0.10", fromOtherIngress, ""},
	} {
		if got, msg := f.addrProblem(netip.MustParseAddr(c.addr), c.src); got != c.want || (got == "") != (msg == "") {
			t.Errorf("%s source %d: %q %q, want %q", c.addr, c.src, got, msg, c.want)
		}
	}
}

// TestGrantedRecord: the group's status is the record of grants, found by
// instance key, with spreadvips' per-VIP keys and neighbours whose names
// share a prefix.
func TestGrantedRecord(t *testing.T) {
	f := &groupFacts{g: &v1alpha1.KeepalivedGroup{Status: v1alpha1.KeepalivedGroupStatus{Instances: []v1alpha1.Instance{
		{Key: "a/web", VIPs: []string{"10.99.0.1", "fd00:99::1"}},
		{Key: "a/web-2", VIPs: []string{"10.99.0.2"}},
		{Key: "a/web/10.99.0.3", VIPs: []string{"10.99.0.3"}},
		{Key: "a/web/10.99.0.4", VIPs: []string{"10.99.0.4"}},
		{Key: "b/x", VIPs: []string{"10.99.0.5"}},
	}}}}
	web := types.NamespacedName{Namespace: "a", Name: "web"}
	for _, c := range []struct {
		svc  types.NamespacedName
		addr string
		want bool
	}{
		{web, "10.99.0.1", true},
		{web, "fd00:99::1", true},
		{web, "10.99.0.2", false}, // a/web-2's
		{web, "10.99.0.3", true},
		{web, "10.99.0.4", true},
		{web, "10.99.0.5", false},
		{types.NamespacedName{Namespace: "a", Name: "web-2"}, "10.99.0.2", true},
		{types.NamespacedName{Namespace: "b", Name: "x"}, "10.99.0.1", false},
		{types.NamespacedName{Namespace: "c", Name: "y"}, "10.99.0.1", false},
	} {
		if got := f.granted(c.svc, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("%s %s: granted %v, want %v", c.svc, c.addr, got, c.want)
		}
	}
	if (&groupFacts{}).granted(web, netip.MustParseAddr("10.99.0.1")) {
		t.Error("a missing group records a grant")
	}
}
