package vrrpd_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
)

// daemonKind starts either vrrpd or keepalived with a config and stops it gracefully.
type daemonKind struct {
	name  string
	start func(t testing.TB, h *netlab.Host, conf string) *proc
}

var (
	vrrpdKind = daemonKind{"vrrpd", func(t testing.TB, h *netlab.Host, conf string) *proc {
		return startVrrpd(t, h, conf, "").proc
	}}
	keepalivedKind = daemonKind{"keepalived", startKeepalived}
)

// TestKeepalivedInterop runs vrrpd and the real keepalived 2.2.7 in one virtual router, with
// keepalived's own configuration files used unchanged by both, for VRRPv2 with PASS auth,
// VRRPv3 over IPv4, over IPv6 and unicast. Each side is in turn the higher-priority router
// (h2's config, priority 150): it wins the election, a graceful stop hands the VIP to the
// other side, and its restart takes the VIP back. After every step exactly one host holds
// the VIP.
func TestKeepalivedInterop(t *testing.T) {
	cases := []struct {
		name string
		conf string // testdata/keepalived/<conf>-h1.conf (priority 100) and -h2.conf (priority 150)
		vips []netip.Prefix
		// timeout covers Master_Down_Interval plus startup.
		timeout time.Duration
	}{
		{"v2-auth", "v2-auth", []netip.Prefix{vip4}, 10 * time.Second},
		{"v3-ipv4", "v3-ipv4", []netip.Prefix{vip4, netip.MustParsePrefix("10.99.0.101/24")}, 5 * time.Second},
		{"v3-ipv6", "v3-ipv6", []netip.Prefix{vip6}, 5 * time.Second},
		{"v3-unicast", "v3-unicast", []netip.Prefix{vip4}, 5 * time.Second},
	}
	for _, tc := range cases {
		for _, high := range []daemonKind{vrrpdKind, keepalivedKind} {
			low := keepalivedKind
			if high.name == "keepalived" {
				low = vrrpdKind
			}
			t.Run(tc.name+"/"+high.name+"-high", func(t *testing.T) {
				_, _, h1, h2 := newLab(t)
				hosts := []*netlab.Host{h1, h2}
				conf1 := fixture.Keepalived(tc.conf + "-h1.conf")
				conf2 := fixture.Keepalived(tc.conf + "-h2.conf")
				settle := 500 * time.Millisecond

				low.start(t, h1, conf1)
				hi := high.start(t, h2, conf2)
				for _, v := range tc.vips {
					waitSoleHolder(t, tc.timeout, settle, v, h2, hosts...)
				}
				t.Logf("%s (priority 150) is master", high.name)

				hi.MustStop(t)
				for _, v := range tc.vips {
					waitSoleHolder(t, tc.timeout, settle, v, h1, hosts...)
				}
				t.Logf("%s stopped: %s (priority 100) took over", high.name, low.name)

				high.start(t, h2, conf2)
				for _, v := range tc.vips {
					waitSoleHolder(t, tc.timeout, settle, v, h2, hosts...)
				}
				t.Logf("%s restarted and preempted %s", high.name, low.name)
			})
		}
	}
}
