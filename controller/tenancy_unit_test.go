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
		addr     string
		external bool
		want     string
	}{
		{"10.99.0.10", true, ""},
		{"10.99.0.65", false, ""},
		{"224.0.0.18", true, ReasonAddressNotUsable},
		{"255.255.255.255", true, ReasonAddressNotUsable},
		{"10.99.0.64", false, ReasonAddressNotUsable},
		{"10.99.0.71", true, ReasonAddressNotUsable},
		{"10.99.0.1", true, ReasonAddressNotUsable},
		{"10.99.1.10", true, ReasonExternalIPNotAllowed},
		{"10.99.1.10", false, ""}, // an allocated address is not the tenant's word
	} {
		if got, msg := f.addrProblem(netip.MustParseAddr(c.addr), c.external); got != c.want || (got == "") != (msg == "") {
			t.Errorf("%s external=%v: %q %q, want %q", c.addr, c.external, got, msg, c.want)
		}
	}
}
