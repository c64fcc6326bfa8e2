package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/internal/transport/rawinject"
)

var (
	group4 = netip.MustParseAddr("224.0.0.18")
	group6 = netip.MustParseAddr("ff02::12")
)

// open opens a Conn on h's eth0 inside h's namespace and closes it at the end of the test.
func open(t testing.TB, h *netlab.Host, fam transport.Family, opt transport.Options) *transport.Conn {
	t.Helper()
	var c *transport.Conn
	// An address is tentative for a moment after its link (re)gains carrier, even with DAD
	// off, so a test that just brought the link back waits for a usable source.
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err = h.Do(func() (err error) {
			c, err = transport.Open(h.Link, fam, opt)
			return err
		})
		if !errors.Is(err, transport.ErrNoAddress) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("%s: Open(%s, %v): %v", h.Name, h.Link, fam, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readOne reads one packet, failing after a few seconds.
func readOne(t *testing.T, c *transport.Conn) transport.Packet {
	t.Helper()
	pkts := make([]transport.Packet, 8)
	n, err := readTimeout(c, pkts, 5*time.Second)
	if err != nil {
		t.Fatalf("ReadBatch: %v", err)
	}
	if n != 1 {
		t.Fatalf("ReadBatch returned %d packets, want 1", n)
	}
	p := pkts[0]
	p.Payload = append([]byte(nil), p.Payload...)
	return p
}

func readTimeout(c *transport.Conn, pkts []transport.Packet, d time.Duration) (int, error) {
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return 0, err
	}
	defer c.SetReadDeadline(time.Time{})
	n, err := c.ReadBatch(pkts)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, fmt.Errorf("nothing received within %v: %w", d, err)
	}
	return n, err
}

// warmUp sends probes from one Conn to another until one arrives, then drains the
// receiver: a freshly built lab segment can lose its very first frames while the bridge
// ports settle, which VRRP shrugs off by retransmitting but a one-shot test cannot.
func warmUp(t testing.TB, from, to *transport.Conn, dst netip.Addr) {
	t.Helper()
	probe := []byte{0x31, 0xff, 1, 0, 0, 100, 0, 0}
	pkts := make([]transport.Packet, 64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := from.Send(probe, dst); err != nil {
			t.Fatalf("warm-up Send: %v", err)
		}
		if _, err := readTimeout(to, pkts, 100*time.Millisecond); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no probe from %v to %v arrived in 10s", from.Source(), dst)
		}
	}
	for {
		if _, err := readTimeout(to, pkts, 100*time.Millisecond); err != nil {
			break
		}
	}
}

func ifIndex(t *testing.T, h *netlab.Host) int {
	t.Helper()
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	l, err := nh.LinkByName(h.Link)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Index
}

func TestMulticast(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, tc := range []struct {
		fam   transport.Family
		group netip.Addr
		src   func(*netlab.Host) netip.Addr
	}{
		{transport.IPv4, group4, func(h *netlab.Host) netip.Addr { return h.Addr4 }},
		{transport.IPv6, group6, func(h *netlab.Host) netip.Addr { return h.LinkLocal }},
	} {
		t.Run(tc.fam.String(), func(t *testing.T) {
			ca := open(t, a, tc.fam, transport.Options{})
			cb := open(t, b, tc.fam, transport.Options{})
			if got := ca.Source(); got != tc.src(a) {
				t.Errorf("a's source = %v, want %v", got, tc.src(a))
			}
			if ca.Group() != tc.group {
				t.Errorf("group = %v, want %v", ca.Group(), tc.group)
			}
			warmUp(t, ca, cb, tc.group)
			msg := []byte{0x31, 42, 100, 1, 0, 100, 0x12, 0x34, 10, 99, 0, 100}
			before := time.Now()
			if err := ca.Send(msg, tc.group); err != nil {
				t.Fatalf("Send: %v", err)
			}
			p := readOne(t, cb)
			if string(p.Payload) != string(msg) {
				t.Errorf("payload = % x, want % x (checksum must be untouched)", p.Payload, msg)
			}
			// Stamped by the kernel on arrival: after the send began, before the read returned.
			if p.Arrived.Before(before.Round(0)) || p.Arrived.After(time.Now().Round(0)) {
				t.Errorf("arrived %v, want between %v and now", p.Arrived, before)
			}
			if p.Src != tc.src(a) || p.Dst != tc.group || p.TTL != 255 || p.IfIndex != ifIndex(t, b) {
				t.Errorf("got src %v dst %v ttl %d ifindex %d; want %v %v 255 %d",
					p.Src, p.Dst, p.TTL, p.IfIndex, tc.src(a), tc.group, ifIndex(t, b))
			}
			// Multicast loopback is off: the sender does not hear itself.
			if n, err := readTimeout(ca, make([]transport.Packet, 4), 300*time.Millisecond); err == nil {
				t.Errorf("sender read back %d of its own packets", n)
			}
		})
	}
}

