package vrrpd_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestFirewallOutputDrop: an nftables OUTPUT rule that drops VRRP on the master's host
// silences vrrpd by default, as it silences keepalived: its adverts go through the IP
// stack, the keepalived backup stops hearing them and takes over within its
// Master_Down_Interval, and vrrpd counts every refused send
// (vrrpd_advert_send_errors_total; netfilter's drop is EPERM to the sender) and warns of
// it. With --send-on-packet-socket the same rule does not silence it: the adverts leave
// below netfilter and the backup never takes over. That is the bypass the README
// documents for the opt-in, shown here in both families.
func TestFirewallOutputDrop(t *testing.T) {
	keepalivedBinary(t)
	for _, fam := range []struct {
		name string
		vip  netip.Prefix
	}{{"IPv4", vip4}, {"IPv6", vip6}} {
		for _, mode := range []struct {
			name     string
			flags    []string
			silenced bool
		}{
			{"ip-stack (default)", nil, true},
			{"packet-socket", []string{"--send-on-packet-socket"}, false},
			// The old opt-out is accepted, warned of, and changes nothing.
			{"deprecated --send-through-ip-stack", []string{"--send-through-ip-stack"}, true},
		} {
			if fam.name == "IPv6" && mode.flags != nil && mode.flags[0] == "--send-through-ip-stack" {
				continue // once is enough
			}
			t.Run(fam.name+"/"+mode.name, func(t *testing.T) {
				_, _, h1, h2 := newLab(t)
				const interval = 100 * time.Millisecond
				conf := func(prio int) string {
					return "global_defs {\n  vrrp_version 3\n}\n" +
						vrrpInstance("VI_1", 51, prio, "0.1", "", fam.vip.String())
				}
				startKeepalived(t, h2, writeConf(t, "h2.conf", conf(100)))
				v := startVrrpd(t, h1, writeConf(t, "h1.conf", conf(150)), "", mode.flags...)
				waitSoleHolder(t, 10*time.Second, 500*time.Millisecond, fam.vip, h1, h1, h2)

				// The rule, on the master's host only: IP protocol 112 dropped
				// in the OUTPUT hook, both families.
				rules := "table inet t {\n chain o {\n  type filter hook output priority 0;\n  meta l4proto vrrp drop\n }\n}\n"
				nft := h1.Command(t.Context(), "nft", "-f", "-")
				nft.Stdin = strings.NewReader(rules)
				if out, err := nft.CombinedOutput(); err != nil {
					t.Fatalf("nft: %v\n%s", err, out)
				}
				added := time.Now()
				mdi := vrrp.MasterDownInterval(100, interval)
				if mode.silenced {
					// The backup's Master_Down_Interval (0.36 s) plus a margin for a
					// loaded machine.
					vrrpdtest.WaitFor(t, mdi+3*time.Second, "the keepalived backup taking over", func() bool {
						return vrrpdtest.HasAddr(t, h2, fam.vip.Addr())
					})
					t.Logf("keepalived took over %v after the rule (Master_Down_Interval %v)", time.Since(added).Round(time.Millisecond), mdi)
					var errs float64
					vrrpdtest.WaitFor(t, 5*time.Second, "refused sends counted", func() bool {
						errs = metric(v.scrape(t), "vrrpd_advert_send_errors_total", `name="VI_1"`)
						return errs > 0
					})
					vrrpdtest.WaitFor(t, 5*time.Second, "a warning of the refused sends", func() bool {
						return strings.Contains(v.Output(), "advertisement not sent")
					})
					if n := strings.Count(v.Output(), "advertisement not sent"); n > 2 {
						t.Errorf("%d warnings of refused sends within seconds, want them rate-limited", n)
					}
					t.Logf("vrrpd_advert_send_errors_total %v", errs)
					if len(mode.flags) > 0 && !strings.Contains(v.Output(), "--send-through-ip-stack is deprecated") {
						t.Error("no deprecation warning for --send-through-ip-stack")
					}
					return
				}
				// Ten of the backup's Master_Down_Intervals: the master is still heard.
				hold := 10 * mdi
				for end := time.Now().Add(hold); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					if hs := vrrpdtest.Holders(t, fam.vip.Addr(), h1, h2); len(hs) != 1 || hs[0] != h1.Name {
						t.Fatalf("%v held by %v %v after the OUTPUT rule, want %s alone: the packet socket should bypass it",
							fam.vip, hs, time.Since(added).Round(time.Millisecond), h1.Name)
					}
				}
				if errs := metric(v.scrape(t), "vrrpd_advert_send_errors_total", `name="VI_1"`); errs != 0 {
					t.Errorf("vrrpd_advert_send_errors_total %v on the packet socket, want 0", errs)
				}
				t.Logf("%s held %v alone for %v with the OUTPUT rule", h1.Name, fam.vip, hold)
			})
		}
	}
}
