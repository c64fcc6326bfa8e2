package vip

import (
	"net"
	"testing"
)

// TestVirtualMAC: RFC 5798 §7.3's addresses.
func TestVirtualMAC(t *testing.T) {
	if got := VirtualMAC(false, 51).String(); got != "00:00:5e:00:01:33" {
		t.Errorf("IPv4 VRID 51: %s", got)
	}
	if got := VirtualMAC(true, 255).String(); got != "00:00:5e:00:02:ff" {
		t.Errorf("IPv6 VRID 255: %s", got)
	}
}

// TestVMACName: keepalived's default names and what it tries when a name is taken.
func TestVMACName(t *testing.T) {
	takenSet := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, x := range names {
				if x == n {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		ipv6  bool
		taken []string
		want  string
	}{
		{false, nil, "vrrp.51"},
		{true, nil, "vrrp.51"},
		{false, []string{"vrrp.51"}, "vrrp1.51"},
		{false, []string{"vrrp.51", "vrrp1.51"}, "vrrp2.51"},
		{true, []string{"vrrp.51"}, "vrrp6.51"},
		{true, []string{"vrrp.51", "vrrp6.51"}, "vrrp1.51"},
		{true, []string{"vrrp.51", "vrrp6.51", "vrrp1.51", "vrrp2.51", "vrrp3.51", "vrrp4.51", "vrrp5.51"}, "vrrp7.51"},
	}
	for _, c := range cases {
		if got := VMACName(c.ipv6, 51, takenSet(c.taken...)); got != c.want {
			t.Errorf("ipv6 %v, taken %v: %s, want %s", c.ipv6, c.taken, got, c.want)
		}
	}
	if got := VMACName(false, 7, nil); got != "vrrp.7" {
		t.Errorf("nil taken: %s", got)
	}
}

func TestVMACUpArgs(t *testing.T) {
	v := NewVMACs(nil)
	for _, m := range []VMAC{{Parent: "eth0", MAC: VirtualMAC(false, 1)}, {Name: "x", MAC: VirtualMAC(false, 1)}, {Name: "x", Parent: "eth0", MAC: net.HardwareAddr{1}}} {
		if _, err := v.Up(m); err == nil {
			t.Errorf("Up(%+v) accepted", m)
		}
	}
}
