package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/route"
)

// keepalived's "via GW1 or GW2" (deprecated, still in its own sample) is a multipath
// route with a path through each gateway; the route's dev and onlink go to both paths.
func TestOrMakesAMultipathRoute(t *testing.T) {
	block := " virtual_routes {\n" +
		"  192.168.113.0/24 via 192.168.100.252 or 192.168.100.253\n" +
		"  10.5.0.0/16 via 10.0.0.1 dev eth0 onlink or 10.0.0.2 metric 7 table 100\n" +
		"  2001:db8:5::/48 via fd00:99::1 or fd00:99::2\n" +
		"  10.6.0.0/16 via 10.0.0.1 or 10.0.0.2 or 10.0.0.3\n" +
		" }\n"
	cfg, ws, err := Parse("k.conf", []byte(routeInst(block)))
	if err != nil {
		t.Fatal(err)
	}
	addr, pfx := netip.MustParseAddr, netip.MustParsePrefix
	want := []route.Route{
		{Dst: pfx("192.168.113.0/24"), Protocol: route.Protocol, Nexthops: route.NewNexthops(
			route.Nexthop{Via: addr("192.168.100.252")}, route.Nexthop{Via: addr("192.168.100.253")})},
		{Dst: pfx("10.5.0.0/16"), Metric: 7, Table: 100, Protocol: route.Protocol, Nexthops: route.NewNexthops(
			route.Nexthop{Via: addr("10.0.0.1"), Dev: "eth0", OnLink: true}, route.Nexthop{Via: addr("10.0.0.2"), Dev: "eth0", OnLink: true})},
		{Dst: pfx("2001:db8:5::/48"), Protocol: route.Protocol, Nexthops: route.NewNexthops(
			route.Nexthop{Via: addr("fd00:99::1")}, route.Nexthop{Via: addr("fd00:99::2")})},
		// keepalived ignores a second "or".
		{Dst: pfx("10.6.0.0/16"), Protocol: route.Protocol, Nexthops: route.NewNexthops(
			route.Nexthop{Via: addr("10.0.0.1")}, route.Nexthop{Via: addr("10.0.0.2")})},
	}
	if got := cfg.Instances[0].Routes; !slices.Equal(got, want) {
		t.Errorf("routes\n%v\nwant\n%v", got, want)
	}
	text := FormatWarnings(ws)
	for _, w := range []string{`k.conf:8: virtual_routes: "or" is deprecated in keepalived`, `k.conf:11: virtual_routes: a second "or" (10.0.0.3) is ignored`} {
		if !strings.Contains(text, w) {
			t.Errorf("no warning %q in\n%s", w, text)
		}
	}

	// The same line in YAML's string form reads alike.
	y, _, err := Parse("r.yaml", []byte("instances:\n  - name: VI_1\n    interface: eth0\n    vrid: 1\n    vips: [10.0.0.1]\n    routes:\n      - 192.168.113.0/24 via 192.168.100.252 or 192.168.100.253\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Instances[0].Routes; len(got) != 1 || got[0] != want[0] {
		t.Errorf("YAML routes %v, want [%v]", got, want[0])
	}
}

// An "or" line vrrpd cannot apply as written is an error at its line, and nothing is
// applied; one keepalived cannot read is skipped with a warning at its line, as
// keepalived skips it.
func TestOrErrorsNameFileLine(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"10.1.0.0/16 or 10.0.0.2", `k.conf:8: virtual_routes: "or" 10.0.0.2 needs a via before it`},
		{"10.1.0.0/16 dev eth0 or 10.0.0.2 via 10.0.0.1", `k.conf:8: virtual_routes: "or" 10.0.0.2 needs a via before it`},
		{"10.1.0.0/16 via 10.0.0.1 or 10.0.0.2 via 10.0.0.3", `k.conf:8: virtual_routes: "via" after "or"`},
		{"10.1.0.0/16 via 10.0.0.1 or 2001:db8::2", `k.conf:8: virtual_routes: "or" 2001:db8::2: route mixes IPv4 and IPv6 addresses`},
		{"blackhole 10.1.0.0/16 via 10.0.0.1 or 10.0.0.2", `k.conf:8: virtual_routes: a blackhole route takes no via`},
		{"10.1.0.0/16 via 10.0.0.1 or 10.0.0.2 dev averyveryverylongname", `k.conf:8: virtual_routes: interface name "averyveryverylongname" is longer than 15 characters`},
	} {
		_, _, err := Parse("k.conf", []byte(routeInst(" virtual_routes {\n  "+c.line+"\n }\n")))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want error containing %q, got %v", c.line, c.want, err)
		}
	}
	for _, c := range []struct{ line, want string }{
		{"10.1.0.0/16 via 10.0.0.1 or 10.0.0.", `k.conf:9: virtual_routes: bad "or" address "10.0.0."; line skipped, as keepalived skips it`},
		{"10.1.0.0/16 via 10.0.0.1 or", `k.conf:9: virtual_routes: "or" needs a value; line skipped`},
		{"2001:db8::/32 via 10.0.0.1 or 10.0.0.2", `k.conf:9: virtual_routes: route 2001:db8::/32 mixes IPv4 and IPv6 addresses; line skipped`},
		// keepalived: "Cannot specify nexthops with "or" route", and the line is skipped.
		{"10.1.0.0/16 via 10.0.0.1 or 10.0.0.2 nexthop via 10.0.0.3", `k.conf:9: virtual_routes: "nexthop" after "or": a route takes one or the other; line skipped`},
	} {
		cfg, ws, err := Parse("k.conf", []byte(routeInst(" virtual_routes {\n  10.2.0.0/16 dev eth0\n  "+c.line+"\n }\n")))
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if text := FormatWarnings(ws); !strings.Contains(text, c.want) {
			t.Errorf("%s: want a warning %q, got\n%s", c.line, c.want, text)
		}
		if n := len(cfg.Instances[0].Routes); n != 1 {
			t.Errorf("%s: %d routes, want the line before only", c.line, n)
		}
	}
}

