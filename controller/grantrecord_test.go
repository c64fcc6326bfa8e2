package controller

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestGrantedSharedRecord: between members of one router, which both look
// granted by the router's list, the durable record decides, then the
// ledger; with neither, the router's word (every member).
func TestGrantedSharedRecord(t *testing.T) {
	st := v1alpha1.KeepalivedGroupStatus{
		RouterIDs: map[string]int{"a/old": 7, "b/new": 7, "c/s/fd00:99::82": 7, "d/other": 9},
		Instances: []v1alpha1.Instance{
			{Key: "@default/n0", VRID: 7, VIPs: []string{"fd00:99::80", "fd00:99::81", "fd00:99::82"}},
			{Key: "@default/n1", VRID: 9, VIPs: []string{"fd00:99::90"}},
		},
	}
	a80, a81, a82 := netip.MustParseAddr("fd00:99::80"), netip.MustParseAddr("fd00:99::81"), netip.MustParseAddr("fd00:99::82")
	ledger := map[netip.Addr][]string{a80: {"a/old"}, a81: {"b/new"}, a82: {"c/s/fd00:99::82"}}
	recorded := st
	recorded.ContestedGrants = map[string]string{"fd00:99::81": "b/new"}
	cases := []struct {
		name   string
		st     *v1alpha1.KeepalivedGroupStatus
		ledger map[netip.Addr][]string
		key    string
		addr   netip.Addr
		want   bool
	}{
		{"router's word: the holder", &st, nil, "b/new", a81, true},
		{"router's word: a co-member too (the ambiguity)", &st, nil, "a/old", a81, true},
		{"another router's member", &st, nil, "d/other", a81, false},
		{"not a member", &st, nil, "e/x", a81, false},
		{"ledger: the holder", &st, ledger, "b/new", a81, true},
		{"ledger: a co-member is not", &st, ledger, "a/old", a81, false},
		{"ledger: its own address", &st, ledger, "a/old", a80, true},
		{"ledger: spreadvips member", &st, ledger, "c/s", a82, true},
		{"ledger without the address: the router's word", &st, map[netip.Addr][]string{a80: {"a/old"}}, "a/old", a81, true},
		{"record: the holder", &recorded, nil, "b/new", a81, true},
		{"record: a co-member is not", &recorded, nil, "a/old", a81, false},
		{"record over the ledger", &recorded, map[netip.Addr][]string{a81: {"a/old"}}, "a/old", a81, false},
		{"record: a Service of another router is not", &recorded, nil, "d/other", a81, false},
	}
	for _, c := range cases {
		if got := grantedShared(c.st, c.ledger, c.key, c.addr); got != c.want {
			t.Errorf("%s: grantedShared(%s, %s) = %v, want %v", c.name, c.key, c.addr, got, c.want)
		}
	}
}

// TestContestedGrantsCap: only contested addresses whose first holder got
// them, none for a group without shared routers, at most
// maxContestedGrants, the recorded ones kept first.
func TestContestedGrantsCap(t *testing.T) {
	v := newVetter(t.Context(), nil)
	granted := map[types.NamespacedName][]netip.Addr{}
	holder := types.NamespacedName{Namespace: "ns", Name: "holder"}
	var all []netip.Addr
	for i := range maxContestedGrants + 50 {
		a := netip.MustParseAddr(fmt.Sprintf("fd00:99::1:%x", i))
		all = append(all, a)
		v.holders[a] = []types.NamespacedName{holder}
		granted[holder] = append(granted[holder], a)
	}
	// Contested but its holder did not get it (left out): not recorded.
	notHeld := netip.MustParseAddr("fd00:99::2:1")
	v.holders[notHeld] = []types.NamespacedName{{Namespace: "ns", Name: "waiting"}}
	// Held, not contested: not recorded.
	alone := netip.MustParseAddr("fd00:99::3:1")
	v.holders[alone] = []types.NamespacedName{holder}
	granted[holder] = append(granted[holder], alone)

	if got := contestedGrants(v, granted, nil, true); got != nil {
		t.Fatalf("nothing contested: %v", got)
	}
	v.contested = map[netip.Addr]bool{notHeld: true}
	for _, a := range all {
		v.contested[a] = true
	}
	if got := contestedGrants(v, granted, nil, false); got != nil {
		t.Fatalf("not shared: %v", got)
	}
	last := all[len(all)-1].String()
	prev := map[string]string{last: holder.String()}
	got := contestedGrants(v, granted, prev, true)
	if len(got) != maxContestedGrants {
		t.Fatalf("%d entries, want %d", len(got), maxContestedGrants)
	}
	if got[last] != holder.String() {
		t.Errorf("the recorded %s was displaced: %v", last, got[last])
	}
	want := map[string]string{last: holder.String()}
	for _, a := range all[:maxContestedGrants-1] {
		want[a.String()] = holder.String()
	}
	if !maps.Equal(got, want) {
		extra := slices.Sorted(maps.Keys(got))
		t.Errorf("got %d entries, not the recorded one and the lowest addresses: %v", len(got), extra[:5])
	}
	if _, ok := got[notHeld.String()]; ok {
		t.Errorf("%s recorded though its holder did not get it", notHeld)
	}
}

// TestGrantLedgerRecord: the ledger keeps each member with a router and
// its addresses, and forgets a group that stops sharing.
func TestGrantLedgerRecord(t *testing.T) {
	l := newGrantLedger()
	g := types.NamespacedName{Namespace: "ns", Name: "g"}
	a, b := netip.MustParseAddr("10.99.0.1"), netip.MustParseAddr("10.99.0.2")
	p := plan{
		shared:    true,
		routerIDs: map[string]int{"ns/x": 1, "ns/y": 1},
		members:   map[string][]netip.Addr{"ns/x": {a}, "ns/y": {b}, "ns/left": {a}},
	}
	l.record(g, &p)
	got := l.of(g)
	if !slices.Equal(got[a], []string{"ns/x"}) || !slices.Equal(got[b], []string{"ns/y"}) || len(got) != 2 {
		t.Fatalf("ledger %v: want 10.99.0.1 by ns/x (ns/left has no router), 10.99.0.2 by ns/y", got)
	}
	l.record(g, &plan{})
	if l.of(g) != nil {
		t.Fatalf("a group without shared routers is still remembered: %v", l.of(g))
	}
	var nilLedger *grantLedger
	nilLedger.record(g, &p) // a reconciler built without one: no panic
	if nilLedger.of(g) != nil {
		t.Fatal("nil ledger remembers")
	}
}
