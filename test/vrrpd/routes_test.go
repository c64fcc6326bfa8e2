package vrrpd_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// routesVIP is the VIP of the routing tests; the virtual route uses it as its src.
var routesVIP = netip.MustParsePrefix("10.99.0.100/32")

// routesConf is a pair's keepalived.conf with virtual and static routes and rules.
func routesConf(prio int) string {
	return `global_defs {
  vrrp_version 3
}
static_routes {
  203.0.113.0/24 dev eth0 table 200
}
static_rules {
  to 203.0.113.0/24 table 200 priority 2000
}
` + vrrpInstance("VI_R", 61, prio, "0.1", `virtual_routes {
  192.0.2.0/24 via 10.99.0.1 dev eth0
  src 10.99.0.100 to 198.51.100.0/24 dev eth0
  blackhole 198.18.0.0/15
}
virtual_rules {
  from 10.99.0.100 table 100 priority 1000
}
`, routesVIP.String())
}

// ipOut runs ip inside h and returns its output.
func ipOut(t testing.TB, h *netlab.Host, args ...string) string {
	t.Helper()
	out, err := h.Command(context.Background(), "ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s in %s: %v: %s", strings.Join(args, " "), h.Name, err, out)
	}
	return string(out)
}

// virtualState is which of routesConf's virtual entries h has, in one string:
// "192 198 blackhole rule" for all of them.
func virtualState(t testing.TB, h *netlab.Host) string {
	t.Helper()
	routes := ipOut(t, h, "route", "show")
	rules := ipOut(t, h, "rule", "show")
	var got []string
	if strings.Contains(routes, "192.0.2.0/24 via 10.99.0.1 dev eth0") {
		got = append(got, "192")
	}
	if strings.Contains(routes, "198.51.100.0/24 dev eth0") && strings.Contains(routes, "src 10.99.0.100") {
		got = append(got, "198")
	}
	if strings.Contains(routes, "blackhole 198.18.0.0/15") {
		got = append(got, "blackhole")
	}
	if strings.Contains(rules, "from 10.99.0.100 lookup 100") {
		got = append(got, "rule")
	}
	return strings.Join(got, " ")
}

const allVirtual = "192 198 blackhole rule"

// hasStatic reports whether h has both static entries.
func hasStatic(t testing.TB, h *netlab.Host) bool {
	t.Helper()
	return strings.Contains(ipOut(t, h, "route", "show", "table", "200"), "203.0.113.0/24 dev eth0") &&
		strings.Contains(ipOut(t, h, "rule", "show"), "2000:\tfrom all to 203.0.113.0/24 lookup 200")
}

// TestVirtualRoutesMoveWithMaster: the virtual routes and rules are on the master only and
// move with it on failover; the static ones are on both all along, and leave a host when
// its vrrpd stops.
func TestVirtualRoutesMoveWithMaster(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", routesConf(150)), "")
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", routesConf(100)), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 master with its virtual routes, h2 without", func() bool {
		return d1.instance(t, "VI_R").State == "MASTER" && virtualState(t, h1) == allVirtual &&
			d2.instance(t, "VI_R").State == "BACKUP" && virtualState(t, h2) == ""
	})
	if !hasStatic(t, h1) || !hasStatic(t, h2) {
		t.Fatalf("static entries: h1 %v, h2 %v; want both", hasStatic(t, h1), hasStatic(t, h2))
	}
	d1.MustStop(t)
	vrrpdtest.WaitFor(t, 3*time.Second, "h2 master with the virtual routes, h1 without", func() bool {
		return d2.instance(t, "VI_R").State == "MASTER" && virtualState(t, h2) == allVirtual && virtualState(t, h1) == ""
	})
	if hasStatic(t, h1) || !hasStatic(t, h2) {
		t.Errorf("static entries after h1 stopped: h1 %v (want gone), h2 %v (want there)", hasStatic(t, h1), hasStatic(t, h2))
	}
	if out := ipOut(t, h1, "route", "show", "table", "all", "proto", "keepalived"); strings.TrimSpace(out) != "" {
		t.Errorf("h1 keeps routes of vrrpd's protocol after stopping:\n%s", out)
	}
}

