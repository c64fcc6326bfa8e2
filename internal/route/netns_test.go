package route

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

func newLabHost(t *testing.T) *netlab.Host {
	t.Helper()
	if testing.Short() {
		t.Skip("namespace test: skipped with -short")
	}
	return netlabtest.New(t, "a").Host("a")
}

func newManager(t *testing.T, h *netlab.Host, dir string) *Manager {
	t.Helper()
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nh.Close)
	m, err := open(dir, nh)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ip runs ip with args inside h and returns its output.
func ip(t *testing.T, h *netlab.Host, args ...string) string {
	t.Helper()
	out, err := h.Command(context.Background(), "ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var (
	gwRoute  = Route{Dst: netip.MustParsePrefix("192.0.2.0/24"), Via: netip.MustParsePrefix("10.99.0.1/32").Addr(), Dev: "eth0", Protocol: Protocol}
	tblRoute = Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Via: netip.MustParsePrefix("10.99.0.1/32").Addr(), Table: 100, Protocol: Protocol}
	v6Route  = Route{Dst: netip.MustParsePrefix("2001:db8::/48"), Dev: "eth0", Protocol: Protocol}
	bhRoute  = Route{Dst: netip.MustParsePrefix("198.51.100.0/24"), Type: TypeBlackhole, Protocol: Protocol}
	// mpRoute and mp6Route are multipath routes (keepalived's "via A or B").
	mpRoute = Route{Dst: netip.MustParsePrefix("203.0.113.0/24"), Protocol: Protocol, Nexthops: NewNexthops(
		Nexthop{Via: netip.MustParseAddr("10.99.0.1"), Dev: "eth0"}, Nexthop{Via: netip.MustParseAddr("10.99.0.2"), Dev: "eth0"})}
	mp6Route = Route{Dst: netip.MustParsePrefix("2001:db8:1::/48"), Protocol: Protocol, Nexthops: NewNexthops(
		Nexthop{Via: netip.MustParseAddr("fd00:99::1"), Weight: 3}, Nexthop{Via: netip.MustParseAddr("fd00:99::2"), Dev: "eth0", OnLink: true})}
	fromRule = Rule{From: netip.MustParsePrefix("10.99.0.100/32"), Table: 100, Priority: 1000, HasPriority: true, Protocol: Protocol}
	markRule = Rule{HasMark: true, Mark: 7, Type: TypeProhibit, Protocol: Protocol}
)

func TestHoldReleaseAndRecordInNamespace(t *testing.T) {
	h := newLabHost(t)
	dir := t.TempDir()
	m := newManager(t, h, dir)
	routes := []Route{gwRoute, tblRoute, v6Route, bhRoute}
	rules := []Rule{fromRule, markRule}
	fr, fu, err := m.Hold("VI_1", routes, rules)
	if err != nil || len(fr)+len(fu) > 0 {
		t.Fatalf("Hold: foreign %v %v, err %v", fr, fu, err)
	}
	main := ip(t, h, "route", "show", "proto", "18")
	for _, want := range []string{"192.0.2.0/24 via 10.99.0.1 dev eth0", "blackhole 198.51.100.0/24"} {
		if !strings.Contains(main, want) {
			t.Errorf("main table lacks %q:\n%s", want, main)
		}
	}
	if out := ip(t, h, "route", "show", "table", "100"); !strings.Contains(out, "default via 10.99.0.1") {
		t.Errorf("table 100 lacks the default route:\n%s", out)
	}
	if out := ip(t, h, "-6", "route", "show", "proto", "18"); !strings.Contains(out, "2001:db8::/48 dev eth0") {
		t.Errorf("no IPv6 route:\n%s", out)
	}
	rulesOut := ip(t, h, "rule", "show")
	for _, want := range []string{"1000:\tfrom 10.99.0.100 lookup 100 proto keepalived", "fwmark 0x7 prohibit"} {
		if !strings.Contains(rulesOut, want) {
			t.Errorf("rules lack %q:\n%s", want, rulesOut)
		}
	}
	rec, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil || !strings.Contains(string(rec), "192.0.2.0/24") {
		t.Fatalf("record %s, %v", rec, err)
	}

	// A second holder keeps them when the first lets go.
	if _, _, err := m.Hold("VI_2", routes[:1], nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Release("VI_1", routes, rules); err != nil {
		t.Fatal(err)
	}
	if out := ip(t, h, "route", "show", "proto", "18"); !strings.Contains(out, "192.0.2.0/24") || strings.Contains(out, "198.51.100.0") {
		t.Errorf("after VI_1 let go, want only VI_2's route:\n%s", out)
	}
	if out := ip(t, h, "rule", "show"); strings.Contains(out, "lookup 100") || strings.Contains(out, "prohibit") {
		t.Errorf("rules left after release:\n%s", out)
	}
	if err := m.Release("VI_2", routes[:1], nil); err != nil {
		t.Fatal(err)
	}
	if out := ip(t, h, "route", "show", "proto", "18"); out != "" {
		t.Errorf("routes left after the last holder let go:\n%s", out)
	}
	if rs, us := m.Recorded(); len(rs)+len(us) > 0 {
		t.Errorf("record still holds %v %v", rs, us)
	}
}

// A route or rule that is in the kernel before vrrpd is foreign: not recorded, and not
// removed when the holder lets go, nor by recovery.
func TestForeignEntriesAreNeverRemoved(t *testing.T) {
	h := newLabHost(t)
	dir := t.TempDir()
	ip(t, h, "route", "add", "192.0.2.0/24", "via", "10.99.0.1", "dev", "eth0")
	ip(t, h, "rule", "add", "from", "10.99.0.100/32", "table", "100", "pref", "1000")
	m := newManager(t, h, dir)
	fr, fu, err := m.Hold("VI_1", []Route{gwRoute}, []Rule{fromRule})
	if err != nil {
		t.Fatal(err)
	}
	if len(fr) != 1 || len(fu) != 1 {
		t.Fatalf("foreign routes %v rules %v, want one each", fr, fu)
	}
	if err := m.Release("VI_1", []Route{gwRoute}, []Rule{fromRule}); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, h, dir)
	if _, _, err := m2.Recover(); err != nil {
		t.Fatal(err)
	}
	if out := ip(t, h, "route", "show"); !strings.Contains(out, "192.0.2.0/24 via 10.99.0.1") {
		t.Errorf("the operator's route went:\n%s", out)
	}
	if out := ip(t, h, "rule", "show"); !strings.Contains(out, "from 10.99.0.100 lookup 100") {
		t.Errorf("the operator's rule went:\n%s", out)
	}
}

