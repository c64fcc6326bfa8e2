package vrrp_test

import (
	"testing"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestAddressesThatFit checks the fitting rule against keepalived 2.2.7's arithmetic
// (vrrp_complete_instance) at the MTUs that matter, and against what keepalived was seen
// to send: 200 IPv6 VIPs at MTU 1500 gave adverts of 89 addresses, 1432 bytes of VRRP.
func TestAddressesThatFit(t *testing.T) {
	for _, c := range []struct {
		name string
		v    vrrp.Version
		f    vrrp.Family
		mtu  int
		want int
	}{
		{"v3 IPv6 1500 (keepalived sends 89)", vrrp.Version3, vrrp.IPv6, 1500, 89},
		{"v3 IPv6 1280, the IPv6 minimum", vrrp.Version3, vrrp.IPv6, 1280, 76},
		{"v3 IPv6 unknown MTU is 1500", vrrp.Version3, vrrp.IPv6, 0, 89},
		{"v3 IPv6 4158: 255 fit exactly", vrrp.Version3, vrrp.IPv6, 62 + 255*16, 255},
		{"v3 IPv6 4157: one short", vrrp.Version3, vrrp.IPv6, 62 + 255*16 - 1, 254},
		{"v3 IPv6 9000: the count byte", vrrp.Version3, vrrp.IPv6, 9000, 255},
		{"v3 IPv4 1500: the count byte", vrrp.Version3, vrrp.IPv4, 1500, 255},
		{"v2 IPv4 1500: the count byte", vrrp.Version2, vrrp.IPv4, 1500, 255},
		{"v3 IPv4 576", vrrp.Version3, vrrp.IPv4, 576, (576 - 42) / 4},
		{"v2 IPv4 576: the auth data", vrrp.Version2, vrrp.IPv4, 576, (576 - 50) / 4},
		{"v3 IPv4 68, the IPv4 minimum", vrrp.Version3, vrrp.IPv4, 68, 6},
		{"v2 IPv4 1069: one short", vrrp.Version2, vrrp.IPv4, 50 + 255*4 - 1, 254},
		{"v2 IPv4 1070", vrrp.Version2, vrrp.IPv4, 50 + 255*4, 255},
		{"v3 IPv4 1062", vrrp.Version3, vrrp.IPv4, 42 + 255*4, 255},
		{"nonsense MTU 30", vrrp.Version3, vrrp.IPv4, 30, 0},
	} {
		if got := vrrp.AddressesThatFit(c.v, c.f, c.mtu); got != c.want {
			t.Errorf("%s: AddressesThatFit = %d, want %d", c.name, got, c.want)
		}
	}
	// What fits really fits: the VRRP message of AddressesThatFit addresses, with its IP
	// header, is within the MTU (the Ethernet header is outside it).
	for _, f := range []vrrp.Family{vrrp.IPv4, vrrp.IPv6} {
		for mtu := 68; mtu <= 9000; mtu++ {
			n := vrrp.AddressesThatFit(vrrp.Version3, f, mtu)
			ip, size := 20, 4
			if f == vrrp.IPv6 {
				ip, size = 40, 16
			}
			if ip+8+n*size > mtu {
				t.Fatalf("%v MTU %d: %d addresses make a %d-byte packet", f, mtu, n, ip+8+n*size)
			}
		}
	}
}
