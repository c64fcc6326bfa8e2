package daemon

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/conflict"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestHeldVIPsHandedToConflicts: the conflict detector hears the masters' VIPs (excluded
// ones too) when an instance becomes master and an empty set when it steps down, at the
// transition and not with every advertisement; a reload that changes a master's VIPs
// hands the new ones over.
func TestHeldVIPsHandedToConflicts(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.ExcludedVIPs = []config.VIP{{Prefix: netip.MustParsePrefix("fd00:99::100/64"), Dev: "eth1"}}
	startDaemon(t, d, ic)
	if got := h.conflicts.last(); len(got) != 0 {
		t.Fatalf("held before any master: %+v", got)
	}
	at := takeover(100)
	advance(d, at)
	in := d.byName["VI_1"]
	if in.sm.State() != vrrp.StateMaster {
		t.Fatal("not master")
	}
	want := []conflict.Target{
		{Addr: addr100, Dev: "eth0", Instance: "VI_1", Intf: "eth0", VRID: 1},
		{Addr: netip.MustParseAddr("fd00:99::100"), Dev: "eth1", Instance: "VI_1", Intf: "eth0", VRID: 1},
	}
	if got := h.conflicts.last(); !slices.Equal(got, want) {
		t.Fatalf("held as master: %+v, want %+v", got, want)
	}
	sets := len(h.conflicts.sets)
	now := at
	for range 20 { // adverts and counter publications hand nothing over
		now = now.Add(500 * time.Millisecond)
		advance(d, now)
	}
	if len(h.conflicts.sets) != sets {
		t.Errorf("%d held sets handed over in 10 s of advertising, want none", len(h.conflicts.sets)-sets)
	}

	ic2 := ic
	ic2.VIPs = append(slices.Clone(ic.VIPs), config.VIP{Prefix: netip.MustParsePrefix("10.99.0.101/24"), Dev: "eth0"})
	if err := d.reload(&config.Config{Instances: []config.Instance{ic2}}, now); err != nil {
		t.Fatal(err)
	}
	if in = d.byName["VI_1"]; in.sm.State() != vrrp.StateMaster {
		t.Fatalf("after the reload: %v", in.sm.State())
	}
	// New to this node, 10.99.0.101 is added after the reload's hold-back (holdback.go),
	// and handed over then.
	now = now.Add(reloadHoldBack(ic2.AdvertInterval))
	advance(d, now)
	if got := h.conflicts.last(); !slices.ContainsFunc(got, func(t conflict.Target) bool { return t.Addr == netip.MustParseAddr("10.99.0.101") }) {
		t.Errorf("after a reload adding 10.99.0.101: held %+v", got)
	}

	p := peerAdvert(t, 1, 150, "10.99.0.100/24", "10.99.0.101/24")
	d.handlePacket(in.conn, &p, now.Add(time.Millisecond))
	if in.sm.State() != vrrp.StateBackup {
		t.Fatal("did not step down")
	}
	if got := h.conflicts.last(); len(got) != 0 {
		t.Errorf("held after stepping down: %+v", got)
	}
}

// TestAnnounceAgainWhenConflictEnds: a conflict's end makes a master announce the VIP
// once, on the VIP's device; a backup announces nothing, nor does a conflict's start.
func TestAnnounceAgainWhenConflictEnds(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"), testInstance("VI_2", 2, 100, "10.99.0.102/24"))
	at := takeover(100)
	advance(d, at)
	p := peerAdvert(t, 2, 150, "10.99.0.102/24") // VI_2 backs off to a better master
	d.handlePacket(d.byName["VI_2"].conn, &p, at.Add(time.Millisecond))
	before := len(h.announced)
	target := conflict.Target{Addr: addr100, Dev: "eth0", Instance: "VI_1", Intf: "eth0", VRID: 1}
	d.conflictChanged(conflict.Change{Conflict: conflict.Conflict{Target: target, MAC: "52:54:00:00:00:99"}, Start: true})
	select {
	case <-d.conflictEnds:
		t.Fatal("a conflict's start queued an announcement")
	default:
	}
	d.conflictChanged(conflict.Change{Conflict: conflict.Conflict{Target: target, MAC: "52:54:00:00:00:99"}})
	d.announceAgain(<-d.conflictEnds)
	if got := h.announced[before:]; len(got) != 1 || got[0].dev != "eth0" || !slices.Equal(got[0].addrs, []netip.Addr{addr100}) || got[0].rounds != 1 {
		t.Fatalf("announced %+v, want one round of 10.99.0.100 on eth0", got)
	}
	d.announceAgain(conflict.Target{Addr: netip.MustParseAddr("10.99.0.102"), Dev: "eth0", Instance: "VI_2", Intf: "eth0", VRID: 2})
	d.announceAgain(conflict.Target{Addr: addr100, Dev: "eth0", Instance: "gone", Intf: "eth0", VRID: 9})
	if n := len(h.announced) - before; n != 1 {
		t.Errorf("%d announcements, want none for a backup or an unknown instance", n-1)
	}
}
