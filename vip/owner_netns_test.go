package vip

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// TestPreexistingAddressNeverTaken: an address on the device before the Manager (the
// node's own address as a /32 here, a second one as /128) is reported as foreign, never
// recorded, and survives Release, Recover and a new Manager's recovery. The node's /24
// address counts as the same address as a /32 VIP of it.
func TestPreexistingAddressNeverTaken(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	for _, args := range [][]string{
		{"addr", "add", "10.99.0.200/32", "dev", "eth0"},
		{"addr", "add", "fd00:99::200/128", "dev", "eth0"},
	} {
		ip(t, a, args...)
	}
	dir := t.TempDir()
	m := newManager(t, a, dir)
	pre4 := VIP{Prefix: netip.MustParsePrefix("10.99.0.200/32"), Dev: "eth0"}
	pre6 := VIP{Prefix: netip.MustParsePrefix("fd00:99::200/128"), Dev: "eth0"}
	own := VIP{Prefix: netip.PrefixFrom(a.Addr4, 32), Dev: "eth0"} // the node's 10.99.0.10/24
	foreign, err := m.Hold("VI_1", pre4, pre6, own, v4h)
	if err != nil {
		t.Fatal(err)
	}
	if want := []VIP{pre4, pre6, own}; !slices.Equal(foreign, want) {
		t.Errorf("foreign %v, want %v", foreign, want)
	}
	if rec := m.recorded(); !slices.Equal(rec, []VIP{v4h}) {
		t.Errorf("recorded %v, want only %v", rec, v4h)
	}
	if err := m.Release("VI_1", pre4, pre6, own, v4h); err != nil {
		t.Fatal(err)
	}
	// Hold again and "crash" (close without releasing): the next Manager's recovery
	// removes only what this one added.
	if _, err := m.Hold("VI_1", pre4, v4h); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m2 := newManager(t, a, dir)
	if _, err := m2.Recover(); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[netip.Prefix]bool{
		pre4.Prefix: true, pre6.Prefix: true, netip.PrefixFrom(a.Addr4, 24): true, v4h.Prefix: false,
	} {
		if ok, err := a.HasAddr(p); err != nil || ok != want {
			t.Errorf("%s on eth0: %v (%v), want %v", p, ok, err, want)
		}
	}
}

// TestSharedVIPReferenceCounted: a VIP two holders hold leaves the interface when the
// second lets go, not the first; releasing twice for one holder counts once.
func TestSharedVIPReferenceCounted(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	for _, h := range []string{"VI_1", "VI_2"} {
		if f, err := m.Hold(h, v4h, v6h); err != nil || len(f) != 0 {
			t.Fatalf("Hold(%s): foreign %v, %v", h, f, err)
		}
	}
	for range 2 {
		if err := m.Release("VI_1", v4h, v6h); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []VIP{v4h, v6h} {
		if ok, _ := a.HasAddr(v.Prefix); !ok {
			t.Errorf("%s gone while VI_2 holds it", v)
		}
	}
	if err := m.Release("VI_2", v4h, v6h); err != nil {
		t.Fatal(err)
	}
	for _, v := range []VIP{v4h, v6h} {
		if ok, _ := a.HasAddr(v.Prefix); ok {
			t.Errorf("%s still there after the last holder let go", v)
		}
	}
	if rec := m.recorded(); len(rec) != 0 {
		t.Errorf("record %v", rec)
	}
}

// TestMissingAfterFlush: Missing names the VIPs someone took off, and Hold puts them back
// as this Manager's own.
func TestMissingAfterFlush(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	if _, err := m.Hold("VI_1", v4h, v6h); err != nil {
		t.Fatal(err)
	}
	if miss, err := m.Missing(v4h, v6h); err != nil || len(miss) != 0 {
		t.Fatalf("Missing before the flush: %v, %v", miss, err)
	}
	ip(t, a, "addr", "del", v4h.Prefix.String(), "dev", "eth0")
	miss, err := m.Missing(v4h, v6h, VIP{Prefix: v4h.Prefix, Dev: "nosuch0"})
	if err != nil || !slices.Equal(miss, []VIP{v4h}) {
		t.Fatalf("Missing after the flush: %v, %v; want %v", miss, err, v4h)
	}
	if f, err := m.Hold("VI_1", v4h); err != nil || len(f) != 0 {
		t.Fatalf("Hold after the flush: foreign %v, %v", f, err)
	}
	if ok, _ := a.HasAddr(v4h.Prefix); !ok {
		t.Error("not back")
	}
	if err := m.Release("VI_1", v4h, v6h); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.HasAddr(v4h.Prefix); ok {
		t.Error("the put-back VIP is not released as ours")
	}
}
