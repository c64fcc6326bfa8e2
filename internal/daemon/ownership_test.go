package daemon

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestPreexistingVIPLeftAlone: a VIP that is on the interface already, not added by the
// store, is reported, counted and served (adverts and announcements) but never taken:
// the instance stepping down and the daemon stopping leave it where it was.
func TestPreexistingVIPLeftAlone(t *testing.T) {
	h := newFakeHost()
	node := vip.VIP{Prefix: netip.MustParsePrefix("10.99.0.100/32"), Dev: "eth0"}
	h.preexisting[node] = true
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/32", "10.99.0.101/32"))
	at := takeover(100)
	advance(d, at)
	in := d.byName["VI_1"]
	if in.sm.State() != vrrp.StateMaster {
		t.Fatalf("%v, want MASTER: a preexisting address does not stop the instance serving", in.sm.State())
	}
	if want := []string{"10.99.0.101/32 dev eth0"}; !slices.Equal(h.heldList(), want) {
		t.Errorf("store holds %v, want only %v", h.heldList(), want)
	}
	advance(d, at.Add(time.Second)) // counters are published within half a second
	if s := snapOf(t, d, "VI_1"); s.PreexistingVIPs != 1 {
		t.Errorf("PreexistingVIPs %d, want 1", s.PreexistingVIPs)
	}
	if len(h.announced) == 0 || !slices.Contains(h.announced[0].addrs, addr100) {
		t.Errorf("announced %+v, want the preexisting address among them", h.announced)
	}
	// Served, not re-added: the interface check finds it there.
	d.checkInterfaces(at.Add(time.Second))
	if s := snapOf(t, d, "VI_1"); s.ReaddedVIPs != 0 {
		t.Errorf("ReaddedVIPs %d for an address that never left", s.ReaddedVIPs)
	}
	p := peerAdvert(t, 1, 150, "10.99.0.100/32", "10.99.0.101/32")
	d.handlePacket(in.conn, &p, at.Add(1100*time.Millisecond))
	d.shutdown(at.Add(1200 * time.Millisecond))
	if in.sm.State() == vrrp.StateMaster || len(h.held) != 0 || !h.preexisting[node] {
		t.Errorf("after stepping down and stopping: %v, store holds %v, preexisting still there: %v",
			in.sm.State(), h.heldList(), h.preexisting[node])
	}
}

// TestSharedVIPHeldUntilLastLetsGo: two instances with one VIP (same address and
// interface) hold it under their own names, so one stepping down leaves it for the other.
func TestSharedVIPHeldUntilLastLetsGo(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/32"), testInstance("VI_2", 2, 100, "10.99.0.100/32"))
	at := takeover(100)
	advance(d, at)
	a, b := d.byName["VI_1"], d.byName["VI_2"]
	if a.sm.State() != vrrp.StateMaster || b.sm.State() != vrrp.StateMaster {
		t.Fatalf("%v and %v, want both MASTER", a.sm.State(), b.sm.State())
	}
	p := peerAdvert(t, 1, 150, "10.99.0.100/32")
	d.handlePacket(a.conn, &p, at.Add(100*time.Millisecond))
	if a.sm.State() != vrrp.StateBackup {
		t.Fatalf("VI_1 %v, want BACKUP", a.sm.State())
	}
	if want := []string{"10.99.0.100/32 dev eth0"}; !slices.Equal(h.heldList(), want) {
		t.Fatalf("after VI_1 stepped down the host holds %v, want %v for VI_2", h.heldList(), want)
	}
	p = peerAdvert(t, 2, 150, "10.99.0.100/32")
	d.handlePacket(b.conn, &p, at.Add(200*time.Millisecond))
	if len(h.held) != 0 {
		t.Errorf("after both stepped down the host holds %v", h.heldList())
	}
}

