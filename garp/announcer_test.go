package garp

import (
	"bytes"
	"context"
	"encoding/hex"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/mdlayher/packet"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

func ipCmd(t *testing.T, h *netlab.Host, args ...string) {
	t.Helper()
	if out, err := h.Command(t.Context(), "ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: ip %v: %v: %s", h.Name, args, err, out)
	}
}

func newAnnouncer(t *testing.T, h *netlab.Host, s Settings) *Announcer {
	t.Helper()
	var a *Announcer
	if err := h.Do(func() (err error) {
		a, err = NewAnnouncer("eth0", s, func(err error) { t.Errorf("send: %v", err) })
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// sniffer reads every frame arriving at a host's eth0 (ETH_P_ALL).
type sniffer struct {
	c *packet.Conn
}

func sniff(t *testing.T, h *netlab.Host) *sniffer {
	t.Helper()
	var c *packet.Conn
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		c, err = packet.Listen(ifi, packet.Raw, 0x0003, nil) // ETH_P_ALL
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &sniffer{c}
}

// collect returns the announcement frames from src until it has n of
// them or the deadline passes.
func (s *sniffer) collect(t *testing.T, src net.HardwareAddr, n int) (garps, nas [][]byte) {
	t.Helper()
	s.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	for len(garps)+len(nas) < n {
		k, _, err := s.c.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after %d GARPs and %d NAs: %v", len(garps), len(nas), err)
		}
		f := bytes.Clone(buf[:k])
		if k < 14 || !bytes.Equal(f[6:12], src) {
			continue
		}
		switch {
		case f[12] == 0x08 && f[13] == 0x06:
			garps = append(garps, f)
		case f[12] == 0x86 && f[13] == 0xdd && k > 54 && f[20] == 58 && f[54] == 136:
			nas = append(nas, f)
		}
	}
	return garps, nas
}

// TestAnnouncerSendsKeepalivedFrames gives host a keepalived's MAC and VIPs
// from the capture, and checks that what the client receives is byte for
// byte what keepalived sent.
func TestAnnouncerSendsKeepalivedFrames(t *testing.T) {
	lab := netlabtest.New(t, "a", "client")
	a, client := lab.Host("a"), lab.Host("client")
	ipCmd(t, a, "link", "set", "eth0", "address", capturedMAC.String())
	ipCmd(t, a, "addr", "add", "10.99.0.150/24", "dev", "eth0")
	ipCmd(t, a, "addr", "add", "fd00:99::150/64", "dev", "eth0", "nodad")
	wantGARP, wantNA := capturedFrames(t)
	sn := sniff(t, client)

	ann := newAnnouncer(t, a, Defaults())
	ann.Announce([]netip.Addr{capturedV4, capturedV6}, 2)
	if err := ann.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	garps, nas := sn.collect(t, capturedMAC, 4)
	for _, g := range garps {
		if !bytes.Equal(g, wantGARP[0]) {
			t.Errorf("GARP on the wire:\n got  %s\n want %s", hex.EncodeToString(g), hex.EncodeToString(wantGARP[0]))
		}
	}
	for _, n := range nas {
		if !bytes.Equal(n, wantNA[0]) {
			t.Errorf("NA on the wire:\n got  %s\n want %s", hex.EncodeToString(n), hex.EncodeToString(wantNA[0]))
		}
	}
	if len(garps) != 2 || len(nas) != 2 {
		t.Errorf("%d GARPs and %d NAs, want 2 and 2", len(garps), len(nas))
	}
	if st := ann.counts(); st.GARPs != 2 || st.NAs != 2 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}

	// A router (IPv6 forwarding on) sets the Router flag, as keepalived does.
	if out, err := a.Command(t.Context(), "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/eth0/forwarding").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	routerAnn := newAnnouncer(t, a, Defaults())
	routerAnn.Announce([]netip.Addr{capturedV6}, 1)
	_, nas = sn.collect(t, capturedMAC, 1)
	if flags := nas[0][54+4]; flags != 0xa0 {
		t.Errorf("NA flags from a router 0x%02x, want 0xa0 (Router, Override)", flags)
	}
}

// TestClientNeighbourEntryMoves is what users care about: a client that
// talked to the VIP on b follows it to a by itself, on IPv4 and IPv6.
func TestClientNeighbourEntryMoves(t *testing.T) {
	lab := netlabtest.New(t, "a", "b", "client")
	a, b, client := lab.Host("a"), lab.Host("b"), lab.Host("client")
	vip4, vip6 := netip.MustParseAddr("10.99.0.150"), netip.MustParseAddr("fd00:99::150")
	ipCmd(t, b, "addr", "add", "10.99.0.150/24", "dev", "eth0")
	ipCmd(t, b, "addr", "add", "fd00:99::150/64", "dev", "eth0", "nodad")
	for _, ip := range []netip.Addr{vip4, vip6} {
		if out, err := client.Command(t.Context(), "ping", "-c", "1", "-W", "2", ip.String()).CombinedOutput(); err != nil {
			t.Fatalf("client cannot reach the VIP on b: %v: %s", err, out)
		}
		if mac, state, err := client.Neighbor(ip); err != nil || mac.String() != b.MAC.String() {
			t.Fatalf("client's entry for %s: %v %s %v, want b's %v", ip, mac, state, err, b.MAC)
		}
	}

	// Failover: b drops the VIPs, a takes them and announces. The client
	// sends nothing; only the announcements can change its entries.
	ipCmd(t, b, "addr", "del", "10.99.0.150/24", "dev", "eth0")
	ipCmd(t, b, "addr", "del", "fd00:99::150/64", "dev", "eth0")
	ipCmd(t, a, "addr", "add", "10.99.0.150/24", "dev", "eth0")
	ipCmd(t, a, "addr", "add", "fd00:99::150/64", "dev", "eth0", "nodad")
	// Control: moving the addresses alone does not move the entries.
	for _, ip := range []netip.Addr{vip4, vip6} {
		if mac, _, _ := client.Neighbor(ip); mac.String() != b.MAC.String() {
			t.Fatalf("entry for %s moved to %v before any announcement", ip, mac)
		}
	}
	ann := newAnnouncer(t, a, Defaults())
	ann.Announce([]netip.Addr{vip4, vip6}, 1)
	if err := ann.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, ip := range []netip.Addr{vip4, vip6} {
		var mac net.HardwareAddr
		var state netlab.NeighState
		// Frame delivery through the bridge is asynchronous: poll briefly.
		for range 100 {
			var err error
			if mac, state, err = client.Neighbor(ip); err != nil {
				t.Fatal(err)
			}
			if mac.String() == a.MAC.String() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if mac.String() != a.MAC.String() {
			t.Errorf("client's entry for %s: %v (%s), want a's %v", ip, mac, state, a.MAC)
		}
	}
}

func TestAnnouncerPacingAndCancel(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	ipCmd(t, a, "addr", "add", "10.99.0.150/24", "dev", "eth0")
	s := Defaults()
	s.Interval = 30 * time.Millisecond
	ann := newAnnouncer(t, a, s)
	vips := []netip.Addr{netip.MustParseAddr("10.99.0.150")}

	start := time.Now()
	ann.Announce(vips, 3)
	if err := ann.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Three GARPs 30 ms apart cannot all be out before 60 ms (a lower
	// bound only: the sender may be late, never early).
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("3 GARPs at 30 ms intervals took %v", d)
	}
	if st := ann.counts(); st.GARPs != 3 {
		t.Errorf("stats %+v", st)
	}

	// Cancel drops what is still waiting for its slot.
	s.Interval = time.Hour
	slow := newAnnouncer(t, a, s)
	slow.Announce(vips, 3) // one now, two an hour apart
	slow.Cancel(vips)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := slow.flush(ctx); err != nil {
		t.Fatalf("Flush after Cancel: %v", err)
	}
	if st := slow.counts(); st.GARPs > 1 {
		t.Errorf("cancelled GARPs were sent: %+v", st)
	}
}

func TestAnnouncerConcurrentUseAndClose(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	ipCmd(t, a, "addr", "add", "10.99.0.150/24", "dev", "eth0")
	ipCmd(t, a, "addr", "add", "fd00:99::150/64", "dev", "eth0", "nodad")
	ann := newAnnouncer(t, a, Defaults())
	vips := []netip.Addr{capturedV4, capturedV6}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				ann.Announce(vips, 1)
			}
		})
	}
	wg.Wait()
	if err := ann.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := ann.counts(); st.GARPs != 100 || st.NAs != 100 || st.Errors != 0 {
		t.Errorf("stats %+v, want 100 of each", st)
	}
	if err := ann.Close(); err != nil {
		t.Fatal(err)
	}
	ann.Announce(vips, 1) // after Close: ignored, no panic
	if err := ann.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewAnnouncerErrors(t *testing.T) {
	lab := netlabtest.New(t, "a")
	err := lab.Host("a").Do(func() error {
		if _, err := NewAnnouncer("nosuch0", Defaults(), nil); err == nil {
			t.Error("NewAnnouncer on a missing interface succeeded")
		}
		// lo has no Ethernet address.
		if _, err := NewAnnouncer("lo", Defaults(), nil); err == nil {
			t.Error("NewAnnouncer on lo succeeded")
		}
		bad := Defaults()
		bad.MasterRepeat = -1
		if _, err := NewAnnouncer("eth0", bad, nil); err == nil {
			t.Error("NewAnnouncer with bad settings succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAnnounce measures queueing and sending one round for two VIPs
// on a real interface in a lab namespace.
func BenchmarkAnnounce(b *testing.B) {
	lab := netlabtest.New(b, "a")
	a := lab.Host("a")
	if out, err := a.Command(context.Background(), "ip", "addr", "add", "fd00:99::150/64", "dev", "eth0", "nodad").CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	var ann *Announcer
	if err := a.Do(func() (err error) { ann, err = NewAnnouncer("eth0", Defaults(), nil); return err }); err != nil {
		b.Fatal(err)
	}
	defer ann.Close()
	vips := []netip.Addr{capturedV4, capturedV6}
	ctx := context.Background()
	for b.Loop() {
		ann.Announce(vips, 1)
		if err := ann.flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
