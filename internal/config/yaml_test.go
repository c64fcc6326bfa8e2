package config

import (
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// The example shipped under deploy/ loads, with the values its comments promise.
func TestYAMLDeployExample(t *testing.T) {
	path := filepath.Join("..", "..", "deploy", "vrrpd", "vrrpd.yaml")
	cfg, ws, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) > 0 {
		t.Errorf("warnings: %v", ws)
	}
	if cfg.RouterID != "h1" || len(cfg.Instances) != 4 {
		t.Fatalf("got %+v", cfg)
	}
	byName := map[string]Instance{}
	for _, in := range cfg.Instances {
		byName[in.Name] = in
	}
	v1 := byName["VI_1"]
	if v1.VRID != 51 || v1.Priority != 150 || v1.Version != vrrp.Version3 || v1.AdvertInterval != 100*time.Millisecond ||
		!v1.Preempt || len(v1.VIPs) != 2 || v1.VIPs[1] != (VIP{netip.MustParsePrefix("10.99.0.101/24"), "eth0", "eth0:vip"}) ||
		v1.GARP.MasterRefresh != time.Minute || v1.GARP.MasterDelay != 5*time.Second || v1.Source.Line != 20 {
		t.Errorf("VI_1 = %+v", v1)
	}
	u := byName["VI_UNICAST"]
	if u.UnicastSrc != netip.MustParseAddr("10.99.0.11") || len(u.UnicastPeers) != 1 || u.VIPs[0].Dev != "eth0" || u.GARP.MasterRefresh != 0 {
		t.Errorf("VI_UNICAST = %+v", u)
	}
	v2 := byName["VI_V2"]
	if v2.Version != vrrp.Version2 || v2.AuthType != vrrp.AuthSimple || v2.AuthPass != "secret1" || v2.AdvertInterval != time.Second {
		t.Errorf("VI_V2 = %+v", v2)
	}
	v6 := byName["VI_6"]
	if v6.Family != IPv6 || v6.Version != vrrp.Version3 || v6.Preempt || v6.MulticastGroup != vrrp.MulticastIPv6 {
		t.Errorf("VI_6 = %+v", v6)
	}
}

// The same router written in both formats gives Equal instances.
func TestYAMLMatchesKeepalived(t *testing.T) {
	for _, name := range []string{"v3-unicast-h1", "v2-auth-h2"} {
		t.Run(name, func(t *testing.T) {
			y, ws, err := Load(filepath.Join("testdata", "yaml", name+".yaml"))
			if err != nil || len(ws) > 0 {
				t.Fatalf("YAML: err %v warnings %v", err, ws)
			}
			k, _, err := Load(fixture.Keepalived(name + ".conf"))
			if err != nil {
				t.Fatal(err)
			}
			if y.RouterID != k.RouterID || len(y.Instances) != 1 || !y.Instances[0].Equal(k.Instances[0]) {
				t.Errorf("YAML %+v\nconf %+v", y.Instances, k.Instances)
			}
		})
	}
}