func TestUnicast(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, tc := range []struct {
		name     string
		fam      transport.Family
		opt      transport.Options
		src, dst netip.Addr
	}{
		{"IPv4", transport.IPv4, transport.Options{NoJoin: true}, a.Addr4, b.Addr4},
		{"IPv6 link-local", transport.IPv6, transport.Options{NoJoin: true}, a.LinkLocal, b.LinkLocal},
		{"IPv6 configured source", transport.IPv6, transport.Options{NoJoin: true, Source: a.Addr6}, a.Addr6, b.Addr6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := open(t, a, tc.fam, tc.opt)
			cb := open(t, b, tc.fam, transport.Options{NoJoin: true})
			warmUp(t, ca, cb, tc.dst)
			msg := []byte{0x31, 9, 100, 1, 0, 100, 0, 0, 1, 2, 3, 4}
			if err := ca.Send(msg, tc.dst); err != nil {
				t.Fatalf("Send: %v", err)
			}
			p := readOne(t, cb)
			if string(p.Payload) != string(msg) || p.Src != tc.src || p.Dst != tc.dst || p.TTL != 255 {
				t.Errorf("got % x from %v to %v ttl %d; want % x %v -> %v ttl 255", p.Payload, p.Src, p.Dst, p.TTL, msg, tc.src, tc.dst)
			}
		})
	}
}

// A packet that arrives with TTL / hop limit 254 is delivered with that TTL, for the
// caller to count as ip_ttl_err; checksums are left for the caller to verify.
func TestTTLReported(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	msg := []byte{0x31, 5, 100, 1, 0, 100, 0xde, 0xad, 10, 99, 0, 100}

	cb4 := open(t, b, transport.IPv4, transport.Options{})
	warmUp(t, open(t, a, transport.IPv4, transport.Options{}), cb4, group4)
	if err := a.Do(func() error {
		return rawinject.SendIPv4(a.Link, rawinject.IPv4{Src: a.Addr4, Dst: group4, TTL: 254, Payload: msg})
	}); err != nil {
		t.Fatal(err)
	}
	p := readOne(t, cb4)
	if p.TTL != 254 || p.Src != a.Addr4 || string(p.Payload) != string(msg) {
		t.Errorf("IPv4: TTL %d from %v payload % x; want 254 from %v % x", p.TTL, p.Src, p.Payload, a.Addr4, msg)
	}

	cb6 := open(t, b, transport.IPv6, transport.Options{})
	warmUp(t, open(t, a, transport.IPv6, transport.Options{}), cb6, group6)
	if err := a.Do(func() error {
		return rawinject.SendIPv6(a.Link, rawinject.IPv6{Src: a.LinkLocal, Dst: group6, HopLimit: 254, Payload: msg})
	}); err != nil {
		t.Fatal(err)
	}
	p = readOne(t, cb6)
	if p.TTL != 254 || p.Src != a.LinkLocal || string(p.Payload) != string(msg) {
		t.Errorf("IPv6: hop limit %d from %v payload % x; want 254 from %v % x", p.TTL, p.Src, p.Payload, a.LinkLocal, msg)
	}
}

