package vrrpd_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// TestMetricsListenOnHostAddressOnly: with --metrics-host (the DaemonSet passes the node's
// status.hostIP) the metrics and status endpoint answers on that one address and on no
// other: not on loopback, not on the host's other family, and not on the VIP the daemon
// holds as master, which the Services' clients reach. An IPv6 host address is given
// without brackets, as status.hostIP has none.
func TestMetricsListenOnHostAddressOnly(t *testing.T) {
	_, _, h1, _ := newLab(t)
	conf := writeConf(t, "h1.conf", oneInstanceConf(false, 150))
	for _, tc := range []struct {
		name       string
		host       netip.Addr
		notServing []netip.Addr
	}{
		{"ipv4", h1.Addr4, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback(), h1.Addr6, vip4.Addr()}},
		{"ipv6", h1.Addr6, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback(), h1.Addr4, vip4.Addr()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vrrpdtest.Start(t, h1, "vrrpd@"+h1.Name, nil, vrrpdBinary(t),
				"--config", conf, "--state-dir", vrrpdtest.NewStateDir(t),
				"--metrics-address", ":9650", "--metrics-host", tc.host.String())
			url := "http://" + net.JoinHostPort(tc.host.String(), "9650") + "/healthz"
			client := h1.HTTPClient(time.Second)
			vrrpdtest.WaitFor(t, 10*time.Second, "vrrpd healthy at "+url, func() bool {
				resp, err := client.Get(url)
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == 200
			})
			vrrpdtest.WaitFor(t, 10*time.Second, "h1 master holding the VIP", func() bool { return hasAddr(t, h1, vip4) })
			for _, a := range tc.notServing {
				if connects(t, h1, netip.AddrPortFrom(a, 9650)) {
					t.Errorf("port 9650 answers on %s", a)
				}
			}
			p.MustStop(t)
		})
	}
}

// connects reports whether a TCP connection to ap from inside h succeeds.
func connects(t *testing.T, h *netlab.Host, ap netip.AddrPort) bool {
	t.Helper()
	ok := false
	err := h.Do(func() error {
		c, err := net.DialTimeout("tcp", ap.String(), time.Second)
		if err == nil {
			ok = true
			c.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
