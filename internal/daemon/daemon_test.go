package daemon

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// These tests drive the loop's own functions (start, fireTimers, handleBatch,
// checkInterfaces, reload, shutdown) on a virtual clock, against the in-memory host of
// fake_test.go.

var (
	eth0src = netip.MustParseAddr("10.99.0.10")
	peer    = netip.MustParseAddr("10.99.0.11")
	addr100 = netip.MustParseAddr("10.99.0.100")
)

// TestElectionTakeover: a backup that hears no master becomes Master after exactly
// Master_Down_Interval, adds its VIPs with their device and label, advertises from the
// interface's address to the group every interval, and announces its VIPs.
func TestElectionTakeover(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.VIPs[0].Label = "eth0:1"
	startDaemon(t, d, ic)

	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Fatalf("after start: %v, want BACKUP", s.State)
	}
	if len(h.socks) != 1 || h.socks[0].opt.Group != vrrp.MulticastIPv4 || h.socks[0].opt.NoJoin {
		t.Fatalf("sockets %+v, want one joined to 224.0.0.18", h.socks)
	}
	at := takeover(100)
	advance(d, at.Add(-time.Nanosecond))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup || len(h.sent) != 0 || len(h.held) != 0 {
		t.Fatalf("before Master_Down_Interval: %v, %d adverts, VIPs %v", s.State, len(h.sent), h.heldList())
	}
	advance(d, at)
	s := snapOf(t, d, "VI_1")
	if s.State != vrrp.StateMaster || s.Master != eth0src || s.Counters.BecomeMaster != 1 {
		t.Fatalf("at Master_Down_Interval: %v master %v, want MASTER %v", s.State, s.Master, eth0src)
	}
	if want := []string{"10.99.0.100/24 dev eth0 label eth0:1"}; !slices.Equal(h.heldList(), want) {
		t.Errorf("VIPs %v, want %v", h.heldList(), want)
	}
	if len(h.sent) != 1 {
		t.Fatalf("%d adverts on taking over, want 1", len(h.sent))
	}
	if a := h.sent[0]; a.src != eth0src || a.dst != vrrp.MulticastIPv4 || a.adv.Priority != 100 || a.adv.VRID != 1 ||
		!slices.Equal(a.adv.Addresses, []netip.Addr{addr100}) {
		t.Errorf("advert %v -> %v %+v", a.src, a.dst, a.adv)
	}
	if len(h.announced) != 1 || h.announced[0].dev != "eth0" || h.announced[0].rounds != 2 ||
		!slices.Equal(h.announced[0].addrs, []netip.Addr{addr100}) {
		t.Errorf("announcements %+v, want 2 rounds of 10.99.0.100 on eth0", h.announced)
	}
	advance(d, at.Add(3*time.Second))
	if got := h.priorities(); !slices.Equal(got, []uint8{100, 100, 100, 100}) {
		t.Errorf("adverts in the 3 s after taking over: priorities %v, want 4 of 100", got)
	}
}

// TestBackupFollowsMaster: adverts of a higher priority keep a backup from taking over;
// when they stop, it takes over Master_Down_Interval after the last one.
func TestBackupFollowsMaster(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	c := h.socks[0]
	conn := d.byName["VI_1"].conn
	var last time.Time
	for now := t0.Add(time.Second); now.Before(t0.Add(10 * time.Second)); now = now.Add(time.Second) {
		advance(d, now)
		p := peerAdvert(t, 1, 150, "10.99.0.100/24")
		d.handlePacket(conn, &p, now)
		last = now
	}
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup || len(h.held) != 0 || len(h.sent) != 0 {
		t.Fatalf("with a master advertising: %v, VIPs %v, %d adverts sent", s.State, h.heldList(), len(h.sent))
	}
	if m := d.byName["VI_1"].sm.Master(); m != peer {
		t.Errorf("follows %v, want %v", m, peer)
	}
	// Master_Down_Interval of a backup of priority 100 hearing a 1 s master.
	down := last.Add(vrrp.MasterDownInterval(100, time.Second))
	advance(d, down.Add(-time.Nanosecond))
	if d.byName["VI_1"].sm.State() != vrrp.StateBackup {
		t.Fatal("took over before Master_Down_Interval")
	}
	advance(d, down)
	if d.byName["VI_1"].sm.State() != vrrp.StateMaster || len(h.held) != 1 || c.isClosed {
		t.Fatalf("after the master went silent: %v, VIPs %v", d.byName["VI_1"].sm.State(), h.heldList())
	}
}

// TestMasterStepsDown: a master preempted by a higher priority goes back to Backup,
// removes its VIPs, cancels the announcements still queued and sends no more.
func TestMasterStepsDown(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	at := takeover(100)
	advance(d, at)
	in := d.byName["VI_1"]
	if in.sm.State() != vrrp.StateMaster {
		t.Fatal("not master")
	}
	now := at.Add(500 * time.Millisecond)
	p := peerAdvert(t, 1, 150, "10.99.0.100/24")
	d.handlePacket(in.conn, &p, now)
	if in.sm.State() != vrrp.StateBackup || len(h.held) != 0 {
		t.Fatalf("after a higher priority advert: %v, VIPs %v", in.sm.State(), h.heldList())
	}
	if snapOf(t, d, "VI_1").State != vrrp.StateBackup {
		t.Error("the step down is not published at once")
	}
	if len(h.cancelled) != 1 || !slices.Equal(h.cancelled[0].addrs, []netip.Addr{addr100}) {
		t.Errorf("cancelled %+v, want 10.99.0.100", h.cancelled)
	}
	if _, armed := d.timers.Armed(in.announceKey); armed {
		t.Error("announce timer still armed in Backup")
	}
	sent := len(h.sent)
	for i := 1; i <= 20; i++ { // the master keeps advertising
		now = now.Add(500 * time.Millisecond)
		advance(d, now)
		d.handlePacket(in.conn, &p, now)
	}
	if len(h.sent) != sent || len(h.announced) != 1 {
		t.Errorf("backup sent %d adverts and %d announcements more", len(h.sent)-sent, len(h.announced)-1)
	}
}

