package vrrpd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// multipathConf is a pair's keepalived.conf whose virtual route has two gateways, in
// keepalived's "via A or B" (its own sample's line).
func multipathConf(prio int) string {
	return "global_defs {\n  vrrp_version 3\n}\n" + vrrpInstance("VI_M", 62, prio, "0.1", `virtual_routes {
  192.0.2.0/24 via 10.99.0.1 or 10.99.0.2
}
`, "10.99.0.101/32")
}

// multipathState is what h has of multipathConf's route: "both" with its two paths,
// "" without it, and otherwise the route as ip shows it.
func multipathState(t testing.TB, h *netlab.Host) string {
	t.Helper()
	out := strings.TrimSpace(ipOut(t, h, "route", "show", "192.0.2.0/24"))
	switch {
	case out == "":
		return ""
	case strings.Contains(out, "proto keepalived") &&
		strings.Contains(out, "nexthop via 10.99.0.1 dev eth0 weight 1") &&
		strings.Contains(out, "nexthop via 10.99.0.2 dev eth0 weight 1") &&
		strings.Count(out, "nexthop") == 2:
		return "both"
	}
	return out
}

// TestMultipathRouteMovesWithMaster: a virtual route with two gateways is one multipath
// route on the master, none on the backup, and moves on failover; vrrpd leaves none
// behind when it stops.
func TestMultipathRouteMovesWithMaster(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", multipathConf(150)), "")
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", multipathConf(100)), "")
	vrrpdtest.WaitFor(t, 10*time.Second, "h1 master with the multipath route, h2 backup without", func() bool {
		return d1.instance(t, "VI_M").State == "MASTER" && multipathState(t, h1) == "both" &&
			d2.instance(t, "VI_M").State == "BACKUP" && multipathState(t, h2) == ""
	})
	d1.MustStop(t)
	vrrpdtest.WaitFor(t, 10*time.Second, "h2 master with the multipath route, h1 without", func() bool {
		return d2.instance(t, "VI_M").State == "MASTER" && multipathState(t, h2) == "both" && multipathState(t, h1) == ""
	})
	d2.MustStop(t)
	if got := multipathState(t, h2); got != "" {
		t.Errorf("h2 keeps the route after vrrpd stopped: %s", got)
	}
}