// keepalived's own multipath syntax: "nexthop via A [dev IF] [weight N] [onlink]" per
// path, after the route's other options.
func TestNexthopClausesMakeAMultipathRoute(t *testing.T) {
	block := " virtual_routes {\n" +
		"  10.7.0.0/16 table 100 metric 5 nexthop via 10.0.0.1 dev eth0 weight 3 nexthop via inet 10.0.0.2 onlink nexthop dev eth1\n" +
		"  2001:db8:7::/48 nexthop via fd00:99::1 weight 1 nexthop via fd00:99::2 weight 256\n" +
		"  10.8.0.0/16 nexthop via 10.0.0.1\n" +
		" }\n"
	cfg, ws, err := Parse("k.conf", []byte(routeInst(block)))
	if err != nil {
		t.Fatal(err)
	}
	addr, pfx := netip.MustParseAddr, netip.MustParsePrefix
	want := []route.Route{
		{Dst: pfx("10.7.0.0/16"), Table: 100, Metric: 5, Protocol: route.Protocol, Nexthops: route.NewNexthops(
			route.Nexthop{Via: addr("10.0.0.1"), Dev: "eth0", Weight: 3}, route.Nexthop{Via: addr("10.0.0.2"), OnLink: true}, route.Nexthop{Dev: "eth1"})},
		{Dst: pfx("2001:db8:7::/48"), Protocol: route.Protocol, Nexthops: route.NewNexthops(
			route.Nexthop{Via: addr("fd00:99::1")}, route.Nexthop{Via: addr("fd00:99::2"), Weight: 256})},
		{Dst: pfx("10.8.0.0/16"), Protocol: route.Protocol, Nexthops: route.NewNexthops(route.Nexthop{Via: addr("10.0.0.1")})},
	}
	if got := cfg.Instances[0].Routes; !slices.Equal(got, want) {
		t.Errorf("routes\n%v\nwant\n%v", got, want)
	}
	if len(ws) != 0 {
		t.Errorf("warnings:\n%s", FormatWarnings(ws))
	}
}