// TestAnnouncements: a new master announces every address it holds, VIPs and excluded
// VIPs, each from its own device, on keepalived's schedule (a burst at once, another after
// garp_master_delay, then a refresh every garp_master_refresh).
func TestAnnouncements(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24", "10.99.0.101/24")
	ic.VIPs[1].Dev = "eth1"
	ic.ExcludedVIPs = []config.VIP{{Prefix: netip.MustParsePrefix("fd00:99::100/64"), Dev: "eth0"}}
	ic.GARP.MasterRefresh = 10 * time.Second
	ic.GARP.Interval = 5 * time.Millisecond
	startDaemon(t, d, ic)
	at := takeover(100)
	advance(d, at.Add(25*time.Second))

	type round struct {
		after time.Duration
		dev   string
		addrs []string
		n     int
	}
	v6 := "fd00:99::100"
	want := []round{
		{0, "eth0", []string{"10.99.0.100", v6}, 2}, {0, "eth1", []string{"10.99.0.101"}, 2},
		{5 * time.Second, "eth0", []string{"10.99.0.100", v6}, 2}, {5 * time.Second, "eth1", []string{"10.99.0.101"}, 2},
		{10 * time.Second, "eth0", []string{"10.99.0.100", v6}, 1}, {10 * time.Second, "eth1", []string{"10.99.0.101"}, 1},
		{20 * time.Second, "eth0", []string{"10.99.0.100", v6}, 1}, {20 * time.Second, "eth1", []string{"10.99.0.101"}, 1},
	}
	if len(h.announced) != len(want) {
		t.Fatalf("%d announce calls %+v, want %d", len(h.announced), h.announced, len(want))
	}
	for i, w := range want {
		g := h.announced[i]
		var addrs []string
		for _, a := range g.addrs {
			addrs = append(addrs, a.String())
		}
		if g.dev != w.dev || g.rounds != w.n || !slices.Equal(addrs, w.addrs) || g.s.Interval != 5*time.Millisecond {
			t.Errorf("call %d: %d rounds of %v on %s (interval %v); want %d of %v on %s", i, g.rounds, addrs, g.dev, g.s.Interval, w.n, w.addrs, w.dev)
		}
	}
	// The timing: each burst went out when the schedule said, not a millisecond earlier.
	h2 := newFakeHost()
	d2 := newTestDaemon(t, h2)
	startDaemon(t, d2, ic)
	for _, after := range []time.Duration{0, 5 * time.Second, 10 * time.Second, 20 * time.Second} {
		advance(d2, at.Add(after-time.Millisecond))
		n := len(h2.announced)
		advance(d2, at.Add(after))
		if len(h2.announced) != n+2 {
			t.Errorf("%d announce calls at %v after taking over, want 2 (one per device)", len(h2.announced)-n, after)
		}
	}
}

// TestExcludedVIPs: virtual_ipaddress_excluded come and go with mastership, after the
// VIPs, and are never advertised.
func TestExcludedVIPs(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.ExcludedVIPs = []config.VIP{
		{Prefix: netip.MustParsePrefix("10.99.0.200/32"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("fd00:99::200/64"), Dev: "eth1"},
	}
	startDaemon(t, d, ic)
	at := takeover(100)
	advance(d, at)
	want := []string{"recover ", "add 10.99.0.100/24 dev eth0", "add 10.99.0.200/32 dev eth0, fd00:99::200/64 dev eth1"}
	if !slices.Equal(h.vipCalls, want) {
		t.Fatalf("VIP calls %q, want %q", h.vipCalls, want)
	}
	if a := h.sent[0].adv.Addresses; !slices.Equal(a, []netip.Addr{addr100}) {
		t.Errorf("advertised %v, want only the VIP", a)
	}
	p := peerAdvert(t, 1, 150, "10.99.0.100/24")
	d.handlePacket(d.byName["VI_1"].conn, &p, at.Add(time.Second))
	if len(h.held) != 0 {
		t.Fatalf("after stepping down the host still holds %v", h.heldList())
	}
	if got := h.vipCalls[len(h.vipCalls)-1]; got != "remove 10.99.0.200/32 dev eth0, fd00:99::200/64 dev eth1" {
		t.Errorf("last VIP call %q, want the excluded ones removed", got)
	}
}

// TestFaultInterfaceDown: an interface going down (or losing carrier) puts its instances
// in FAULT: a master sends priority 0 and drops its addresses, and nothing is sent until
// it is back; then the instance starts again as a backup.
func TestFaultInterfaceDown(t *testing.T) {
	h, d, _, at := startWithExcluded(t)
	advance(d, at)

	now := at.Add(300 * time.Millisecond)
	h.linkErr["eth0"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("interface down: %v, want FAULT", s.State)
	}
	if p := h.priorities(); p[len(p)-1] != 0 || len(h.held) != 0 {
		t.Fatalf("entering FAULT: adverts %v, VIPs %v; want priority 0 and none", p, h.heldList())
	}
	sent := len(h.sent)
	now = now.Add(10 * time.Second)
	advance(d, now)
	d.checkInterfaces(now)
	if len(h.sent) != sent || len(h.held) != 0 {
		t.Fatalf("in FAULT: %d adverts sent, VIPs %v", len(h.sent)-sent, h.heldList())
	}
	delete(h.linkErr, "eth0")
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Fatalf("interface back: %v, want BACKUP", s.State)
	}
	advance(d, now.Add(vrrp.MasterDownInterval(100, time.Second)))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster || len(h.held) != 2 {
		t.Fatalf("after recovery: %v with %v, want MASTER with both addresses", s.State, h.heldList())
	}
}

