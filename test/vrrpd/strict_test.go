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

// strictConf is keepalived's shipped keepalived.conf in shape (vrrp_strict, state MASTER at
// a priority below 255, PASS authentication, VRRPv2), read by keepalived and vrrpd alike.
func strictConf(router string, prio int) string {
	return fmt.Sprintf(`global_defs {
  router_id %s
  vrrp_strict
}
vrrp_instance VI_1 {
  state MASTER
  interface eth0
  virtual_router_id 71
  priority %d
  advert_int 1
  authentication {
    auth_type PASS
    auth_pass 1111
  }
  virtual_ipaddress {
    10.99.0.100/24
  }
}
`, router, prio)
}

// TestStrictAgainstKeepalived: under vrrp_strict keepalived drops the authentication and
// starts a non-owner as BACKUP whatever its state says. vrrpd, reading the same file, must
// do the same, or the two would disagree on the auth type and both become master. vrrpd
// (priority 150) starts first and takes over; keepalived (priority 100) then follows it and
// never enters MASTER; when vrrpd stops, keepalived takes over.
func TestStrictAgainstKeepalived(t *testing.T) {
	if testing.Short() {
		t.Skip("namespace test: skipped with -short (make unit)")
	}
	vip := netip.MustParsePrefix("10.99.0.100/24")
	lab := netlabtest.New(t, "kh", "vh")
	kh, vh := lab.Host("kh"), lab.Host("vh")
	hosts := []*netlab.Host{kh, vh}

	v := startVrrpd(t, vh, writeConf(t, "vh.conf", strictConf("vh", 150)), "")
	if st := v.instance(t, "VI_1"); st.State != "BACKUP" {
		t.Fatalf("vrrpd starts in %s; strict mode makes a non-owner's MASTER a BACKUP", st.State)
	}
	waitSoleHolder(t, 10*time.Second, 0, vip, vh, hosts...)

	k := startKeepalived(t, kh, writeConf(t, "kh.conf", strictConf("kh", 100)))
	vrrpdtest.WaitFor(t, 10*time.Second, "keepalived following vrrpd", func() bool {
		return strings.Contains(k.Output(), "Entering BACKUP STATE")
	})
	waitSoleHolder(t, 5*time.Second, 4*time.Second, vip, vh, hosts...)
	if n := strings.Count(k.Output(), "Entering MASTER STATE"); n != 0 {
		t.Fatalf("keepalived entered MASTER %d times while vrrpd was master", n)
	}
	if n := metric(v.scrape(t), "keepalived_vrrp_become_master", `name="VI_1"`); n != 1 {
		t.Errorf("vrrpd became master %v times, want 1", n)
	}

	v.MustStop(t) // sends priority 0
	waitSoleHolder(t, 5*time.Second, time.Second, vip, kh, hosts...)
}