func TestYAMLFields(t *testing.T) {
	conf := `routerID: r1
defaults:
  version: 3
  advertInterval: 200ms
  multicastGroup4: 224.0.0.99
  multicastGroup6: ff02::99
  garp: {masterDelay: 2s, masterRepeat: 3, masterRefresh: 1m, masterRefreshRepeat: 2, interval: 1ms, naInterval: 0.002}
instances:
- name: A
  interface: eth0
  vrid: 7
  state: MASTER
  preemptDelay: 0s
  accept: false
  vips:
  - 10.99.0.7
  - {address: 10.99.0.8/24, dev: eth1, label: "eth1:a"}
  excludedVIPs: ["fd00:99::7/64 dev eth1"]
  garp: {masterRepeat: 9}
- name: B
  interface: eth0
  vrid: 7
  preempt: false
  preemptDelay: 0
  vips: ["fd00:99::8"]
- name: C
  interface: eth0
  vrid: 9
  multicastGroup: 224.0.0.100
  advertInterval: 3
  vips: ["10.99.0.9/24"]
`
	cfg, ws, err := Parse("f.yaml", []byte(conf))
	if err != nil || len(ws) > 0 {
		t.Fatalf("err %v warnings %v", err, ws)
	}
	a, b, c := cfg.Instances[0], cfg.Instances[1], cfg.Instances[2]
	wantGARP := GARP{MasterDelay: 2 * time.Second, MasterRepeat: 9, MasterRefresh: time.Minute, MasterRefreshRepeat: 2, Interval: time.Millisecond, NAInterval: 2 * time.Millisecond}
	if a.Priority != 255 || a.InitialState != StateMaster || a.AcceptMode || a.Version != vrrp.Version3 ||
		a.AdvertInterval != 200*time.Millisecond || a.MulticastGroup != netip.MustParseAddr("224.0.0.99") ||
		a.VIPs[0] != (VIP{netip.MustParsePrefix("10.99.0.7/32"), "eth0", ""}) ||
		a.VIPs[1] != (VIP{netip.MustParsePrefix("10.99.0.8/24"), "eth1", "eth1:a"}) ||
		a.ExcludedVIPs[0] != (VIP{netip.MustParsePrefix("fd00:99::7/64"), "eth1", ""}) || a.GARP != wantGARP || a.Source.Line != 9 {
		t.Errorf("A = %+v", a)
	}
	if b.Family != IPv6 || b.Preempt || b.MulticastGroup != netip.MustParseAddr("ff02::99") || b.Priority != 100 {
		t.Errorf("B = %+v", b)
	}
	if c.MulticastGroup != netip.MustParseAddr("224.0.0.100") || c.AdvertInterval != 3*time.Second {
		t.Errorf("C = %+v", c)
	}
}