// Packets queued together come back from one ReadBatch, in order, each with its own
// payload.
func TestReadBatch(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		t.Run(fam.String(), func(t *testing.T) {
			ca := open(t, a, fam, transport.Options{})
			cb := open(t, b, fam, transport.Options{BatchSize: 16})
			warmUp(t, ca, cb, ca.Group())
			before := cb.Stats()
			const total = 40
			for i := range total {
				msg := []byte{0x31, byte(i + 1), 100, 1, 0, 100, 0, 0}
				if err := ca.Send(msg, ca.Group()); err != nil {
					t.Fatalf("Send %d: %v", i, err)
				}
			}
			// Let everything land in b's socket buffer, so batches are full.
			time.Sleep(200 * time.Millisecond)
			pkts := make([]transport.Packet, 64)
			got, calls, maxBatch := 0, 0, 0
			for got < total {
				n, err := readTimeout(cb, pkts, 5*time.Second)
				if err != nil {
					t.Fatalf("after %d packets: %v", got, err)
				}
				calls++
				maxBatch = max(maxBatch, n)
				if n > 16 {
					t.Fatalf("ReadBatch returned %d packets, more than BatchSize 16", n)
				}
				for i := range n {
					if want := byte(got + i + 1); pkts[i].Payload[1] != want {
						t.Fatalf("packet %d has VRID %d, want %d", got+i, pkts[i].Payload[1], want)
					}
				}
				got += n
			}
			if maxBatch < 2 {
				t.Errorf("every ReadBatch returned one packet (%d calls); batching does not work", calls)
			}
			if st := cb.Stats(); st.Received-before.Received != total || st.Dropped != 0 {
				t.Errorf("stats = %+v (before the batch %+v), want %d more received, 0 dropped", st, before, total)
			}
		})
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a")
	c := open(t, lab.Host("a"), transport.IPv4, transport.Options{})
	if _, err := readTimeout(c, make([]transport.Packet, 4), 50*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadBatch past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.ReadBatch(make([]transport.Packet, 4))
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the reader park in the poller
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, transport.ErrClosed) {
			t.Errorf("ReadBatch after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadBatch still blocked 5s after Close")
	}
	if err := c.Send([]byte{1}, group4); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func ipCmd(t *testing.T, h *netlab.Host, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := h.Command(ctx, "ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// An interface going down, losing its carrier, or without an address gives errors the
// daemon can recognise (and turn into FAULT), and recovery works on the same Conn.
func TestInterfaceDownAndNoAddress(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a := lab.Host("a")

	var err error
	_ = a.Do(func() error { _, err = transport.Open("nosuch0", transport.IPv4, transport.Options{}); return nil })
	if !errors.Is(err, transport.ErrNoInterface) {
		t.Errorf("Open(nosuch0) = %v, want ErrNoInterface", err)
	}

	// A veth pair inside the host: up, carrier, but no IPv4 address.
	ipCmd(t, a, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
	ipCmd(t, a, "link", "set", "v1", "up")
	ipCmd(t, a, "link", "set", "v0", "up")
	_ = a.Do(func() error { _, err = transport.Open("v0", transport.IPv4, transport.Options{}); return nil })
	if !errors.Is(err, transport.ErrNoAddress) {
		t.Errorf("Open(v0) without IPv4 address = %v, want ErrNoAddress", err)
	}

	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		c := open(t, a, fam, transport.Options{})
		msg := []byte{0x31, 1, 100, 1, 0, 100, 0, 0}

		ipCmd(t, a, "link", "set", a.Link, "down")
		if err := c.Refresh(); !errors.Is(err, transport.ErrInterfaceDown) {
			t.Errorf("%v: Refresh with eth0 down = %v, want ErrInterfaceDown", fam, err)
		}
		// IPv6 loses its link-local address with the link, so either error is right.
		if err := c.Send(msg, c.Group()); !errors.Is(err, transport.ErrInterfaceDown) && !errors.Is(err, transport.ErrNoAddress) {
			t.Errorf("%v: Send with eth0 down = %v, want ErrInterfaceDown or ErrNoAddress", fam, err)
		} else {
			t.Logf("%v: Send with eth0 down: %v", fam, err)
		}
		ipCmd(t, a, "link", "set", a.Link, "up")
		waitRefresh(t, c)
		if err := c.Send(msg, c.Group()); err != nil {
			t.Errorf("%v: Send after eth0 came back: %v", fam, err)
		}

		if err := a.Cut(); err != nil {
			t.Fatal(err)
		}
		if err := c.Refresh(); !errors.Is(err, transport.ErrInterfaceDown) {
			t.Errorf("%v: Refresh with the cable cut = %v, want ErrInterfaceDown", fam, err)
		}
		if err := a.Restore(); err != nil {
			t.Fatal(err)
		}
		waitRefresh(t, c)
	}

	// Removing the primary IPv4 address: Refresh and Send say there is no source.
	c := open(t, a, transport.IPv4, transport.Options{})
	ipCmd(t, a, "addr", "del", a.Addr4.String()+"/24", "dev", a.Link)
	if err := c.Refresh(); !errors.Is(err, transport.ErrNoAddress) {
		t.Errorf("Refresh without IPv4 address = %v, want ErrNoAddress", err)
	}
	if err := c.Send([]byte{0x31, 1, 100, 1, 0, 100, 0, 0}, group4); !errors.Is(err, transport.ErrNoAddress) {
		t.Errorf("Send without IPv4 address = %v, want ErrNoAddress", err)
	}
	if c.Source().IsValid() {
		t.Errorf("Source = %v without an address", c.Source())
	}
	ipCmd(t, a, "addr", "add", a.Addr4.String()+"/24", "dev", a.Link)
	if err := c.Refresh(); err != nil || c.Source() != a.Addr4 {
		t.Errorf("after re-adding the address: Refresh %v, Source %v", err, c.Source())
	}
}

// waitRefresh waits for an interface that was brought back up to report carrier again.
func waitRefresh(t *testing.T, c *transport.Conn) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Refresh()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("interface still unusable after 5s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Secondary addresses (such as a VIP added in the interface's subnet) are never the
// source.
func TestSourceSkipsSecondary(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	ipCmd(t, a, "addr", "add", "10.99.0.200/24", "dev", a.Link)
	c := open(t, a, transport.IPv4, transport.Options{})
	if c.Source() != a.Addr4 {
		t.Errorf("Source = %v, want primary %v", c.Source(), a.Addr4)
	}
}

// TestSourceAddresses: the virtual addresses the daemon adds are never the source, neither
// one in the interface's subnet (a secondary) nor a /32 in a subnet of its own, which the
// kernel lists as a primary but after the interface's own address. (Moved here from package
// vip with the one source-address rule.)
func TestSourceAddresses(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	ipCmd(t, a, "addr", "add", "10.99.0.100/24", "dev", a.Link)
	ipCmd(t, a, "addr", "add", "10.99.0.101/32", "dev", a.Link)
	c := open(t, a, transport.IPv4, transport.Options{})
	if c.Source() != a.Addr4 {
		t.Errorf("Source = %v, want %v", c.Source(), a.Addr4)
	}
}

// Malformed VRRP is the caller's to judge: the transport delivers a truncated message and
// skips IP options, but never sees other protocols.
func TestMalformedDelivered(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	cb := open(t, b, transport.IPv4, transport.Options{})
	warmUp(t, open(t, a, transport.IPv4, transport.Options{}), cb, group4)

	inject := func(p rawinject.IPv4) {
		t.Helper()
		p.Src, p.Dst = a.Addr4, group4
		if err := a.Do(func() error { return rawinject.SendIPv4(a.Link, p) }); err != nil {
			t.Fatal(err)
		}
	}
	// Another protocol to the same group is not for us; the truncated advert after it is.
	inject(rawinject.IPv4{Protocol: 253, Payload: []byte{0x31, 1, 100, 1, 0, 100, 0, 0}})
	inject(rawinject.IPv4{Payload: []byte{0x31, 1, 100}})
	if p := readOne(t, cb); string(p.Payload) != "\x31\x01\x64" || p.TTL != 255 {
		t.Errorf("truncated advert: payload % x TTL %d", p.Payload, p.TTL)
	}
	inject(rawinject.IPv4{Options: []byte{0x94, 0x04, 0, 0}, Payload: []byte{0x31, 2, 100, 0, 0, 100, 0xce, 0x9a}})
	if p := readOne(t, cb); string(p.Payload) != "\x31\x02\x64\x00\x00\x64\xce\x9a" {
		t.Errorf("advert behind IP options: payload % x", p.Payload)
	}
}

// TestPending: Pending reports a packet queued unread, for both families, and nothing
// once it is read.
func TestPending(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		t.Run(fam.String(), func(t *testing.T) {
			ca := open(t, a, fam, transport.Options{})
			cb := open(t, b, fam, transport.Options{})
			warmUp(t, ca, cb, ca.Group())
			if cb.Pending() {
				t.Fatal("Pending with nothing sent")
			}
			if err := ca.Send([]byte{0x31, 1, 100, 1, 0, 100, 0, 0}, ca.Group()); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for !cb.Pending() {
				if time.Now().After(deadline) {
					t.Fatal("Pending never reported the packet sent")
				}
				time.Sleep(time.Millisecond)
			}
			readOne(t, cb)
			if cb.Pending() {
				t.Error("Pending after the one packet was read")
			}
		})
	}
}

// SendBatch sends every message, in order, each with its own payload and destination and
// the same source, TTL 255 and untouched checksum as Send: multicast and unicast, both
// families; a message of the wrong family stops the batch there.
func TestSendBatch(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, tc := range []struct {
		name     string
		fam      transport.Family
		opt      transport.Options
		src, dst netip.Addr
	}{
		{"IPv4 multicast", transport.IPv4, transport.Options{}, a.Addr4, group4},
		{"IPv6 multicast", transport.IPv6, transport.Options{}, a.LinkLocal, group6},
		{"IPv4 unicast", transport.IPv4, transport.Options{NoJoin: true}, a.Addr4, b.Addr4},
		{"IPv6 unicast", transport.IPv6, transport.Options{NoJoin: true}, a.LinkLocal, b.LinkLocal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := open(t, a, tc.fam, tc.opt)
			cb := open(t, b, tc.fam, tc.opt)
			warmUp(t, ca, cb, tc.dst)
			const total = 100 // more than one receive batch, fewer than the socket buffer holds
			msgs := make([]transport.Message, total)
			for i := range msgs {
				msgs[i] = transport.Message{Payload: []byte{0x31, byte(i + 1), 100, 1, 0, 100, byte(i), 0xaa, 10, 99, 0, byte(i)}, Dst: tc.dst}
			}
			if n, err := ca.SendBatch(msgs); n != total || err != nil {
				t.Fatalf("SendBatch = %d, %v; want %d, nil", n, err, total)
			}
			pkts := make([]transport.Packet, 64)
			for got := 0; got < total; {
				n, err := readTimeout(cb, pkts, 5*time.Second)
				if err != nil {
					t.Fatalf("after %d packets: %v", got, err)
				}
				for i := range n {
					p, want := pkts[i], msgs[got+i]
					if string(p.Payload) != string(want.Payload) || p.Src != tc.src || p.Dst != tc.dst || p.TTL != 255 {
						t.Fatalf("packet %d: % x from %v to %v ttl %d; want % x %v -> %v ttl 255",
							got+i, p.Payload, p.Src, p.Dst, p.TTL, want.Payload, tc.src, tc.dst)
					}
				}
				got += n
			}
			other := b.Addr6
			if tc.fam == transport.IPv6 {
				other = b.Addr4
			}
			// The messages before a refused one still go out; the ones after it do not.
			bad := []transport.Message{msgs[0], {Payload: msgs[1].Payload, Dst: other}, msgs[2]}
			if n, err := ca.SendBatch(bad); n != 1 || err == nil {
				t.Errorf("SendBatch with a %v destination at index 1 = %d, %v; want 1 and an error", other, n, err)
			}
			if p := readOne(t, cb); string(p.Payload) != string(msgs[0].Payload) {
				t.Errorf("after the refused batch: got % x, want message 0 (% x)", p.Payload, msgs[0].Payload)
			}
			if n, err := readTimeout(cb, pkts, 300*time.Millisecond); err == nil {
				t.Errorf("%d more packets arrived after the refused message", n)
			}
		})
	}
}
