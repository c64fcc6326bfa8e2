package vip

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// bindUDP binds a socket to ip (call it inside Host.Do).
func bindUDP(ip netip.Addr) (net.PacketConn, error) {
	return net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
}

func TestInterfaceFor(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	// A second interface with a more specific route inside the lab range.
	for _, args := range [][]string{
		// (a veth pair: the dummy driver is not in every kernel)
		{"link", "add", "side0", "type", "veth", "peer", "name", "side1"},
		{"addr", "add", "10.99.0.129/25", "dev", "side0"},
		{"link", "set", "side1", "up"},
		{"link", "set", "side0", "up"},
	} {
		if out, err := a.Command(t.Context(), "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	cases := map[string]string{
		"10.99.0.11":  "eth0",  // a neighbour on the lab segment
		"10.99.0.10":  "eth0",  // this host's own address: via lo, held by eth0
		"10.99.0.200": "side0", // the more specific /25
		"10.99.0.129": "side0", // own address on side0
		"fd00:99::20": "eth0",
	}
	err := a.Do(func() error {
		for ip, want := range cases {
			got, err := InterfaceFor(netip.MustParseAddr(ip))
			if err != nil || got != want {
				t.Errorf("InterfaceFor(%s) = %q, %v; want %q", ip, got, err, want)
			}
		}
		// The namespace has no default route: a clear error, no guess.
		if got, err := InterfaceFor(netip.MustParseAddr("192.0.2.1")); err == nil {
			t.Errorf("InterfaceFor(unroutable) = %q, want an error", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSourceAddresses(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	// A /32 VIP in a subnet of its own is a primary address to the kernel;
	// the Manager must still not pick it as the adverts' source.
	for _, v := range []VIP{v4, v4h, {Prefix: netip.MustParsePrefix("fe80::99/64"), Dev: "eth0"}} {
		if err := m.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := m.PrimaryIPv4("eth0"); err != nil || got != a.Addr4 {
		t.Errorf("PrimaryIPv4 = %v, %v; want %v", got, err, a.Addr4)
	}
	if got, err := m.LinkLocal("eth0"); err != nil || got != a.LinkLocal {
		t.Errorf("LinkLocal = %v, %v; want %v", got, err, a.LinkLocal)
	}
	if err := a.Do(func() error {
		if got, err := PrimaryIPv4("eth0"); err != nil || got != a.Addr4 {
			t.Errorf("PrimaryIPv4 (package) = %v, %v; want %v", got, err, a.Addr4)
		}
		if _, err := PrimaryIPv4("lo"); !errors.Is(err, ErrNoAddress) {
			t.Errorf("PrimaryIPv4(lo) = %v, want ErrNoAddress (127.0.0.1 is host scope)", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Without an address the instance must go to FAULT: ErrNoAddress.
	if out, err := a.Command(t.Context(), "ip", "-4", "addr", "flush", "dev", "eth0").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := m.PrimaryIPv4("eth0"); !errors.Is(err, ErrNoAddress) {
		t.Errorf("PrimaryIPv4 without addresses: %v, want ErrNoAddress", err)
	}
}