// TestPreexistingRouteSurvives: a route identical to a virtual route, there before vrrpd,
// is neither taken nor removed: not when the instance leaves MASTER, not when vrrpd stops.
func TestPreexistingRouteSurvives(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	ipIn(t, h1, "route", "add", "192.0.2.0/24", "via", "10.99.0.1", "dev", "eth0")
	ipIn(t, h1, "rule", "add", "from", "10.99.0.100", "table", "100", "priority", "1000")
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", routesConf(150)), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 master with its routes", func() bool {
		return d1.instance(t, "VI_R").State == "MASTER" && virtualState(t, h1) == allVirtual
	})
	if !strings.Contains(d1.Output(), "was not added by vrrpd") {
		t.Error("no warning about the route that was there already")
	}
	startVrrpd(t, h2, writeConf(t, "h2.conf", routesConf(200)), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 backup, with only the preexisting route and rule", func() bool {
		return d1.instance(t, "VI_R").State == "BACKUP" && virtualState(t, h1) == "192 rule"
	})
	d1.MustStop(t)
	if got := virtualState(t, h1); got != "192 rule" {
		t.Errorf("after vrrpd stopped h1 has %q, want the preexisting route and rule (192 rule)", got)
	}
}

// TestKill9LeavesNoRoutes: a master killed with SIGKILL leaves its routes behind; the
// vrrpd that replaces it (same state directory) removes them before it joins as a backup.
func TestKill9LeavesNoRoutes(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	state := vrrpdtest.NewStateDir(t)
	conf1 := writeConf(t, "h1.conf", routesConf(150))
	d1 := startVrrpd(t, h1, conf1, state)
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 master with its routes", func() bool {
		return d1.instance(t, "VI_R").State == "MASTER" && virtualState(t, h1) == allVirtual && hasStatic(t, h1)
	})
	d1.Kill()
	if err := d1.Wait(5 * time.Second); err == nil {
		t.Log("vrrpd exited cleanly after SIGKILL?")
	}
	if got := virtualState(t, h1); got != allVirtual {
		t.Fatalf("after kill -9 h1 has %q: the crash should have left everything (test premise)", got)
	}
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", routesConf(200)), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h2 master", func() bool { return d2.instance(t, "VI_R").State == "MASTER" })
	r1 := startVrrpd(t, h1, conf1, state)
	vrrpdtest.WaitFor(t, 3*time.Second, "restarted h1 backup without the virtual routes, with the static ones", func() bool {
		return r1.instance(t, "VI_R").State == "BACKUP" && virtualState(t, h1) == "" && hasStatic(t, h1)
	})
	if !strings.Contains(r1.Output(), "removed stale route left by a previous run") {
		t.Error("the restarted vrrpd did not log the routes it recovered")
	}
}

// TestNetNamespace: vrrpd started in one namespace with net_namespace naming another runs
// its instance there: the VIP and /status are in the named namespace.
func TestNetNamespace(t *testing.T) {
	_, client, h1, _ := newLab(t)
	conf := "global_defs {\n  vrrp_version 3\n  net_namespace " + h1.Netns + "\n}\n" +
		vrrpInstance("VI_N", 62, 150, "0.1", "", routesVIP.String())
	p := vrrpdtest.Start(t, client, "vrrpd@"+client.Name, nil, vrrpdBinary(t),
		"--config", writeConf(t, "ns.conf", conf), "--state-dir", vrrpdtest.NewStateDir(t),
		"--metrics-address", vrrpdtest.MetricsAddress, "--log-level", "debug")
	vrrpdtest.WaitServing(t, h1, p.Name) // /status answers in h1's namespace
	vrrpdtest.WaitFor(t, 3*time.Second, "the VIP on h1, not on client", func() bool {
		return hasAddr(t, h1, routesVIP) && !hasAddr(t, client, routesVIP)
	})
	if _, err := vrrpdtest.Status(client); err == nil {
		t.Error("/status answers in the namespace vrrpd was started in")
	}
	if !strings.Contains(p.Output(), "running in network namespace") {
		t.Error("no log line about the namespace")
	}
}
