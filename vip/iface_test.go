package vip

import (
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
		ip(t, a, args...)
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
