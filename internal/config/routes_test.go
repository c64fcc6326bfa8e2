package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/route"
)

const routesConf = `global_defs {
    net_namespace lb
}
static_ipaddress {
    192.168.1.1/24 dev eth0 scope global
}
static_routes {
    192.168.2.0/24 via 192.168.1.100 dev eth0
    default via 10.0.0.1 table 100
}
static_rules {
    from 192.168.2.0/24 table 1
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    unicast_src_ip 10.0.0.2
    unicast_peer {
        10.0.0.3
    }
    track_src_ip
    virtual_ipaddress {
        10.0.0.100/24
    }
    virtual_routes {
        src 10.0.0.100 to 192.168.109.0/24 via 10.0.0.254 dev eth0
        192.168.111.0/24 dev eth0 no_track metric 20
        blackhole 192.168.114.0/24
        0.0.0.0/0 gw 10.0.0.1 table 100
        2001:db8::/48 dev eth0 table main
    }
    virtual_rules {
        from 192.168.2.0/24 table 1
        to 192.168.2.0/24 lookup 100 priority 100 no_track
        fwmark 0x10/0xff iif eth0 prohibit
        not from 2001:db8::/32 table 7 oif eth1
    }
}
`

func TestRoutesFromKeepalivedConf(t *testing.T) {
	cfg, ws, err := Parse("k.conf", []byte(routesConf))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NetNamespace != "lb" {
		t.Errorf("NetNamespace = %q", cfg.NetNamespace)
	}
	pfx, addr := netip.MustParsePrefix, netip.MustParseAddr
	wantStatic := Static{
		Addresses: []VIP{{Prefix: pfx("192.168.1.1/24"), Dev: "eth0"}},
		Routes: []route.Route{
			{Dst: pfx("192.168.2.0/24"), Via: addr("192.168.1.100"), Dev: "eth0", Protocol: 18},
			{Dst: pfx("0.0.0.0/0"), Via: addr("10.0.0.1"), Table: 100, Protocol: 18},
		},
		Rules: []route.Rule{{From: pfx("192.168.2.0/24"), Table: 1, Protocol: 18}},
	}
	if !reflect.DeepEqual(cfg.Static, wantStatic) {
		t.Errorf("Static =\n%+v\nwant\n%+v", cfg.Static, wantStatic)
	}
	in := cfg.Instances[0]
	if !in.TrackSrcIP {
		t.Error("track_src_ip not set")
	}
	wantRoutes := []route.Route{
		{Dst: pfx("192.168.109.0/24"), Src: addr("10.0.0.100"), Via: addr("10.0.0.254"), Dev: "eth0", Protocol: 18},
		{Dst: pfx("192.168.111.0/24"), Dev: "eth0", Metric: 20, Protocol: 18},
		{Dst: pfx("192.168.114.0/24"), Type: route.TypeBlackhole, Protocol: 18},
		{Dst: pfx("0.0.0.0/0"), Via: addr("10.0.0.1"), Table: 100, Protocol: 18},
		{Dst: pfx("2001:db8::/48"), Dev: "eth0", Table: route.TableMain, Protocol: 18},
	}
	if !reflect.DeepEqual(in.Routes, wantRoutes) {
		t.Errorf("Routes =\n%+v\nwant\n%+v", in.Routes, wantRoutes)
	}
	wantRules := []route.Rule{
		{From: pfx("192.168.2.0/24"), Table: 1, Protocol: 18},
		{To: pfx("192.168.2.0/24"), Table: 100, Priority: 100, HasPriority: true, Protocol: 18},
		{HasMark: true, Mark: 0x10, Mask: 0xff, IIF: "eth0", Type: route.TypeProhibit, Protocol: 18},
		{IPv6: true, Invert: true, From: pfx("2001:db8::/32"), Table: 7, OIF: "eth1", Protocol: 18},
	}
	if !reflect.DeepEqual(in.Rules, wantRules) {
		t.Errorf("Rules =\n%+v\nwant\n%+v", in.Rules, wantRules)
	}
	var gw bool
	for _, w := range ws {
		if strings.Contains(w.Message, "unknown") || strings.Contains(w.Message, "not supported") {
			t.Errorf("unexpected warning %v", w)
		}
		gw = gw || strings.Contains(w.Message, `"gw" is deprecated`)
	}
	if !gw {
		t.Error(`no warning about "gw"`)
	}
	// A second load of the same file is Equal; a changed route is not.
	again, _, _ := Parse("k.conf", []byte(strings.Replace(routesConf, "metric 20", "metric 21", 1)))
	if again.Instances[0].Equal(in) {
		t.Error("a changed virtual route leaves the instance Equal: a reload would keep the old route")
	}
}

