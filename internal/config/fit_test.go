package config

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestVIPsBeyondTheAdvert: VIPs beyond what an advertisement carries on the interface's
// MTU (vrrp.AddressesThatFit) are kept as excluded addresses, added but not advertised,
// with one warning at the first of them, as keepalived 2.2.7 does ("Number of VIPs (200)
// exceeds maximum/space available in packet (max 89 addresses) - excess moved to eVIPs",
// seen with 200 IPv6 VIPs at MTU 1500, whose adverts carried 89).
func TestVIPsBeyondTheAdvert(t *testing.T) {
	vips := func(fam Family, n int) string {
		var b strings.Builder
		for i := range n {
			if fam == IPv4 {
				fmt.Fprintf(&b, "10.99.%d.%d/32\n", 1+i/250, 1+i%250)
			} else {
				fmt.Fprintf(&b, "fd00:99::%x/128\n", 0x1000+i)
			}
		}
		return b.String()
	}
	for _, c := range []struct {
		name      string
		fam       Family
		version   string
		n         int
		advertise int
	}{
		{"IPv6 200 VIPs: 89", IPv6, "", 200, 89},
		{"IPv6 89 VIPs: all", IPv6, "", 89, 89},
		{"IPv4 v2 300 VIPs: 255", IPv4, "2", 300, 255},
		{"IPv4 v3 255 VIPs: all", IPv4, "3", 255, 255},
	} {
		t.Run(c.name, func(t *testing.T) {
			ver := ""
			if c.version != "" {
				ver = "version " + c.version + "\n"
			}
			// An interface no host has: keepalived's DEFAULT_MTU, 1500.
			conf := "vrrp_instance A {\ninterface vrrpfit0\nvirtual_router_id 51\n" + ver +
				"virtual_ipaddress {\n" + vips(c.fam, c.n) + "}\n}\n"
			cfg, ws, err := Parse("f.conf", []byte(conf))
			if err != nil {
				t.Fatal(err)
			}
			in := cfg.Instances[0]
			if len(in.VIPs) != c.advertise || len(in.ExcludedVIPs) != c.n-c.advertise {
				t.Fatalf("%d VIPs, %d excluded; want %d and %d", len(in.VIPs), len(in.ExcludedVIPs), c.advertise, c.n-c.advertise)
			}
			var warned []Warning
			for _, w := range ws {
				if strings.Contains(w.Message, "not advertised") {
					warned = append(warned, w)
				}
			}
			if c.n == c.advertise {
				if len(warned) != 0 {
					t.Errorf("warnings %v with every VIP advertised", warned)
				}
				return
			}
			// The VIPs start on line 5 (6 after a version line); the warning names the
			// first one left out.
			if want := fmt.Sprintf("f.conf:%d", 5+boolInt(ver != "")+c.advertise); len(warned) != 1 || warned[0].Pos.String() != want {
				t.Errorf("warnings %v, want one at %s", warned, want)
			}
			if first := in.ExcludedVIPs[0].Prefix.String(); !strings.Contains(vips(c.fam, c.n), first+"\n") ||
				in.VIPs[c.advertise-1].Prefix.String() == first {
				t.Errorf("first excluded %s", first)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestVIPsBeyondTheAdvertMTU: the interface's MTU decides (Options.InterfaceMTU): an
// IPv6 instance of 200 VIPs advertises 76 at 1280 and all of them at 9000.
func TestVIPsBeyondTheAdvertMTU(t *testing.T) {
	for _, c := range []struct {
		mtu, advertise int
	}{{1280, 76}, {1500, 89}, {9000, 200}} {
		d := NewDraft("a", Position{File: "src", Line: 1})
		d.SetInterface("eth0")
		d.SetVRID(1)
		for i := range 200 {
			d.AddVIP(VIP{Prefix: netip.PrefixFrom(netip.MustParseAddr(fmt.Sprintf("fd00:99::%x", 0x1000+i)), 128)})
		}
		mtu := func(ifname string) (int, bool) {
			if ifname != "eth0" {
				t.Errorf("MTU of %q asked for, want eth0", ifname)
			}
			return c.mtu, true
		}
		in, _, err := Resolve(d, DefaultGlobals(), Options{InterfaceMTU: mtu})
		if err != nil {
			t.Fatal(err)
		}
		if len(in.VIPs) != c.advertise || len(in.VIPs)+len(in.ExcludedVIPs) != 200 {
			t.Errorf("MTU %d: %d advertised, %d excluded; want %d advertised", c.mtu, len(in.VIPs), len(in.ExcludedVIPs), c.advertise)
		}
		if want := vrrp.AddressesThatFit(vrrp.Version3, vrrp.IPv6, c.mtu); want < 200 && want != c.advertise {
			t.Errorf("the rule says %d at MTU %d", want, c.mtu)
		}
	}
}

// TestShortVIPListsNeedNoMTU: a list that fits the family's smallest MTU fits any, and the
// interface is not looked up for it (Kubernetes mode resolves every instance on every
// status change).
func TestShortVIPListsNeedNoMTU(t *testing.T) {
	for _, c := range []struct {
		vips []string
		asks bool
	}{
		{[]string{"10.99.0.100/32"}, false},
		{[]string{"10.99.0.100/32", "10.99.0.101/32", "10.99.0.102/32", "10.99.0.103/32", "10.99.0.104/32", "10.99.0.105/32", "10.99.0.106/32"}, true},
	} {
		d := NewDraft("a", Position{File: "src", Line: 1})
		d.SetInterface("eth0")
		d.SetVRID(1)
		for _, v := range c.vips {
			d.AddVIP(VIP{Prefix: netip.MustParsePrefix(v)})
		}
		asked := false
		in, _, err := Resolve(d, DefaultGlobals(), Options{InterfaceMTU: func(string) (int, bool) { asked = true; return 1500, true }})
		if err != nil || len(in.VIPs) != len(c.vips) {
			t.Fatalf("%d VIPs: %v, %d advertised", len(c.vips), err, len(in.VIPs))
		}
		if asked != c.asks {
			t.Errorf("%d IPv4 VIPs: MTU asked for %v, want %v", len(c.vips), asked, c.asks)
		}
	}
}