// TestFaultInterfaceMissing: an instance whose interface does not exist (or has no
// address yet) is FAULT from the start, sends nothing, and starts once the interface
// appears; an interface deleted under a running instance gets a fresh socket.
func TestFaultInterfaceMissing(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	h.openErr["eth0"] = transport.ErrNoInterface
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || len(h.socks) != 0 {
		t.Fatalf("without eth0: %v with %d sockets, want FAULT", s.State, len(h.socks))
	}
	advance(d, t0.Add(time.Minute))
	if len(h.sent) != 0 || len(h.held) != 0 {
		t.Fatal("an instance without interface sent or added something")
	}
	// The interface appears without an address: still FAULT.
	h.openErr["eth0"] = transport.ErrNoAddress
	d.checkInterfaces(t0.Add(time.Minute))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || len(h.socks) != 0 {
		t.Fatalf("eth0 without address: %v, want FAULT", s.State)
	}
	delete(h.openErr, "eth0")
	now := t0.Add(2 * time.Minute)
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup || len(h.socks) != 1 {
		t.Fatalf("eth0 usable: %v with %d sockets, want BACKUP on one", s.State, len(h.socks))
	}
	advance(d, now.Add(vrrp.MasterDownInterval(100, time.Second)))
	if d.byName["VI_1"].sm.State() != vrrp.StateMaster {
		t.Fatal("no takeover once eth0 appeared")
	}

	// Deleted under the running instance (and re-created): FAULT, the socket closed, and
	// a new one opened on the next check.
	now = now.Add(time.Minute)
	h.socks[0].refreshErr = transport.ErrNoInterface
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || !h.socks[0].isClosed || len(h.held) != 0 {
		t.Fatalf("eth0 deleted: %v, socket closed %v, VIPs %v", s.State, h.socks[0].isClosed, h.heldList())
	}
	d.checkInterfaces(now.Add(time.Second))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup || len(h.socks) != 2 || h.socks[1].isClosed {
		t.Fatalf("eth0 re-created: %v with %d sockets, want BACKUP on a new one", s.State, len(h.socks))
	}
}

// TestSourceAddressChange: when the interface's address changes, a master advertises from
// the new one, and losing it (ErrNoAddress) is a fault like a link going down.
func TestSourceAddressChange(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	at := takeover(100)
	advance(d, at)
	newSrc := netip.MustParseAddr("10.99.0.20")
	h.socks[0].source = newSrc
	d.checkInterfaces(at.Add(100 * time.Millisecond))
	advance(d, at.Add(2*time.Second))
	if a, m := h.sent[len(h.sent)-1], d.byName["VI_1"].sm.Master(); a.src != newSrc || m != newSrc {
		t.Errorf("after the address change: advert from %v, master %v; want %v", a.src, m, newSrc)
	}
	h.socks[0].refreshErr = transport.ErrNoAddress
	d.checkInterfaces(at.Add(3 * time.Second))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || len(h.held) != 0 {
		t.Errorf("address gone: %v with %v, want FAULT without VIPs", s.State, h.heldList())
	}
}

// TestSharedSockets: instances on one interface and family share one socket (routed by
// VRID); a unicast instance gets its own, not joined to the group, sending from
// unicast_src_ip to each peer.
func TestSharedSockets(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	uni := testInstance("VI_U", 3, 100, "10.99.0.103/24")
	uni.UnicastSrc = netip.MustParseAddr("10.99.0.12")
	uni.UnicastPeers = []netip.Addr{netip.MustParseAddr("10.99.0.13"), netip.MustParseAddr("10.99.0.14")}
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"), testInstance("VI_2", 2, 50, "10.99.0.101/24"), uni)
	if len(h.socks) != 2 {
		t.Fatalf("%d sockets, want 2", len(h.socks))
	}
	if d.byName["VI_1"].conn != d.byName["VI_2"].conn {
		t.Error("VI_1 and VI_2 do not share their socket")
	}
	u := h.socks[1]
	if !u.opt.NoJoin || u.opt.Source != uni.UnicastSrc || u.opt.Group.IsValid() {
		t.Errorf("unicast socket options %+v", u.opt)
	}
	advance(d, takeover(100))
	var dsts []netip.Addr
	for _, a := range h.sent {
		if a.adv.VRID == 3 {
			if a.src != uni.UnicastSrc {
				t.Errorf("unicast advert from %v", a.src)
			}
			dsts = append(dsts, a.dst)
		}
	}
	if !slices.Equal(dsts, uni.UnicastPeers) {
		t.Errorf("unicast adverts to %v, want %v", dsts, uni.UnicastPeers)
	}
}

