package daemon

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// backupDaemon builds a daemon with n IPv4 instances in Backup on one (socket-less) conn,
// enough to drive the receive path without a network.
func backupDaemon(tb testing.TB, n int) (*Daemon, *conn) {
	tb.Helper()
	d, err := New(Options{StateDir: tb.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoConflictProbes: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.vips.Close() })
	c := &conn{key: connKey{ifname: "eth0", fam: config.IPv4}}
	d.conns[c.key] = c
	now := time.Now()
	for i := 1; i <= n; i++ {
		ic := config.Instance{
			Name: "VI", Interface: "eth0", Family: config.IPv4, VRID: uint8(i), Priority: 100,
			Version: vrrp.Version3, AdvertInterval: 100 * time.Millisecond, Preempt: true,
			VIPs: []config.VIP{{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, 1, byte(i)}), 24)}},
		}
		in := &instance{cfg: ic, vips: newVIPSet(ic), conn: c}
		in.timerKey = d.newTimer(in, timerVRRP)
		in.announceKey = d.newTimer(in, timerAnnounce)
		sm, err := vrrp.NewInstance(ic.StateMachineConfig(netip.MustParseAddr("10.99.0.12")))
		if err != nil {
			tb.Fatal(err)
		}
		in.sm = sm
		c.byVRID[ic.VRID] = in
		c.insts = append(c.insts, in)
		d.instances = append(d.instances, in)
		d.acts = sm.Start(now, d.acts[:0])
		d.execute(in, now)
	}
	return d, c
}

// advertPacket is what the transport hands over for an advert of vrid from 10.99.0.11.
func advertPacket(tb testing.TB, vrid uint8, ttl int) transport.Packet {
	src, dst := netip.MustParseAddr("10.99.0.11"), vrrp.MulticastIPv4
	a := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: vrid, Priority: 150,
		MaxAdvertInterval: 10, Addresses: []netip.Addr{netip.AddrFrom4([4]byte{10, 99, 1, vrid})}}
	b, err := a.AppendMarshal(nil, src, dst)
	if err != nil {
		tb.Fatal(err)
	}
	return transport.Packet{Payload: b, Src: src, Dst: dst, TTL: ttl}
}

// TestHandlePacketRouting checks that a packet reaches the instance its VRID names, that
// errors count on that instance, and that packets for unknown VRIDs count on the socket
// apart from malformed ones.
func TestHandlePacketRouting(t *testing.T) {
	d, c := backupDaemon(t, 3)
	now := time.Now()
	p := advertPacket(t, 2, 255)
	d.handlePacket(c, &p, now)
	if got := c.byVRID[2].sm.Counters().AdvertRcvd; got != 1 {
		t.Fatalf("VRID 2 advert_rcvd = %d, want 1", got)
	}
	if m := c.byVRID[2].sm.Master(); m != p.Src {
		t.Fatalf("VRID 2 follows %v, want %v", m, p.Src)
	}
	if got := c.byVRID[1].sm.Counters().AdvertRcvd + c.byVRID[3].sm.Counters().AdvertRcvd; got != 0 {
		t.Fatalf("other instances received %d adverts", got)
	}
	ttl := advertPacket(t, 3, 64)
	d.handlePacket(c, &ttl, now)
	if got := c.byVRID[3].sm.Counters().IPTTLErr; got != 1 {
		t.Fatalf("VRID 3 ip_ttl_err = %d, want 1", got)
	}
	bad := advertPacket(t, 1, 255)
	bad.Payload[7] ^= 1
	d.handlePacket(c, &bad, now)
	if got := c.byVRID[1].sm.Counters().ChecksumErr; got != 1 {
		t.Fatalf("VRID 1 checksum_err = %d, want 1", got)
	}
	unknown := advertPacket(t, 9, 255)
	short := transport.Packet{Payload: []byte{0x31, 1}, Src: p.Src, Dst: p.Dst, TTL: 255}
	d.handlePacket(c, &unknown, now)
	d.handlePacket(c, &short, now)
	// The unknown VRID is another router's advert, counted apart; only the short packet
	// is malformed.
	if c.unattributed != 1 || c.otherVRID != 1 || c.received != 5 {
		t.Fatalf("socket counted %d unattributed and %d other-VRID of %d received, want 1, 1 of 5", c.unattributed, c.otherVRID, c.received)
	}
	// The deadline of VRID 2 moved to Master_Down_Interval after the advert.
	at, ok := d.timers.Armed(c.byVRID[2].timerKey)
	if want := now.Add(c.byVRID[2].sm.MasterDownInterval()); !ok || !at.Equal(want) {
		t.Fatalf("VRID 2 timer at %v (armed %v), want %v", at, ok, want)
	}
}

