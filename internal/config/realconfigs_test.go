package config

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// The nine configurations keepalived 2.2.7 ran to record the captures in
// testdata/keepalived at the module root: each must load unchanged, with no
// warnings, to exactly these instances.
func TestRealKeepalivedConfigs(t *testing.T) {
	vip := func(s string) VIP { return VIP{Prefix: netip.MustParsePrefix(s), Dev: "eth0"} }
	addr := netip.MustParseAddr
	base := func(name string, vrid, prio uint8, ver vrrp.Version, adv time.Duration, vips ...VIP) Instance {
		fam := IPv4
		mc := vrrp.MulticastIPv4
		if vips[0].Prefix.Addr().Is6() {
			fam, mc = IPv6, vrrp.MulticastIPv6
		}
		return Instance{
			Name: name, Interface: "eth0", Family: fam, VRID: vrid, Priority: prio, Version: ver,
			AdvertInterval: adv, Preempt: true, AcceptMode: true, InitialState: StateBackup,
			MulticastGroup: mc, VIPs: vips, GARP: DefaultGARP(),
		}
	}
	auth := func(in Instance) Instance {
		in.AuthType, in.AuthPass = vrrp.AuthSimple, "secret1"
		return in
	}
	unicast := func(in Instance, src, peer string) Instance {
		in.UnicastSrc, in.UnicastPeers = addr(src), []netip.Addr{addr(peer)}
		return in
	}
	garp := func(in Instance) Instance {
		in.GARP.MasterDelay, in.GARP.MasterRepeat = time.Second, 2
		return in
	}
	tests := []struct {
		file     string
		routerID string
		want     []Instance
	}{
		{"garp-na-h1.conf", "h1", []Instance{
			garp(base("V4", 61, 150, 3, 100*time.Millisecond, vip("10.99.0.150/24"))),
			garp(base("V6", 62, 150, 3, 100*time.Millisecond, vip("fd00:99::150/64"))),
		}},
		{"v2-auth-h1.conf", "h1", []Instance{auth(base("VI_1", 51, 100, 2, time.Second, vip("10.99.0.100/24")))}},
		{"v2-auth-h2.conf", "h2", []Instance{auth(base("VI_1", 51, 150, 2, time.Second, vip("10.99.0.100/24")))}},
		{"v3-ipv4-h1.conf", "h1", []Instance{base("VI_1", 51, 100, 3, 50*time.Millisecond, vip("10.99.0.100/24"), vip("10.99.0.101/24"))}},
		{"v3-ipv4-h2.conf", "h2", []Instance{base("VI_1", 51, 150, 3, 50*time.Millisecond, vip("10.99.0.100/24"), vip("10.99.0.101/24"))}},
		{"v3-ipv6-h1.conf", "h1", []Instance{base("VI_6", 52, 100, 3, 100*time.Millisecond, vip("fd00:99::100/64"))}},
		{"v3-ipv6-h2.conf", "h2", []Instance{base("VI_6", 52, 150, 3, 100*time.Millisecond, vip("fd00:99::100/64"))}},
		{"v3-unicast-h1.conf", "h1", []Instance{unicast(base("VI_1", 51, 100, 3, 100*time.Millisecond, vip("10.99.0.100/24")), "10.99.0.11", "10.99.0.12")}},
		{"v3-unicast-h2.conf", "h2", []Instance{unicast(base("VI_1", 51, 150, 3, 100*time.Millisecond, vip("10.99.0.100/24")), "10.99.0.12", "10.99.0.11")}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := fixture.Keepalived(tt.file)
			cfg, ws, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(ws) > 0 {
				t.Errorf("warnings: %v", ws)
			}
			if cfg.RouterID != tt.routerID {
				t.Errorf("RouterID = %q, want %q", cfg.RouterID, tt.routerID)
			}
			if len(cfg.Instances) != len(tt.want) {
				t.Fatalf("got %d instances, want %d", len(cfg.Instances), len(tt.want))
			}
			for i, got := range cfg.Instances {
				if !got.Equal(tt.want[i]) {
					t.Errorf("instance %d:\n got %+v\nwant %+v", i, got, tt.want[i])
				}
				if got.Source.File != path || got.Source.Line < 4 {
					t.Errorf("instance %d: Source = %v", i, got.Source)
				}
			}
			if len(cfg.Files) != 1 || cfg.Files[0] != path {
				t.Errorf("Files = %v", cfg.Files)
			}
		})
	}
}