// TestAdvertsFallIntoStep: masters whose advertisements fall due within a tenth of an
// interval send in one wake-up and keep their deadlines lined up.
func TestAdvertsFallIntoStep(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	// VI_2 starts 50 ms later, so it takes over 50 ms after VI_1.
	late := testInstance("VI_2", 2, 100, "10.99.0.101/24")
	d.addInstance(late, t0.Add(50*time.Millisecond))
	advance(d, takeover(100).Add(50*time.Millisecond))
	k1, k2 := d.byName["VI_1"].timerKey, d.byName["VI_2"].timerKey
	a1, _ := d.timers.Armed(k1)
	a2, _ := d.timers.Armed(k2)
	if a2.Sub(a1) != 50*time.Millisecond {
		t.Fatalf("deadlines %v apart after taking over, want 50ms", a2.Sub(a1))
	}
	advance(d, takeover(100).Add(time.Second))
	a1, _ = d.timers.Armed(k1)
	a2, _ = d.timers.Armed(k2)
	if !a1.Equal(a2) {
		t.Errorf("after one interval the deadlines are %v apart, want equal", a2.Sub(a1))
	}
	n := len(h.sent)
	advance(d, a1.Add(-time.Nanosecond))
	if len(h.sent) != n {
		t.Error("an advert went out between the lined-up deadlines")
	}
	advance(d, a1)
	if len(h.sent) != n+2 {
		t.Errorf("%d adverts at the common deadline, want 2", len(h.sent)-n)
	}
}

// TestReloadKeepsAndReconfigures: a reload keeps unchanged instances as they are (state,
// counters, VIPs), applies changed settings in place when it can, and opens no socket.
func TestReloadKeepsAndReconfigures(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	a, b := testInstance("VI_1", 1, 100, "10.99.0.100/24"), testInstance("VI_2", 2, 50, "10.99.0.101/24")
	startDaemon(t, d, a, b)
	at := takeover(100)
	advance(d, at)
	p := peerAdvert(t, 2, 150, "10.99.0.101/24")
	d.handlePacket(d.byName["VI_2"].conn, &p, at)
	before1, before2 := snapOf(t, d, "VI_1"), snapOf(t, d, "VI_2")
	calls := len(h.vipCalls)

	a.Source = config.Position{File: "moved.conf", Line: 9}
	b.Priority = 120
	// Half an interval on, between VI_1's adverts: one due at the reload's time would go
	// out during it (advertsWhileBusy), as the loop would have sent it anyway.
	if err := d.reload(&config.Config{Instances: []config.Instance{a, b}}, at.Add(time.Second/2)); err != nil {
		t.Fatal(err)
	}
	after1, after2 := snapOf(t, d, "VI_1"), snapOf(t, d, "VI_2")
	if after1.State != vrrp.StateMaster || after1.Transitions != before1.Transitions || after1.Counters != before1.Counters {
		t.Errorf("unchanged VI_1: %v, %d transitions, counters %+v; want as before", after1.State, after1.Transitions, after1.Counters)
	}
	if after2.State != vrrp.StateBackup || after2.Priority != 120 || after2.Transitions != before2.Transitions ||
		after2.Master != peer || after2.Counters.AdvertRcvd != 1 {
		t.Errorf("reconfigured VI_2: %v priority %d master %v, %d transitions", after2.State, after2.Priority, after2.Master, after2.Transitions)
	}
	if len(h.vipCalls) != calls || len(h.socks) != 1 || h.socks[0].isClosed {
		t.Errorf("reload touched VIPs (%q) or sockets (%d)", h.vipCalls[calls:], len(h.socks))
	}
}