// A nexthop clause vrrpd cannot apply as written is an error at its line. keepalived
// adds the route with the paths it read before a word it cannot read: a route without a
// path the file gives, which vrrpd does not add.
func TestNexthopErrorsNameFileLine(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"10.1.0.0/16 nexthop via 10.0.0.1 weight 0", `k.conf:8: virtual_routes: bad nexthop weight "0" (1..256)`},
		{"10.1.0.0/16 nexthop via 10.0.0.1 weight 257", `bad nexthop weight "257"`},
		{"10.1.0.0/16 nexthop via 10.0.0.1 nexthop via 10.0.0.", `k.conf:8: virtual_routes: bad nexthop via address "10.0.0."`},
		{"10.1.0.0/16 nexthop via 10.0.0.1 nexthop via fd00:99::1", `k.conf:8: virtual_routes: nexthop via fd00:99::1: route mixes IPv4 and IPv6 addresses`},
		{"10.1.0.0/16 nexthop via 10.0.0.1 metric 5", `k.conf:8: virtual_routes: "metric" is not a nexthop option`},
		{"10.1.0.0/16 nexthop via 10.0.0.1 or 10.0.0.2", `"or" is not a nexthop option`},
		{"10.1.0.0/16 nexthop via 10.0.0.1 encap mpls 100", `k.conf:8: virtual_routes: route option "encap" is not supported`},
		{"10.1.0.0/16 via 10.0.0.1 nexthop via 10.0.0.2", `k.conf:8: virtual_routes: a route with nexthops takes via, dev and onlink in each nexthop`},
		{"10.1.0.0/16 dev eth0 nexthop via 10.0.0.2", `a route with nexthops takes via, dev and onlink in each nexthop`},
		{"10.1.0.0/16 nexthop", `k.conf:8: virtual_routes: route 10.1.0.0/16: a nexthop needs via or dev`},
		{"10.1.0.0/16 nexthop via 10.0.0.1 nexthop weight 2", `a nexthop needs via or dev`},
		{"blackhole 10.1.0.0/16 nexthop via 10.0.0.1", `a blackhole route takes no via, dev or nexthop`},
		{"10.1.0.0/16 nexthop dev averyveryverylongname", `interface name "averyveryverylongname" is longer than 15 characters`},
	} {
		_, _, err := Parse("k.conf", []byte(routeInst(" virtual_routes {\n  "+c.line+"\n }\n")))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want error containing %q, got %v", c.line, c.want, err)
		}
	}
}

// YAML's mapping form writes the paths under nexthops, and reads as the same line in
// keepalived.conf does.
func TestYAMLNexthops(t *testing.T) {
	y, _, err := Parse("r.yaml", []byte(`instances:
  - name: VI_1
    interface: eth0
    vrid: 1
    vips: [10.0.0.1]
    routes:
      - to: 10.7.0.0/16
        table: 100
        nexthops:
          - {via: 10.0.0.1, dev: eth0, weight: 3}
          - {via: 10.0.0.2, onlink: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := Parse("k.conf", []byte(routeInst(" virtual_routes {\n  10.7.0.0/16 table 100 nexthop via 10.0.0.1 dev eth0 weight 3 nexthop via 10.0.0.2 onlink\n }\n")))
	if err != nil {
		t.Fatal(err)
	}
	yr, kr := y.Instances[0].Routes, k.Instances[0].Routes
	if len(yr) != 1 || !slices.Equal(yr, kr) || yr[0].Nexthops.Len() != 2 {
		t.Errorf("YAML %v, keepalived.conf %v", yr, kr)
	}
	_, _, err = Parse("r.yaml", []byte("instances:\n  - name: VI_1\n    interface: eth0\n    vrid: 1\n    vips: [10.0.0.1]\n    routes:\n      - {to: 10.7.0.0/16, nexthops: [{via: 10.0.0.1, weight: 0}]}\n"))
	if err == nil || !strings.Contains(err.Error(), `r.yaml:7: routes[0]: bad nexthop weight "0"`) {
		t.Errorf("weight 0: %v", err)
	}
}