// TestFlushedVIPReadded: a VIP someone takes off a master's interface is put back at the
// next interface check (which a netlink address event triggers), counted, and announced
// once more; a backup's addresses are not the check's business.
func TestFlushedVIPReadded(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/32"), testInstance("VI_2", 2, 50, "10.99.0.102/32"))
	at := takeover(100)
	advance(d, at)
	p := peerAdvert(t, 2, 150, "10.99.0.102/32")
	d.handlePacket(d.byName["VI_2"].conn, &p, at)
	if d.byName["VI_2"].sm.State() != vrrp.StateBackup {
		t.Fatalf("VI_2 %v, want BACKUP", d.byName["VI_2"].sm.State())
	}
	flushed := vip.VIP{Prefix: netip.MustParsePrefix("10.99.0.100/32"), Dev: "eth0"}
	delete(h.held, flushed) // ip addr flush
	announced := len(h.announced)
	d.checkInterfaces(at.Add(10 * time.Millisecond))
	if !h.held[flushed] {
		t.Fatalf("the flushed VIP is not back: host holds %v", h.heldList())
	}
	if s := snapOf(t, d, "VI_1"); s.ReaddedVIPs != 1 || s.State != vrrp.StateMaster {
		t.Errorf("VI_1 %v with ReaddedVIPs %d, want MASTER and 1", s.State, s.ReaddedVIPs)
	}
	if len(h.announced) != announced+1 || !slices.Equal(h.announced[announced].addrs, []netip.Addr{addr100}) {
		t.Errorf("announcements after the re-add: %+v", h.announced[announced:])
	}
	d.checkInterfaces(at.Add(20 * time.Millisecond))
	if s := snapOf(t, d, "VI_1"); s.ReaddedVIPs != 1 {
		t.Errorf("ReaddedVIPs %d after a check that found it there", s.ReaddedVIPs)
	}
	if h.held[vip.VIP{Prefix: netip.MustParsePrefix("10.99.0.102/32"), Dev: "eth0"}] {
		t.Error("the backup's VIP was added")
	}
}

// TestRestoreConfirmsAndGroupsReadds (issue 31's movement lab: dumps taken while the
// timer thread added hundreds of addresses missed some, and each was "put back" by a Hold
// of its own, thousands in all, with no advert sent meanwhile): what the interface check
// finds missing is looked at again before anything is put back, and what is really gone
// goes back in one chunked Hold per holder, logged once with its count.
func TestRestoreConfirmsAndGroupsReadds(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, manyVIPs(40)...))
	at := takeover(100)
	advance(d, at)
	all := d.byName["VI_1"].vips.vips
	// A dump that missed 30 addresses that are there.
	h.missesOnce = slices.Clone(all[:30])
	h.events = nil
	d.checkInterfaces(at.Add(10 * time.Millisecond))
	for _, e := range h.events {
		if strings.HasPrefix(e, "add ") || strings.Contains(e, "taken off the interface") {
			t.Errorf("a miss the second look did not confirm was put back: %q", e)
		}
	}
	if n := snapOf(t, d, "VI_1").ReaddedVIPs; n != 0 {
		t.Errorf("ReaddedVIPs %d after false misses", n)
	}
	// 20 really gone (ip addr flush).
	for _, v := range all[10:30] {
		delete(h.held, v)
	}
	d.checkInterfaces(at.Add(20 * time.Millisecond))
	holds := 0
	for _, e := range h.events {
		if strings.HasPrefix(e, "add ") {
			holds++
		}
	}
	if want := (20 + holdChunk - 1) / holdChunk; holds != want {
		t.Errorf("%d Holds put the 20 back, want %d (chunks of %d): %q", holds, want, holdChunk, h.events)
	}
	for _, v := range all {
		if !h.held[v] {
			t.Errorf("%v is not back", v)
		}
	}
	if s := snapOf(t, d, "VI_1"); s.ReaddedVIPs != 20 {
		t.Errorf("ReaddedVIPs %d, want 20", s.ReaddedVIPs)
	}
	if n := strings.Count(strings.Join(h.events, "\n"), "taken off the interface"); n != 1 {
		t.Errorf("%d log lines for the re-add, want 1 with the count", n)
	}
}
