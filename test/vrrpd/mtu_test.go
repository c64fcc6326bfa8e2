package vrrpd_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// TestManyIPv6VIPsAtMTU1500: an IPv6 instance of 200 VIPs on an interface of MTU 1500
// (the lab's) is settled at load as keepalived 2.2.7 settles it: 89 addresses in the
// advert, the other 111 added on MASTER but not advertised, one warning naming the
// file:line of the first one left out. Between two vrrpd, and between vrrpd and
// keepalived (which drops a VRRPv3 advert whose address list differs from its own, so
// carrying any other number would make it a second master), there is exactly one
// master, no advert fails to go out (vrrpd_advert_send_errors_total stays 0: before, every
// advert of 91 or more IPv6 VIPs failed with EMSGSIZE), the backup stays backup and
// counts no address-list error.
func TestManyIPv6VIPsAtMTU1500(t *testing.T) {
	const n, advertised = 200, 89
	var vips []string
	for i := range n {
		vips = append(vips, fmt.Sprintf("fd00:99::2:%x/64", i+1))
	}
	conf := func(prio int) string {
		return "global_defs {\n  vrrp_version 3\n}\n" + vrrpInstance("VI_1", 61, prio, "0.1", "", vips...)
	}
	for _, peer := range []string{"vrrpd", "keepalived"} {
		t.Run("backup "+peer, func(t *testing.T) {
			if peer == "keepalived" {
				keepalivedBinary(t)
			}
			_, _, h1, h2 := newLab(t)
			var backup *vrrpd
			if peer == "vrrpd" {
				backup = startVrrpd(t, h2, writeConf(t, "h2.conf", conf(100)), "")
			} else {
				startKeepalived(t, h2, writeConf(t, "h2.conf", conf(100)))
			}
			master := startVrrpd(t, h1, writeConf(t, "h1.conf", conf(150)), "")
			first, last := netip.MustParsePrefix(vips[0]), netip.MustParsePrefix(vips[n-1])
			waitSoleHolder(t, 15*time.Second, 500*time.Millisecond, first, h1, h1, h2)
			// The excluded ones are added on MASTER too.
			waitSoleHolder(t, 5*time.Second, 0, last, h1, h1, h2)

			if out := master.Output(); !strings.Contains(out, "not advertised") || !strings.Contains(out, fmt.Sprintf("h1.conf:%d", 11+advertised)) {
				t.Errorf("no warning at h1.conf:%d (the first VIP left out of the advert):\n%s", 11+advertised, out)
			}
			if st := master.instance(t, "VI_1"); st.State != "MASTER" || len(st.VIPs) != advertised {
				t.Fatalf("h1's VI_1 %s advertising %d VIPs, want MASTER and %d", st.State, len(st.VIPs), advertised)
			}
			// Some seconds of a steady pair: the backup hears every advert and stays.
			var settled uint64
			if backup != nil {
				settled = backup.instance(t, "VI_1").Transitions
			}
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				for _, p := range []netip.Prefix{first, last} {
					if hs := vrrpdtest.Holders(t, p.Addr(), h1, h2); len(hs) != 1 || hs[0] != h1.Name {
						t.Fatalf("%v held by %v, want %s alone", p, hs, h1.Name)
					}
				}
			}
			samples := master.scrape(t)
			if errs := metric(samples, "vrrpd_advert_send_errors_total", `name="VI_1"`); errs != 0 {
				t.Errorf("master: vrrpd_advert_send_errors_total %v, want 0", errs)
			}
			if sent := metric(samples, "keepalived_vrrp_advert_sent", `name="VI_1"`); sent < 20 {
				t.Errorf("master sent %v adverts, want one every 100 ms", sent)
			}
			if backup == nil {
				return
			}
			st := backup.instance(t, "VI_1")
			if st.State != "BACKUP" || st.Transitions != settled || st.Counters["addr_list_err"] != 0 || st.Counters["advert_rcvd"] < 20 {
				t.Errorf("backup: %s, %d transitions (%d when settled), addr_list_err %d, advert_rcvd %d; want BACKUP all along, no address-list error, adverts heard",
					st.State, st.Transitions, settled, st.Counters["addr_list_err"], st.Counters["advert_rcvd"])
			}
			if errs := metric(backup.scrape(t), "vrrpd_advert_send_errors_total", `name="VI_1"`); errs != 0 {
				t.Errorf("backup: vrrpd_advert_send_errors_total %v, want 0", errs)
			}
		})
	}
}