// TestHandlePacketUnicastPeers checks keepalived's check_unicast_src: a unicast instance
// takes adverts only from its configured peers (any TTL, since routers may sit between
// them), and an advert from anyone else is dropped and counted on the socket.
func TestHandlePacketUnicastPeers(t *testing.T) {
	d, c := backupDaemon(t, 1)
	in := c.byVRID[1]
	in.cfg.UnicastSrc = netip.MustParseAddr("10.99.0.12")
	in.cfg.UnicastPeers = []netip.Addr{netip.MustParseAddr("10.99.0.13")}
	now := time.Now()

	stranger := advertPacket(t, 1, 255) // from 10.99.0.11, not a peer
	d.handlePacket(c, &stranger, now)
	if got := in.sm.Counters().AdvertRcvd; got != 0 || c.unattributed != 1 || in.sm.Master().IsValid() {
		t.Fatalf("advert from a non-peer: advert_rcvd %d, unattributed %d, master %v; want it dropped", got, c.unattributed, in.sm.Master())
	}

	peer := netip.MustParseAddr("10.99.0.13")
	a := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: 1, Priority: 150,
		MaxAdvertInterval: 10, Addresses: []netip.Addr{netip.AddrFrom4([4]byte{10, 99, 1, 1})}}
	b, err := a.AppendMarshal(nil, peer, in.cfg.UnicastSrc)
	if err != nil {
		t.Fatal(err)
	}
	routed := transport.Packet{Payload: b, Src: peer, Dst: in.cfg.UnicastSrc, TTL: 62}
	d.handlePacket(c, &routed, now)
	if got := in.sm.Counters(); got.AdvertRcvd != 1 || got.IPTTLErr != 0 || in.sm.Master() != peer {
		t.Fatalf("advert from the peer with TTL 62: advert_rcvd %d, ip_ttl_err %d, master %v; want accepted", got.AdvertRcvd, got.IPTTLErr, in.sm.Master())
	}
}

// BenchmarkHandlePacket is the loop's per-packet cost with 255 backups: route by VRID,
// decode and verify, state machine, re-arm the timer heap. It must not allocate.
func BenchmarkHandlePacket(b *testing.B) {
	d, c := backupDaemon(b, 255)
	pkts := make([]transport.Packet, 255)
	for i := range pkts {
		pkts[i] = advertPacket(b, uint8(i+1), 255)
	}
	now := time.Now()
	for i := range pkts { // every instance learns its master (and publishes) before timing
		d.handlePacket(c, &pkts[i], now)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(400 * time.Microsecond)
		d.handlePacket(c, &pkts[i%255], now)
	}
}

// BenchmarkBatchHandoff measures the reader-to-loop hand-over of one batch (a channel send
// and the batch's return on the socket's one-slot free list), the design chosen over a
// lock-free ring: at 64 packets a batch its cost per packet is a few nanoseconds.
func BenchmarkBatchHandoff(b *testing.B) {
	batches := make(chan *batch, 16)
	c := &conn{free: make(chan *batch, 1)}
	c.free <- &batch{conn: c, free: c.free}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case bt := <-c.free:
				batches <- bt
			case <-done:
				return
			}
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		bt := <-batches
		bt.free <- bt
	}
	close(done)
}