// Every unsupported option is an error at its line naming it, and so is a line vrrpd's
// own checks refuse: keepalived adds such a route, and vrrpd cannot add it as written.
func TestRouteAndRuleErrorsNameFileLine(t *testing.T) {
	for _, c := range []struct{ conf, want string }{
		{routeInst(" virtual_routes {\n  10.1.0.0/16 via 10.0.0.254 mtu 1400\n }\n"), `k.conf:8: virtual_routes: route option "mtu" is not supported`},
		{routeInst(" virtual_routes {\n  10.1.0.0/16 nexthop via 10.0.0.1 realms 5\n }\n"), `k.conf:8: virtual_routes: route option "realms"`},
		{routeInst(" virtual_routes {\n  10.1.0.1/16 dev eth0\n }\n"), `host bits set`},
		{routeInst(" virtual_routes {\n  10.1.0.0/16\n }\n"), `needs via or dev`},
		{routeInst(" virtual_routes {\n  local 10.1.0.0/16 dev eth0\n }\n"), `route type "local" is not supported`},
		{routeInst(" virtual_rules {\n  from 10.1.0.0/16 uidrange 1-2 table 5\n }\n"), `k.conf:8: virtual_rules: rule option "uidrange" is not supported`},
		{"static_ipaddress {\n 10.0.0.5/24\n}\n" + routeInst(""), `k.conf:2: static_ipaddress 10.0.0.5/24: no dev given`},
		{"static_routes {\n 10.0.0.0/24 via 10.0.0.1 track_group G\n}\n" + routeInst(""), `k.conf:2: static_routes: route option "track_group"`},
		{"global_defs {\n net_namespace ../etc\n}\n" + routeInst(""), `k.conf:2: net_namespace "../etc" is not a namespace name`},
	} {
		_, _, err := Parse("k.conf", []byte(c.conf))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error containing %q, got %v\n%s", c.want, err, c.conf)
		}
	}
}

// A route or rule line keepalived cannot read, it skips with a message and runs the rest
// (alloc_route, alloc_rule): vrrpd skips it too, with a warning naming the line, and
// keeps the lines around it.
func TestUnreadableRouteAndRuleLinesSkipped(t *testing.T) {
	for _, c := range []struct{ block, want string }{
		{" virtual_routes {\n  10.2.0.0/16 dev eth0\n  10.1.0.0/16 via 10.0.0.254 dev eth0 frobnicate\n }\n", `k.conf:9: virtual_routes: unknown route keyword "frobnicate"`},
		{" virtual_routes {\n  10.2.0.0/16 dev eth0\n  10.1.0.0/16 via 2001:db8::1\n }\n", `k.conf:9: virtual_routes: route 10.1.0.0/16 mixes IPv4 and IPv6 addresses`},
		{" virtual_routes {\n  10.2.0.0/16 dev eth0\n  10.1.0.0/16 dev eth0 table blue\n }\n", `routing table "blue"`},
		{" virtual_routes {\n  10.2.0.0/16 dev eth0\n  via 10.0.0.1\n }\n", `k.conf:9: virtual_routes: route has no destination`},
		{" virtual_rules {\n  from 10.2.0.0/16 table 5\n  from 10.1.0.0/16\n }\n", `k.conf:9: virtual_rules: rule has no action`},
		{" virtual_rules {\n  from 10.2.0.0/16 table 5\n  from 10.1.0.0/16 table 5 blackhole\n }\n", `two actions`},
		{" virtual_rules {\n  from 10.2.0.0/16 table 5\n  from 10.1.0.0/16 to 2001:db8::/32 table 5\n }\n", `mixes IPv4 and IPv6`},
	} {
		cfg, ws, err := Parse("k.conf", []byte(routeInst(c.block)))
		if err != nil {
			t.Errorf("%q: %v", c.block, err)
			continue
		}
		text := FormatWarnings(ws)
		if !strings.Contains(text, c.want) || !strings.Contains(text, "k.conf:9: ") || !strings.Contains(text, "line skipped, as keepalived skips it") {
			t.Errorf("%q: want a warning at line 9 containing %q, got\n%s", c.block, c.want, text)
		}
		in := cfg.Instances[0]
		if len(in.Routes)+len(in.Rules) != 1 {
			t.Errorf("%q: the line before the skipped one is not kept, or the skipped one is: %+v %+v", c.block, in.Routes, in.Rules)
		}
	}
	// The same in static_rules, keepalived's own sample's bad rule.
	cfg, ws, err := Parse("k.conf", []byte("static_rules {\n from 192.168.1.0/24 table 1\n to 192.168.100./24 table 2\n}\n"+routeInst("")))
	if err != nil || len(cfg.Static.Rules) != 1 || !strings.Contains(FormatWarnings(ws), `k.conf:3: static_rules: bad rule to "192.168.100./24"; line skipped`) {
		t.Errorf("static_rules: %v %+v\n%s", err, cfg, FormatWarnings(ws))
	}
}