func TestYAMLWarnings(t *testing.T) {
	conf := "instances:\n- name: A\n  interface: eth0\n  vrid: 1\n  version: 2\n  auth: {type: PASS, password: \"123456789\"}\n  vips: [\"10.0.0.1/24 brd 10.0.0.255\"]\n  garp:\n    masterRepeat: 0\n"
	cfg, ws, err := Parse("w.yaml", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`w.yaml:7: instance "A": VIP 10.0.0.1/24: option "brd" "10.0.0.255" is not supported; ignored`,
		`w.yaml:6: instance "A": truncating auth.password to 8 characters`,
		`w.yaml:9: instance "A": garp.masterRepeat must be greater than 0; using 1`,
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if in := cfg.Instances[0]; in.AuthPass != "12345678" || in.GARP.MasterRepeat != 1 {
		t.Errorf("got %+v", in)
	}
}

func TestYAMLErrors(t *testing.T) {
	inst := "instances:\n- name: A\n  interface: eth0\n  vrid: 1\n  vips: [10.0.0.1/24]\n"
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"unknown top-level key", "routerID: x\nrouterId: y\n", `y.yaml:2: unknown key "routerId"`},
		{"unknown instance key", inst + "  prio: 5\n", `y.yaml:6: instance "A": unknown key "prio"`},
		{"unknown key in second instance", inst + "- name: B\n  interface: eth0\n  vrid: 2\n  vip: [10.0.0.2]\n", `y.yaml:9: instance "B": unknown key "vip"`},
		{"unknown VIP key", inst + "  excludedVIPs:\n  - {address: 10.0.0.9, device: eth0}\n", `y.yaml:7: instance "A": unknown key "device"`},
		{"unknown defaults key", "defaults:\n  garp:\n    delay: 1s\n", `y.yaml:3: defaults: unknown key "garp.delay"`},
		{"instance garp has no interval", inst + "  garp: {interval: 1s}\n", `y.yaml:6: instance "A": unknown key "garp.interval"`},
		{"wrong type", "instances:\n- name: A\n  interface: eth0\n  vrid: fifty\n", `y.yaml:4: instance "A": key "vrid": want an integer, not string`},
		{"syntax", "instances:\n- name: A\n   interface: eth0\n", `y.yaml:3: YAML: yaml: line 3: mapping values are not allowed in this context`},
		{"duplicate key", "routerID: a\nrouterID: b\n", `y.yaml:2: YAML: line 2: key "routerID" set twice (first at line 1)`},
		{"key case", inst + "  Priority: 5\n", `y.yaml:6: instance "A": unknown key "Priority"`},
		{"nested key case", inst + "  unicast: {Peers: [10.0.0.2]}\n", `y.yaml:6: instance "A": unknown key "unicast.Peers"`},
		{"a string is not a boolean", inst + "  preempt: maybe\n", `y.yaml:6: instance "A": key "preempt": want true or false, not string`},
		{"quoted true is a string", inst + "  preempt: \"true\"\n", `y.yaml:6: instance "A": key "preempt": want true or false, not string`},
		{"wrong type in a list", inst + "  unicast: {peers: [10.0.0.2, [10.0.0.3]]}\n", `y.yaml:6: instance "A": key "peers": want a string, not list`},
		{"wrong type in a route", inst + "  routes: [{to: 10.1.0.0/16, table: true}]\n", `y.yaml:6: instance "A": key "table": want a string or a number, not bool`},
		{"duration not a scalar", inst + "  advertInterval: [1s]\n", `y.yaml:6: instance "A": key "advertInterval": want a duration, not list`},
		{"defaults not a mapping", "defaults: 5\n", `y.yaml:1: defaults: want a mapping, not number`},
		{"duplicate key in an instance", inst + "  vrid: 2\n", `y.yaml:6: YAML: line 6: key "vrid" set twice (first at line 4)`},
		{"empty list item", inst + "  excludedVIPs: [10.0.0.9, ~]\n", `y.yaml:6: YAML: line 6: an empty list item`},
		{"value that cannot have its tag", inst + "  dontTrackPrimary: !!bool 3\n", "y.yaml:6: YAML: yaml: cannot decode !!int `3` as a !!bool"},
		{"bad merge", inst + "  <<: 5\n", `y.yaml:2: YAML: yaml: map merge requires map or sequence of maps as the value`},
		// An alias bomb: the schema has no key that takes nested lists, so nothing is
		// expanded; the first unknown key is the error.
		{"aliases", "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
			"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n",
			`y.yaml:1: unknown key "a"`},
		{"vrid range", "instances:\n- name: A\n  interface: eth0\n  vrid: 300\n", `y.yaml:4: instance "A": vrid "300" is not a number between 1 and 255`},
		{"priority range", inst + "  priority: 0\n", `y.yaml:6: instance "A": priority "0" is not a number between 1 and 255`},
		{"version", inst + "  version: 4\n", `y.yaml:6: instance "A": version "4" is not a number between 2 and 3`},
		{"state", inst + "  state: master\n", `y.yaml:6: instance "A": state must be MASTER or BACKUP, not "master"`},
		{"bad duration", inst + "  advertInterval: soon\n", `y.yaml:6: instance "A": advertInterval: bad duration "soon" (want e.g. "100ms", "1s" or a number of seconds)`},
		{"duration not a string", "defaults:\n  garp:\n    interval: true\n", `y.yaml:3: defaults: garp.interval: bad duration "true" (want e.g. "100ms", "1s" or a number of seconds)`},
		{"advert range", inst + "  advertInterval: 5ms\n", `y.yaml:6: instance "A": advertInterval "5ms" is not a number of seconds between 10ms and 4m15s`},
		{"bad VIP", "instances:\n- name: A\n  interface: eth0\n  vrid: 1\n  vips:\n  - 10.0.0.1/24\n  - 10.0.0/24\n", `y.yaml:7: instance "A": vips[1]: bad address "10.0.0/24" (want addr or addr/prefix)`},
		{"bad peer", inst + "  unicast: {peers: [10.0.0.2, nope]}\n", `y.yaml:6: instance "A": unicast.peers[1]: bad IP address "nope"`},
		{"bad source", inst + "  unicast:\n    source: nope\n", `y.yaml:7: instance "A": unicast.source: bad IP address "nope"`},
		{"auth AH", inst + "  auth: {type: AH}\n", `y.yaml:6: instance "A": auth.type AH (IPsec authentication header) is not supported by vrrpd; use PASS or none`},
		{"mcast", "defaults:\n  multicastGroup4: 10.0.0.1\n", `y.yaml:2: defaults: multicastGroup4 10.0.0.1 is not an IPv4 multicast address`},
		{"no name", "instances:\n- interface: eth0\n  vrid: 1\n", `y.yaml:2: instance has no name`},
		{"duplicate", inst + inst[len("instances:\n"):], `y.yaml:6: duplicate instance name "A" (first defined at y.yaml:2)`},
		{"mixed families", "instances:\n- name: A\n  interface: eth0\n  vrid: 1\n  vips:\n  - 10.0.0.1/24\n  - fd00::1/64\n", `y.yaml:7: (A) VIP fd00::1/64 is IPv6 but the instance is IPv4: one instance carries one family (use virtual_ipaddress_excluded or a second instance)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := Parse("y.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error; got %+v", cfg)
			}
			if cfg != nil {
				t.Error("a Config came back with the error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n %s\nwant\n %s", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%T is not an *Error", err)
			}
		})
	}
}

// TestYAMLResolvesAsYAML11: configurations were written against sigs.k8s.io/yaml (YAML
// 1.1): yaml.v3 keeps what they rely on. yes/no/on/off set a boolean key, a leading 0 is
// octal, and anchors, aliases and merge keys (<<) work, the mapping's own keys winning
// over merged ones. What changed: a string key takes yes, on or 123 as written, and a
// boolean key a quoted "no" (yaml.v3's compatibility; a quoted "true" is refused).
func TestYAMLResolvesAsYAML11(t *testing.T) {
	doc := `instances:
- &base
  name: A
  interface: eth0
  vrid: 1
  priority: 0144
  preempt: no
  vips: [10.0.0.1/24]
- <<: [*base]
  name: B
  vrid: 2
  priority: 50
  preempt: on
  vips: [10.0.0.2/24]
- name: yes
  interface: 123
  vrid: 3
  preempt: "no"
  vips: [10.0.0.3/24]
`
	cfg, _, err := Parse("y.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Instances[0], cfg.Instances[1]
	if a.Name != "A" || a.Priority != 100 || a.Preempt || a.Interface != "eth0" {
		t.Errorf("A = %+v; want priority 0144 = 100 and preempt no = false", a)
	}
	if b.Name != "B" || b.Priority != 50 || !b.Preempt || b.Interface != "eth0" || b.VRID != 2 {
		t.Errorf("B = %+v; want its own name, vrid and priority over the merged ones, preempt on, interface merged", b)
	}
	if c := cfg.Instances[2]; c.Name != "yes" || c.Interface != "123" || c.Preempt {
		t.Errorf("C = %+v; want name yes and interface 123 as written, and a quoted \"no\" false", c)
	}
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		data string
		want Format
	}{
		{"routerID: h1\n", FormatYAML},
		{"# comment\n\ninstances:\n- name: x\n", FormatYAML},
		{"---\ninstances: []\n", FormatYAML},
		{"{\"instances\": []}", FormatYAML},
		{"global_defs {\n}\n", FormatKeepalived},
		{"! Configuration File for keepalived\nglobal_defs {\n", FormatKeepalived},
		{"# comment\nvrrp_instance VI_1 {\n", FormatKeepalived},
		{"include /etc/keepalived/conf.d/*.conf\n", FormatKeepalived},
		{"global_defs { router_id h1\n", FormatKeepalived},
		{"", FormatKeepalived},
	}
	for _, tt := range tests {
		if got := DetectFormat([]byte(tt.data)); got != tt.want {
			t.Errorf("DetectFormat(%q) = %v, want %v", tt.data, got, tt.want)
		}
	}
}
