package vrrpd_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// v2SkewConf is a keepalived.conf (read by keepalived and by vrrpd alike) for one VRRPv2
// instance at advert_int 3, where RFC 3768's Skew_Time, (256 - Priority)/256 s, differs
// most from a v3-style one scaled by the interval.
func v2SkewConf(router string, prio int, state string) string {
	return fmt.Sprintf(`global_defs { router_id %s
 vrrp_version 2
}
vrrp_instance VI_1 {
  state %s
  interface eth0
  virtual_router_id 61
  priority %d
  advert_int 3
  authentication {
    auth_type PASS
    auth_pass skew
  }
  virtual_ipaddress {
    10.99.0.100/24
  }
}
`, router, state, prio)
}

// TestV2SkewAgainstKeepalived runs three VRRPv2 routers at advert_int 3 on one segment: a
// keepalived master (priority 200), and two backups, one keepalived and one vrrpd. When the
// master goes, the higher-priority backup must take over and the other must never enter
// MASTER: no double transition. Both backups time out on Skew_Time (after the master's
// priority 0, when keepalived is killed and its VRRP child shuts down) or on
// Master_Down_Interval (when the master's link is cut), and only an equal formula on both
// sides orders them by priority.
//
// vrrpd between the two keepalived priorities is the arrangement that catches a v3-style
// skew in vrrpd: at priority 150 it would wait 1.24 s (10.24 s) where keepalived's priority
// 100 waits 0.61 s (9.61 s), so keepalived would take over first and then be preempted.
func TestV2SkewAgainstKeepalived(t *testing.T) {
	vip := netip.MustParsePrefix("10.99.0.100/24")
	for _, arr := range []struct {
		name           string
		vrrpdPrio      int
		keepalivedPrio int
	}{
		{"vrrpd-100-below-keepalived-150", 100, 150},
		{"vrrpd-150-above-keepalived-100", 150, 100},
	} {
		for _, failure := range []string{"kill", "cut"} {
			t.Run(arr.name+"/"+failure, func(t *testing.T) {
				if testing.Short() {
					t.Skip("namespace test: skipped with -short (make unit)")
				}
				lab := netlabtest.New(t, "master", "kbackup", "vbackup")
				master, kb, vb := lab.Host("master"), lab.Host("kbackup"), lab.Host("vbackup")
				backups := []*netlab.Host{kb, vb}

				m := startKeepalived(t, master, writeConf(t, "master.conf", v2SkewConf("master", 200, "MASTER")))
				waitSoleHolder(t, 10*time.Second, 0, vip, master, master, kb, vb)
				k := startKeepalived(t, kb, writeConf(t, "kbackup.conf", v2SkewConf("kbackup", arr.keepalivedPrio, "BACKUP")))
				v := startVrrpd(t, vb, writeConf(t, "vbackup.conf", v2SkewConf("vbackup", arr.vrrpdPrio, "BACKUP")), "")
				// Both backups have heard the master once its next advertisement is in.
				vrrpdtest.WaitFor(t, 8*time.Second, "vrrpd following the master", func() bool {
					in := v.instance(t, "VI_1")
					return in.State == "BACKUP" && in.Master == master.Addr4.String()
				})
				if got := vrrpdtest.Holders(t, vip.Addr(), backups...); len(got) != 0 {
					t.Fatalf("backups %v hold the VIP before the failure", got)
				}

				switch failure {
				case "kill":
					m.Kill() // its VRRP child sends priority 0 as it goes
				case "cut":
					cut(t, master) // silent: the backups wait Master_Down_Interval
				}
				winner, loser := kb, vb
				if arr.vrrpdPrio > arr.keepalivedPrio {
					winner, loser = vb, kb
				}
				waitSoleHolder(t, 15*time.Second, 3*time.Second, vip, winner, backups...)

				if n := metric(v.scrape(t), "keepalived_vrrp_become_master", `name="VI_1"`); (winner == vb) != (n == 1) || n > 1 {
					t.Errorf("vrrpd (priority %d) became master %v times", arr.vrrpdPrio, n)
				}
				entered := strings.Count(k.Output(), "Entering MASTER STATE")
				if (winner == kb) != (entered == 1) || entered > 1 {
					t.Errorf("keepalived (priority %d) entered MASTER %d times", arr.keepalivedPrio, entered)
				}
				if st := v.instance(t, "VI_1"); (winner == vb) != (st.State == "MASTER") {
					t.Errorf("vrrpd in %s with %s the winner", st.State, winner.Name)
				}
				t.Logf("%s: %s took over, %s stayed backup", failure, winner.Name, loser.Name)
			})
		}
	}
}