// TestReloadRemovesAndRestarts: an instance dropped by a reload resigns (priority 0) and
// removes its VIPs; one whose VRID changed is restarted; a new one starts; a socket no
// instance uses any more is closed.
func TestReloadRemovesAndRestarts(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	a, b := testInstance("VI_1", 1, 100, "10.99.0.100/24"), testInstance("VI_2", 2, 50, "10.99.0.101/24")
	b.Interface, b.VIPs[0].Dev = "eth1", "eth1"
	startDaemon(t, d, a, b)
	at := takeover(100)
	advance(d, at)
	oldA := d.byName["VI_1"]

	b.VRID = 7
	c := testInstance("VI_3", 3, 100, "10.99.0.102/24")
	now := at.Add(time.Second)
	if err := d.reload(&config.Config{Instances: []config.Instance{b, c}}, now); err != nil {
		t.Fatal(err)
	}
	if d.byName["VI_1"] != nil || slices.Contains(d.instances, oldA) {
		t.Fatal("VI_1 still runs")
	}
	if p := h.priorities(); p[len(p)-1] != 0 || h.held[oldA.vips.vips[0]] {
		t.Errorf("VI_1 removed: adverts %v, VIPs %v; want a priority 0 and its VIP gone", p, h.heldList())
	}
	if in := d.byName["VI_2"]; in == nil || in.cfg.VRID != 7 || in.conn.byVRID[2] != nil || in.conn.byVRID[7] != in {
		t.Fatal("VI_2 not restarted on VRID 7")
	}
	if s := snapOf(t, d, "VI_3"); s.State != vrrp.StateBackup {
		t.Errorf("new VI_3: %v, want BACKUP", s.State)
	}
	// eth0's socket went with VI_1 and came back with VI_3; eth1's was closed with VI_2's
	// old route, then opened again.
	open := 0
	for _, s := range h.socks {
		if !s.isClosed {
			open++
		}
	}
	if open != 2 || len(d.conns) != 2 {
		t.Errorf("%d sockets open (%d routes), want 2", open, len(d.conns))
	}
	if err := d.reload(&config.Config{Instances: []config.Instance{c}}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.socks {
		if s.ifname == "eth1" && !s.isClosed {
			t.Error("eth1's socket stays open without instances")
		}
	}
}

// TestReloadAddsVIPsToMaster: a reload that gives a master new VIPs adds only those (one
// call), after the reload's hold-back since no instance here held them (holdback.go),
// advertises them at once, and restarts the announcements of every address the
// instance holds (see startAnnounce) when it adds them.
func TestReloadAddsVIPsToMaster(t *testing.T) {
	h, d, ic, at := startWithExcluded(t)
	advance(d, at.Add(10*time.Second)) // both bursts are over
	announced, sent := len(h.announced), len(h.sent)

	ic.VIPs = append(ic.VIPs, config.VIP{Prefix: netip.MustParsePrefix("10.99.0.101/24"), Dev: "eth0"})
	now := at.Add(10*time.Second + 300*time.Millisecond)
	if err := d.reload(&config.Config{Instances: []config.Instance{ic}}, now); err != nil {
		t.Fatal(err)
	}
	if len(h.sent) != sent+1 || len(h.sent[sent].adv.Addresses) != 2 {
		t.Errorf("%d adverts on reload, want one listing both VIPs", len(h.sent)-sent)
	}
	now = now.Add(reloadHoldBack(ic.AdvertInterval))
	advance(d, now)
	if got := h.vipCalls[len(h.vipCalls)-1]; got != "add 10.99.0.101/24 dev eth0" {
		t.Errorf("last VIP call %q, want only the new VIP added", got)
	}
	want := []netip.Addr{addr100, netip.MustParseAddr("10.99.0.101"), netip.MustParseAddr("10.99.0.200")}
	if len(h.announced) != announced+1 || !slices.Equal(h.announced[announced].addrs, want) || h.announced[announced].rounds != 2 {
		t.Fatalf("announcements on reload %+v, want 2 rounds of %v", h.announced[announced:], want)
	}
	advance(d, now.Add(5*time.Second))
	if len(h.announced) != announced+2 {
		t.Errorf("no second burst 5 s after the reload")
	}
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster || s.Counters.BecomeMaster != 1 {
		t.Errorf("after reload: %v, became master %d times; want MASTER, once", s.State, s.Counters.BecomeMaster)
	}
}

// TestReloadMovesVIP: a VIP that stays but changes device or label is moved by the daemon
// (the state machine sees the same prefix).
func TestReloadMovesVIP(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24", "10.99.0.101/24")
	startDaemon(t, d, ic)
	at := takeover(100)
	advance(d, at)
	calls := len(h.vipCalls)
	ic.VIPs = slices.Clone(ic.VIPs)
	ic.VIPs[1].Label = "eth0:moved"
	if err := d.reload(&config.Config{Instances: []config.Instance{ic}}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	want := []string{"remove 10.99.0.101/24 dev eth0", "add 10.99.0.101/24 dev eth0 label eth0:moved"}
	if !slices.Equal(h.vipCalls[calls:], want) {
		t.Errorf("VIP calls %q, want %q", h.vipCalls[calls:], want)
	}
	if got := d.byName["VI_1"].vipFor(netip.MustParsePrefix("10.99.0.101/24")); got.Label != "eth0:moved" {
		t.Errorf("vipFor after reload: %v", got)
	}
}

// TestReloadRefusesInvalid: a configuration the daemon cannot route is refused whole.
func TestReloadRefusesInvalid(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	a := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	startDaemon(t, d, a)
	b := testInstance("VI_2", 1, 100, "10.99.0.101/24") // same interface and VRID
	err := d.reload(&config.Config{Instances: []config.Instance{testInstance("VI_3", 3, 100), b, a}}, t0.Add(time.Second))
	if err == nil {
		t.Fatal("a second instance on VRID 1 of eth0 was accepted")
	}
	if len(d.instances) != 1 || d.byName["VI_3"] != nil || len(h.socks) != 1 {
		t.Errorf("a refused reload changed the instances: %d", len(d.instances))
	}
}

// TestShutdown: on stop every master sends priority 0 and removes its VIPs and excluded
// VIPs, backups go quietly, and every socket, announcer and netlink handle is closed.
func TestShutdown(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	a := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	a.ExcludedVIPs = []config.VIP{{Prefix: netip.MustParsePrefix("10.99.0.200/32"), Dev: "eth0"}}
	startDaemon(t, d, a, testInstance("VI_2", 2, 50, "10.99.0.101/24"))
	at := takeover(100)
	advance(d, at)
	p := peerAdvert(t, 2, 150, "10.99.0.101/24")
	d.handlePacket(d.byName["VI_2"].conn, &p, at)
	sent := len(h.sent)

	d.shutdown(at.Add(time.Second))
	if got := h.priorities()[sent:]; !slices.Equal(got, []uint8{0}) {
		t.Errorf("adverts on shutdown: priorities %v, want one priority 0 (from the master)", got)
	}
	if len(h.held) != 0 {
		t.Errorf("VIPs left on shutdown: %v", h.heldList())
	}
	if !h.socks[0].isClosed || !h.garpClosed || !h.linksClosed {
		t.Errorf("closed: socket %v, announcers %v, links %v", h.socks[0].isClosed, h.garpClosed, h.linksClosed)
	}
	for _, s := range d.Snapshot().Instances {
		if s.State == vrrp.StateMaster || s.State == vrrp.StateBackup {
			t.Errorf("%s still %v after shutdown", s.Name, s.State)
		}
	}
	if _, ok := d.timers.Peek(); ok {
		t.Error("a timer is still armed after shutdown")
	}
}

// TestStartupRecovery: the VIPs a crashed run left are removed before any instance starts.
func TestStartupRecovery(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	stale := testInstance("old", 1, 100, "10.99.0.150/24")
	h.stale = newVIPSet(stale).vips
	h.held[h.stale[0]] = true
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	if len(h.held) != 0 || len(h.vipCalls) != 1 || h.vipCalls[0] != "recover 10.99.0.150/24 dev eth0" {
		t.Errorf("after start: VIPs %v, calls %q; want the stale one recovered first", h.heldList(), h.vipCalls)
	}
}

// TestBatchFromReader: packets a socket's reader hands over reach their instance through
// handleBatch; a batch read from a socket closed since is dropped.
func TestBatchFromReader(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"), testInstance("VI_2", 2, 100, "10.99.0.101/24"))
	s := h.socks[0]
	p1, p2 := peerAdvert(t, 1, 150, "10.99.0.100/24"), peerAdvert(t, 2, 150, "10.99.0.101/24")
	s.in <- []transport.Packet{p1, p2}
	b := recvBatch(t, d)
	if b.n != 2 {
		t.Fatalf("batch of %d packets, want 2", b.n)
	}
	now := t0.Add(time.Second)
	d.handleBatch(b, now)
	b.free <- b
	for _, name := range []string{"VI_1", "VI_2"} {
		if in := d.byName[name]; in.sm.Counters().AdvertRcvd != 1 || in.sm.Master() != peer {
			t.Errorf("%s: %d adverts received, master %v", name, in.sm.Counters().AdvertRcvd, in.sm.Master())
		}
	}
	// A batch the reader read just before the socket was replaced.
	s.in <- []transport.Packet{p1}
	b = recvBatch(t, d)
	conn := d.byName["VI_1"].conn
	d.closeConn(conn)
	d.open(conn)
	d.handleBatch(b, now)
	if got := d.byName["VI_1"].sm.Counters().AdvertRcvd; got != 1 || conn.received != 2 {
		t.Errorf("stale batch: VI_1 received %d adverts, socket %d packets; want it dropped", got, conn.received)
	}
}

// TestMasterDownFromArrival: a backup times its Master_Down_Timer from when the kernel
// received its master's advertisement (Packet.Arrived), not from when the loop read it;
// an age beyond maxArrivalAge (a loop that lagged, a stepped clock) counts as
// maxArrivalAge, a stamp in the future or none as the reading's time.
func TestMasterDownFromArrival(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	in := d.byName["VI_1"]
	conn := in.conn
	read := t0.Add(time.Second)
	for _, tc := range []struct {
		name     string
		stamped  bool
		age      time.Duration // of the stamp at the reading
		timeFrom time.Duration // before the reading
	}{
		{"no stamp", false, 0, 0},
		{"300µs before the reading", true, 300 * time.Microsecond, 300 * time.Microsecond},
		{"a second before", true, time.Second, maxArrivalAge},
		{"after the reading", true, -time.Millisecond, 0},
	} {
		p := peerAdvert(t, 1, 150, "10.99.0.100/24")
		if tc.stamped {
			p.Arrived = read.Add(-tc.age)
		}
		d.handleBatch(&batch{conn: conn, tc: conn.tc, pkts: []transport.Packet{p}, n: 1}, read)
		if in.sm.State() != vrrp.StateBackup || in.sm.Timer() != vrrp.TimerMasterDown {
			t.Fatalf("%s: state %v timer %v", tc.name, in.sm.State(), in.sm.Timer())
		}
		mdi := vrrp.MasterDownInterval(100, time.Second) // the peer's 1 s, as peerAdvert says
		if got, want := in.sm.Deadline(), read.Add(-tc.timeFrom).Add(mdi); !got.Equal(want) {
			t.Errorf("%s: Master_Down_Timer at %v after the reading, want %v", tc.name, got.Sub(read), want.Sub(read))
		}
		read = read.Add(time.Second)
	}
}

func recvBatch(t *testing.T, d *Daemon) *batch {
	t.Helper()
	select {
	case b := <-d.batches:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("the reader handed over no batch")
		return nil
	}
}

// TestCountersPublished: counters reach the snapshot within publishInterval, not per
// packet; a state change is published at once.
func TestCountersPublished(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	conn := d.byName["VI_1"].conn
	now := t0.Add(time.Second)
	p := peerAdvert(t, 1, 150, "10.99.0.100/24")
	d.handleBatch(&batch{conn: conn, tc: conn.tc, pkts: []transport.Packet{p}, n: 1}, now)
	d.maybePublish(now)
	if s := snapOf(t, d, "VI_1"); s.Master != peer {
		t.Errorf("a new master is not published at once: %v", s.Master)
	}
	p2 := peerAdvert(t, 1, 150, "10.99.0.100/24")
	later := now.Add(100 * time.Millisecond)
	d.handleBatch(&batch{conn: conn, tc: conn.tc, pkts: []transport.Packet{p2}, n: 1}, later)
	d.maybePublish(later)
	if got := snapOf(t, d, "VI_1").Counters.AdvertRcvd; got != 1 {
		t.Errorf("advert_rcvd %d published before publishInterval, want still 1", got)
	}
	// Due publishInterval after the first batch that changed a counter.
	at, ok := d.timers.Armed(d.publishK)
	if want := now.Add(500 * time.Millisecond); !ok || !at.Equal(want) {
		t.Fatalf("publication at %v (armed %v), want %v", at, ok, want)
	}
	advance(d, at)
	s := d.Snapshot()
	if got := snapOf(t, d, "VI_1").Counters.AdvertRcvd; got != 2 {
		t.Errorf("advert_rcvd %d after publishInterval, want 2", got)
	}
	if len(s.Interfaces) != 1 || s.Interfaces[0].Received != 2 || s.Interfaces[0].Name != "eth0" {
		t.Errorf("interfaces %+v, want eth0 with 2 received", s.Interfaces)
	}
	if _, ok := d.timers.Armed(d.publishK); ok {
		t.Error("publication still armed with nothing new")
	}
}

// TestRunTakeoverOnTime runs the real loop and timer thread on the fakes and the real
// clock: a backup that hears no master sends its takeover advertisement once
// Master_Down_Interval has passed, never before (the timer thread wakes spinLead early and
// waits out the rest), and soon after.
func TestRunTakeoverOnTime(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.AdvertInterval = 50 * time.Millisecond
	var first time.Time // written by the timer thread, read once Run has returned
	h.onSend = func() {
		if first.IsZero() {
			first = time.Now()
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- d.Run(ctx, &config.Config{Instances: []config.Instance{ic}}) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(d.Snapshot().Instances) == 0 || d.Snapshot().Instances[0].State != vrrp.StateMaster {
		if time.Now().After(deadline) {
			t.Fatal("the backup did not take over in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	mdi := vrrp.MasterDownInterval(100, ic.AdvertInterval)
	if p := h.priorities(); len(p) == 0 || p[0] != 100 {
		t.Fatalf("adverts %v, want the takeover's (100) first", p)
	}
	if early := start.Add(mdi).Sub(first); early > 0 {
		t.Errorf("takeover advertisement %v before Master_Down_Interval (%v) ran out", early, mdi)
	}
	// Loose: the machine may be busy; the namespace benchmark measures the real figure.
	if late := first.Sub(start.Add(mdi)); late > 200*time.Millisecond {
		t.Errorf("takeover advertisement %v after Master_Down_Interval ran out", late)
	}
}

// TestRun runs the real loop on the fakes and the real clock: Run starts the instances,
// an address owner is master at once, and cancelling the context stops it gracefully.
func TestRun(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 255, "10.99.0.100/24")
	ic.VIPs = append(ic.VIPs, config.VIP{Prefix: netip.PrefixFrom(eth0src, 24), Dev: "eth0"}) // the owner's own address
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, &config.Config{Instances: []config.Instance{ic}}) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(d.Snapshot().Instances) == 0 || d.Snapshot().Instances[0].State != vrrp.StateMaster {
		if time.Now().After(deadline) {
			t.Fatal("the owner is not master after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := d.Reload(ctx, &config.Config{Instances: []config.Instance{ic}}); err != nil {
		t.Errorf("Reload while running: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	// Run has returned: the fakes are the test's again.
	if p := h.priorities(); len(p) < 2 || p[0] != 255 || p[len(p)-1] != 0 {
		t.Errorf("adverts %v, want 255 first and 0 last", p)
	}
	if len(h.held) != 0 || !h.vipsClosed || h.watching != 0 {
		t.Errorf("after Run: VIPs %v, store closed %v, watches %d", h.heldList(), h.vipsClosed, h.watching)
	}
	if err := d.Reload(t.Context(), &config.Config{}); !errors.Is(err, errNotRunning) {
		t.Errorf("Reload after Run = %v, want errNotRunning", err)
	}
}

// startWithExcluded starts a daemon on a fake host with one instance (priority 100, one
// VIP and one excluded VIP) and returns when its takeover is due.
func startWithExcluded(t *testing.T) (*fakeHost, *Daemon, config.Instance, time.Time) {
	t.Helper()
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.ExcludedVIPs = []config.VIP{{Prefix: netip.MustParsePrefix("10.99.0.200/32"), Dev: "eth0"}}
	startDaemon(t, d, ic)
	return h, d, ic, takeover(100)
}

// fakeVMACs records the macvlans the daemon makes and removes.
type fakeVMACs struct {
	fail    error // what Up answers, when set
	up      map[string]vip.VMAC
	created []string
	removed []string
	// recovered counts Recover calls: once, at start, before any Up.
	recovered int
}

func (f *fakeVMACs) Up(m vip.VMAC) (int, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	f.up[m.Name] = m
	f.created = append(f.created, m.Name)
	return len(f.created), nil
}

func (f *fakeVMACs) Remove(m vip.VMAC) error {
	delete(f.up, m.Name)
	f.removed = append(f.removed, m.Name)
	return nil
}

func (f *fakeVMACs) Recover() (vip.Recovered, error) {
	f.recovered++
	return vip.Recovered{}, nil
}

// TestVMACInstance: a use_vmac instance gets its macvlan (vrrp.VRID, the virtual MAC, on
// its interface) before it starts, keeps it while BACKUP, sends its adverts from the
// macvlan with the parent's address as source, puts its VIPs and announcements on the
// macvlan as MASTER, and removes the macvlan when it stops. vmac_xmit_base keeps the
// socket on the parent.
func TestVMACInstance(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	f := &fakeVMACs{up: map[string]vip.VMAC{}}
	d.vmacs = f
	ic := testInstance("VI_1", 51, 100, "10.99.0.100/24")
	ic.VMAC = config.VMAC{Enabled: true}
	xb := testInstance("VI_2", 52, 50, "10.99.0.101/24")
	xb.VMAC = config.VMAC{Enabled: true, XmitBase: true}
	startDaemon(t, d, ic, xb)
	if f.recovered != 1 {
		t.Errorf("VMAC recovery ran %d times before the instances started, want once", f.recovered)
	}

	m, ok := f.up["vrrp.51"]
	if !ok || m.Parent != "eth0" || m.MAC.String() != "00:00:5e:00:01:33" || m.IPv6 {
		t.Fatalf("macvlans %+v, want vrrp.51 on eth0 with 00:00:5e:00:01:33", f.up)
	}
	if _, ok := f.up["vrrp.52"]; !ok {
		t.Fatalf("no vrrp.52 for the vmac_xmit_base instance: %+v", f.up)
	}
	if len(h.socks) != 2 || h.socks[0].ifname != "vrrp.51" || h.socks[0].opt.SourceInterface != "eth0" ||
		h.socks[1].ifname != "eth0" || h.socks[1].opt.SourceInterface != "" {
		t.Fatalf("sockets: %s (source from %q), %s", h.socks[0].ifname, h.socks[0].opt.SourceInterface, h.socks[1].ifname)
	}
	at := takeover(100)
	advance(d, at)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster {
		t.Fatalf("VI_1 %v, want MASTER", s.State)
	}
	if len(h.sent) == 0 || h.sent[0].src != eth0src {
		t.Errorf("adverts %+v, want from eth0's address %s", h.sent, eth0src)
	}
	if want := []string{"10.99.0.100/24 dev vrrp.51"}; !slices.Equal(h.heldList(), want) {
		t.Errorf("VIPs %v, want %v", h.heldList(), want)
	}
	if len(h.announced) == 0 || h.announced[0].dev != "vrrp.51" {
		t.Errorf("announcements %+v, want on vrrp.51 (its MAC is the virtual MAC)", h.announced)
	}
	if len(f.removed) != 0 {
		t.Errorf("macvlans removed while running: %v", f.removed)
	}
	d.shutdown(at.Add(time.Second))
	slices.Sort(f.removed)
	if !slices.Equal(f.removed, []string{"vrrp.51", "vrrp.52"}) || len(f.up) != 0 {
		t.Errorf("removed %v on shutdown, left %v", f.removed, f.up)
	}
}

// TestVMACNames: keepalived's naming across instances, and VIPs of the parent moving
// onto the macvlan while VIPs on other devices stay.
func TestVMACNames(t *testing.T) {
	a := testInstance("A", 7, 100, "10.99.0.100/24")
	a.VMAC = config.VMAC{Enabled: true}
	b := testInstance("B", 7, 100, "fd00:99::100/64")
	b.Family = config.IPv6
	b.VMAC = config.VMAC{Enabled: true}
	c := testInstance("C", 8, 100, "10.99.0.101/24")
	c.VMAC = config.VMAC{Enabled: true, Interface: "mine"}
	c.VIPs = append(c.VIPs, config.VIP{Prefix: netip.MustParsePrefix("10.99.1.5/32"), Dev: "eth1"})
	cfg, by := vmacConfig(&config.Config{Instances: []config.Instance{a, b, c}})
	if by["A"].Name != "vrrp.7" || by["B"].Name != "vrrp6.7" || by["C"].Name != "mine" {
		t.Errorf("names %+v", by)
	}
	if by["B"].MAC.String() != "00:00:5e:00:02:07" || !by["B"].IPv6 {
		t.Errorf("IPv6 macvlan %+v", by["B"])
	}
	if got := cfg.Instances[2]; got.Interface != "mine" || got.VIPs[0].Dev != "mine" || got.VIPs[1].Dev != "eth1" {
		t.Errorf("instance C on the macvlan: %+v", got)
	}
	if a.Interface != "eth0" || a.VIPs[0].Dev != "eth0" {
		t.Error("vmacConfig changed its input")
	}
}

// TestVMACRetry: a macvlan that could not be made (its parent missing) is made again by
// the interface check while the instance's socket cannot open, and the instance leaves
// FAULT once it exists.
func TestVMACRetry(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	f := &fakeVMACs{up: map[string]vip.VMAC{}, fail: errors.New("parent eth0 missing")}
	d.vmacs = f
	h.openErr["vrrp.51"] = transport.ErrNoInterface
	ic := testInstance("VI_1", 51, 100, "10.99.0.100/24")
	ic.VMAC = config.VMAC{Enabled: true}
	startDaemon(t, d, ic)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || len(f.up) != 0 {
		t.Fatalf("without its macvlan: %v, macvlans %v", s.State, f.up)
	}
	f.fail = nil
	delete(h.openErr, "vrrp.51")
	d.checkInterfaces(t0.Add(time.Second))
	if _, ok := f.up["vrrp.51"]; !ok {
		t.Fatal("macvlan not made again by the interface check")
	}
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Errorf("with its macvlan: %v, want BACKUP", s.State)
	}
}

// TestAdvertsSentInOneBatch: on a socket that sends batches, the advertisements of the
// masters due in one wake-up go out in one SendBatch, each as a single Send would carry
// it; one that fails is left out and the batch goes on after it.
func TestAdvertsSentInOneBatch(t *testing.T) {
	h := newFakeHost()
	h.batchSockets = true
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"),
		testInstance("VI_2", 2, 100, "10.99.0.101/24"), testInstance("VI_3", 3, 100, "10.99.0.102/24"))
	advance(d, takeover(100))
	if !slices.Equal(h.batches, []int{3}) {
		t.Errorf("takeover adverts went out in batches %v, want one of 3", h.batches)
	}
	vrids := func(from int) []uint8 {
		var out []uint8
		for _, a := range h.sent[from:] {
			out = append(out, a.adv.VRID)
		}
		slices.Sort(out) // the order among equal deadlines is the timer heap's
		return out
	}
	next := func() time.Time {
		at, ok := d.timers.Armed(d.byName["VI_1"].timerKey)
		if !ok {
			t.Fatal("VI_1 has no timer")
		}
		return at
	}
	h.batches = nil
	n := len(h.sent)
	advance(d, next())
	if !slices.Equal(h.batches, []int{3}) || !slices.Equal(vrids(n), []uint8{1, 2, 3}) {
		t.Errorf("one interval later: batches %v, adverts of VRIDs %v; want one batch of 3, VRIDs 1 2 3", h.batches, vrids(n))
	}
	h.failVRID, h.batches = 2, nil
	n = len(h.sent)
	advance(d, next())
	// The failed one's place in the batch decides what is left after it: 2, 1 or none.
	if len(h.batches) == 0 || h.batches[0] != 3 || len(h.batches) > 2 || !slices.Equal(vrids(n), []uint8{1, 3}) {
		t.Errorf("with VRID 2's send failing: batches %v, adverts of VRIDs %v; want a batch of 3, then the rest after the failure, VRIDs 1 3", h.batches, vrids(n))
	}
}