// routeInst is an instance with block in it, at line 7.
func routeInst(block string) string {
	return "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n  10.0.0.1\n }\n" + block + "}\n"
}

func TestTrackSrcIPWithoutSourceWarns(t *testing.T) {
	conf := "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n track_src_ip\n virtual_ipaddress {\n  10.0.0.1\n }\n}\n"
	cfg, ws, err := Parse("k.conf", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Instances[0].TrackSrcIP {
		t.Error("TrackSrcIP set without a configured source")
	}
	found := false
	for _, w := range ws {
		found = found || (strings.Contains(w.Message, "track_src_ip") && w.Pos.Line == 4)
	}
	if !found {
		t.Errorf("no warning at line 4 about track_src_ip: %v", ws)
	}
}

const routesYAML = `netNamespace: lb
staticAddresses:
  - 192.168.1.1/24 dev eth0
staticRoutes:
  - 192.168.2.0/24 via 192.168.1.100 dev eth0
  - {to: default, via: 10.0.0.1, table: 100}
staticRules:
  - {from: 192.168.2.0/24, table: 1}
instances:
  - name: VI_1
    interface: eth0
    vrid: 51
    unicast: {source: 10.0.0.2, peers: [10.0.0.3]}
    trackSourceIP: true
    vips: [10.0.0.100/24]
    routes:
      - src 10.0.0.100 to 192.168.109.0/24 via 10.0.0.254 dev eth0
      - {to: 192.168.111.0/24, dev: eth0, metric: 20}
      - {type: blackhole, to: 192.168.114.0/24}
      - 0.0.0.0/0 via 10.0.0.1 table 100
      - {to: 2001:db8::/48, dev: eth0, table: main}
    rules:
      - from 192.168.2.0/24 table 1
      - {to: 192.168.2.0/24, table: 100, priority: 100}
      - {fwmark: 0x10/0xff, iif: eth0, type: prohibit}
      - {not: true, from: 2001:db8::/32, table: 7, oif: eth1}
`

// The YAML keys give what the keepalived.conf keywords give (the gw line aside, which
// YAML writes as via).
func TestRoutesFromYAMLMatchKeepalived(t *testing.T) {
	y, _, err := Parse("r.yaml", []byte(routesYAML))
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := Parse("k.conf", []byte(strings.Replace(routesConf, "gw 10.0.0.1", "via 10.0.0.1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if y.NetNamespace != k.NetNamespace || !y.Static.Equal(k.Static) {
		t.Errorf("host: YAML %q %+v, keepalived.conf %q %+v", y.NetNamespace, y.Static, k.NetNamespace, k.Static)
	}
	yi, ki := y.Instances[0], k.Instances[0]
	if !reflect.DeepEqual(yi.Routes, ki.Routes) || !reflect.DeepEqual(yi.Rules, ki.Rules) || yi.TrackSrcIP != ki.TrackSrcIP {
		t.Errorf("instance: YAML\n%+v\n%+v\nkeepalived.conf\n%+v\n%+v", yi.Routes, yi.Rules, ki.Routes, ki.Rules)
	}
}

func TestYAMLRouteErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"instances:\n  - name: A\n    interface: eth0\n    vrid: 1\n    vips: [10.0.0.1]\n    routes:\n      - 10.1.0.0/16 via 10.0.0.9 mtu 9000\n", `r.yaml:7: routes[0]: route option "mtu" is not supported`},
		{"instances:\n  - name: A\n    interface: eth0\n    vrid: 1\n    vips: [10.0.0.1]\n    rules:\n      - {from: 10.1.0.0/16}\n", `r.yaml:7: rules[0]: rule has no action`},
		{"instances:\n  - name: A\n    interface: eth0\n    vrid: 1\n    vips: [10.0.0.1]\n    routes:\n      - {to: 10.1.0.0/16, gateway: 10.0.0.9}\n", `gateway`},
		{"staticAddresses: [10.0.0.5/24]\ninstances:\n  - name: A\n    interface: eth0\n    vrid: 1\n    vips: [10.0.0.1]\n", `r.yaml:1: staticAddresses[0]: 10.0.0.5/24 has no dev`},
		{"netNamespace: a/b\ninstances:\n  - name: A\n    interface: eth0\n    vrid: 1\n    vips: [10.0.0.1]\n", `r.yaml:1: netNamespace "a/b"`},
	} {
		_, _, err := Parse("r.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error containing %q, got %v", c.want, err)
		}
	}
}