// TestMTULoweredAtRuntime: an MTU lowered under a running master (1500 to 1280 with 89
// IPv6 VIPs advertised, a 1472-byte packet) is never a silent mute master. vrrpd warns
// that its adverts exceed the MTU; through the IP stack (the default) they are fragmented
// and the backup, which reassembles them, stays backup; on the packet socket they are
// refused (EMSGSIZE), every refusal counted in vrrpd_advert_send_errors_total and warned
// of, and the backup takes over, as it must from a master it no longer hears.
func TestMTULoweredAtRuntime(t *testing.T) {
	var vips []string
	for i := range 89 {
		vips = append(vips, fmt.Sprintf("fd00:99::3:%x/64", i+1))
	}
	conf := func(prio int) string {
		return "global_defs {\n  vrrp_version 3\n}\n" + vrrpInstance("VI_1", 62, prio, "0.1", "", vips...)
	}
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"ip-stack (default)", nil}, {"packet-socket", []string{"--send-on-packet-socket"}}} {
		t.Run(mode.name, func(t *testing.T) {
			_, _, h1, h2 := newLab(t)
			backup := startVrrpd(t, h2, writeConf(t, "h2.conf", conf(100)), "")
			master := startVrrpd(t, h1, writeConf(t, "h1.conf", conf(150)), "", mode.flags...)
			first := netip.MustParsePrefix(vips[0])
			waitSoleHolder(t, 15*time.Second, 500*time.Millisecond, first, h1, h1, h2)
			if out, err := h1.Command(t.Context(), "ip", "link", "set", "dev", h1.Link, "mtu", "1280").CombinedOutput(); err != nil {
				t.Fatalf("ip link set mtu: %v\n%s", err, out)
			}
			vrrpdtest.WaitFor(t, 15*time.Second, "the warning that the adverts exceed the MTU", func() bool {
				return strings.Contains(master.Output(), "exceed the interface's MTU")
			})
			if mode.flags == nil {
				settled := backup.instance(t, "VI_1").Transitions
				for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
					if hs := vrrpdtest.Holders(t, first.Addr(), h1, h2); len(hs) != 1 || hs[0] != h1.Name {
						t.Fatalf("%v held by %v after the MTU change, want %s alone: fragmented adverts should still be heard", first, hs, h1.Name)
					}
				}
				if st := backup.instance(t, "VI_1"); st.State != "BACKUP" || st.Transitions != settled {
					t.Errorf("backup %s, %d transitions (%d before), want BACKUP throughout", st.State, st.Transitions, settled)
				}
				if errs := metric(master.scrape(t), "vrrpd_advert_send_errors_total", `name="VI_1"`); errs != 0 {
					t.Errorf("vrrpd_advert_send_errors_total %v through the IP stack, want 0", errs)
				}
				return
			}
			vrrpdtest.WaitFor(t, 10*time.Second, "the backup taking over from the muted master", func() bool {
				return vrrpdtest.HasAddr(t, h2, first.Addr())
			})
			// Counters are published within 500 ms of changing, and the backup may take
			// over sooner (3.6 intervals of 100 ms after the first refused advert): wait.
			vrrpdtest.WaitFor(t, 5*time.Second, "vrrpd_advert_send_errors_total above 0 with every advert refused", func() bool {
				return metric(master.scrape(t), "vrrpd_advert_send_errors_total", `name="VI_1"`) > 0
			})
			if out := master.Output(); !strings.Contains(out, "advertisement not sent") || !strings.Contains(out, "EMSGSIZE") {
				t.Errorf("no warning of the refused adverts with their errno:\n%s", out)
			}
		})
	}
}