// After a crash (the Manager dropped without Release), a new Manager on the same state
// directory removes what the old one added, and only that.
func TestRecoverRemovesWhatACrashedRunAdded(t *testing.T) {
	h := newLabHost(t)
	dir := t.TempDir()
	other := "203.0.113.0/24"
	ip(t, h, "route", "add", other, "via", "10.99.0.1", "proto", "18")
	m := newManager(t, h, dir)
	if _, _, err := m.Hold("VI_1", []Route{gwRoute, v6Route}, []Rule{markRule}); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, h, dir) // the restarted daemon
	routes, rules, err := m2.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 2 || len(rules) != 1 {
		t.Errorf("recovered %v %v, want 2 routes and 1 rule", routes, rules)
	}
	out := ip(t, h, "route", "show", "proto", "18")
	if strings.Contains(out, "192.0.2.0") || !strings.Contains(out, other) {
		t.Errorf("after recovery want only the route vrrpd did not add:\n%s", out)
	}
	if out := ip(t, h, "rule", "show"); strings.Contains(out, "prohibit") {
		t.Errorf("rule left after recovery:\n%s", out)
	}
	if rs, us := newManager(t, h, dir).Recorded(); len(rs)+len(us) > 0 {
		t.Errorf("record not emptied: %v %v", rs, us)
	}
}

// A route someone deleted while held is put back by the next Hold.
func TestHoldPutsBackADeletedRoute(t *testing.T) {
	h := newLabHost(t)
	m := newManager(t, h, t.TempDir())
	if _, _, err := m.Hold("VI_1", []Route{gwRoute}, nil); err != nil {
		t.Fatal(err)
	}
	ip(t, h, "route", "del", "192.0.2.0/24")
	if _, _, err := m.Hold("VI_1", []Route{gwRoute}, nil); err != nil {
		t.Fatal(err)
	}
	if out := ip(t, h, "route", "show", "proto", "18"); !strings.Contains(out, "192.0.2.0/24") {
		t.Errorf("route not put back:\n%s", out)
	}
}

// A multipath route goes into the kernel with all its paths (ip route shows one nexthop
// line per gateway), is recorded, and leaves the kernel when released; a restarted
// Manager recovers one a crashed run left.
func TestMultipathRouteInNamespace(t *testing.T) {
	h := newLabHost(t)
	dir := t.TempDir()
	m := newManager(t, h, dir)
	routes := []Route{mpRoute, mp6Route}
	fr, _, err := m.Hold("VI_1", routes, nil)
	if err != nil || len(fr) > 0 {
		t.Fatalf("Hold: foreign %v, err %v", fr, err)
	}
	out := ip(t, h, "route", "show", "203.0.113.0/24")
	for _, want := range []string{"203.0.113.0/24 proto keepalived", "nexthop via 10.99.0.1 dev eth0 weight 1", "nexthop via 10.99.0.2 dev eth0 weight 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("ip route lacks %q:\n%s", want, out)
		}
	}
	out6 := ip(t, h, "-6", "route", "show", "2001:db8:1::/48")
	for _, want := range []string{"nexthop via fd00:99::1 dev eth0 weight 3", "nexthop via fd00:99::2 dev eth0 weight 1 onlink"} {
		if !strings.Contains(out6, want) {
			t.Errorf("ip -6 route lacks %q:\n%s", want, out6)
		}
	}
	// Held again (a periodic check): present, so neither foreign nor added twice.
	if fr, _, err := m.Hold("VI_1", routes, nil); err != nil || len(fr) > 0 {
		t.Fatalf("second Hold: foreign %v, err %v", fr, err)
	}
	if n := strings.Count(ip(t, h, "route", "show", "203.0.113.0/24"), "nexthop via"); n != 2 {
		t.Errorf("%d nexthops after a second Hold, want 2", n)
	}
	if err := m.Release("VI_1", routes, nil); err != nil {
		t.Fatal(err)
	}
	if out := ip(t, h, "route", "show", "proto", "18") + ip(t, h, "-6", "route", "show", "proto", "18"); out != "" {
		t.Errorf("routes left after release:\n%s", out)
	}

	// A crashed run's multipath route: recorded, recovered from the record, removed.
	if _, _, err := m.Hold("VI_1", routes[:1], nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := newManager(t, h, dir).Recover()
	if err != nil || len(got) != 1 || got[0] != mpRoute {
		t.Fatalf("Recover: %v, %v; want [%v]", got, err, mpRoute)
	}
	if out := ip(t, h, "route", "show", "203.0.113.0/24"); out != "" {
		t.Errorf("multipath route left after recovery:\n%s", out)
	}
}
