package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestBoundsAreConfigErrors: a number that would drive unbounded work, or a VIP no host
// can own, is an error naming file:line in keepalived.conf and YAML, and nothing applies.
func TestBoundsAreConfigErrors(t *testing.T) {
	inst := "instances:\n- name: A\n  interface: eth0\n  vrid: 1\n  vips: [10.0.0.1/24]\n"
	tests := []struct {
		name, file, conf, want string
	}{
		{"garp_master_repeat 2^31-1", "e.conf", kaConf("", "garp_master_repeat 2147483647"),
			`e.conf:4: garp_master_repeat "2147483647" is not a number between 0 and 255`},
		{"garp_master_refresh_repeat 256", "e.conf", kaConf("", "garp_master_refresh_repeat 256"),
			`e.conf:4: garp_master_refresh_repeat "256" is not a number between 0 and 255`},
		{"vrrp_garp_master_repeat 1000", "e.conf", kaConf("vrrp_garp_master_repeat 1000", ""),
			`e.conf:2: vrrp_garp_master_repeat "1000" is not a number between 0 and 255`},
		{"garp_master_delay beyond keepalived", "e.conf", kaConf("", "garp_master_delay 4295"),
			`e.conf:4: garp_master_delay "4295" is not a number between 0 and 4294`},
		{"multicast VIP", "e.conf", kaConf("", "virtual_ipaddress {\n224.0.0.5\n}"),
			`e.conf:5: (T) VIP 224.0.0.5/32 is a multicast address, not a host address`},
		{"loopback VIP", "e.conf", kaConf("", "virtual_ipaddress {\n127.0.0.2/8\n}"),
			`e.conf:5: (T) VIP 127.0.0.2/8 is a loopback address, not one on the segment`},
		{"link-local VIP", "e.conf", kaConf("", "virtual_ipaddress {\n169.254.1.1\n}"),
			`e.conf:5: (T) VIP 169.254.1.1/32 is an IPv4 link-local address (169.254.0.0/16), which the host manages per link`},
		{"broadcast VIP", "e.conf", kaConf("", "virtual_ipaddress {\n10.99.0.255/24\n}"),
			`e.conf:5: (T) VIP 10.99.0.255/24 is the broadcast address of its own prefix`},
		{"YAML masterRepeat", "y.yaml", inst + "  garp: {masterRepeat: 2147483647}\n",
			`y.yaml:6: instance "A": garp.masterRepeat 2147483647 is more than 255`},
		{"YAML masterRefresh below a second", "y.yaml", inst + "  garp: {masterRefresh: 1ms}\n",
			`y.yaml:6: instance "A": garp.masterRefresh 1ms is not 0 or between 1s and 596523h14m7s`},
		{"YAML interval", "y.yaml", "defaults:\n  garp:\n    interval: 2000s\n",
			`y.yaml:3: defaults: garp.interval 33m20s is more than 16m40s`},
		{"YAML multicast VIP", "y.yaml", "instances:\n- name: A\n  interface: eth0\n  vrid: 1\n  vips:\n  - 10.0.0.1/24\n  - 239.1.1.1\n",
			`y.yaml:7: (A) VIP 239.1.1.1/32 is a multicast address, not a host address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := Parse(tt.file, []byte(tt.conf))
			if err == nil || cfg != nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			var e *Error
			if err.Error() != tt.want || !errors.As(err, &e) {
				t.Errorf("error\n %v\nwant\n %s", err, tt.want)
			}
		})
	}
	// At the limits: accepted.
	if _, _, err := Parse("e.conf", []byte(kaConf("vrrp_garp_master_repeat 255", "garp_master_repeat 255\ngarp_master_delay 4294\nvirtual_ipaddress {\n10.99.0.254/24\n10.99.0.1/32\n}"))); err != nil {
		t.Errorf("values at the limits refused: %v", err)
	}
}

// TestVIPProblem: the one VIP address rule.
func TestVIPProblem(t *testing.T) {
	for p, ok := range map[string]bool{
		"10.99.0.100/32": true, "10.99.0.255/32": true, "10.99.0.100/24": true, "fe80::1/64": true,
		"fd00:99::100/128": true, "0.0.0.0/32": false, "::/128": false, "224.0.0.18/32": false,
		"ff02::1/128": false, "127.0.0.1/32": false, "::1/128": false, "169.254.0.5/32": false,
		"255.255.255.255/32": false, "10.99.0.255/24": false, "10.99.0.3/30": false,
	} {
		if got := VIPProblem(netip.MustParsePrefix(p)); (got == "") != ok {
			t.Errorf("VIPProblem(%s) = %q, want ok %v", p, got, ok)
		}
	}
}

// TestLimitsAgreeWithAPI: the operator refuses a Service's verbatim value exactly where
// vrrpd's configuration would (api/v1alpha1's table against config's rules), at the
// edges of every limited keyword both know.
func TestLimitsAgreeWithAPI(t *testing.T) {
	for _, k := range []string{"garp_master_repeat", "garp_master_refresh_repeat", "garp_master_delay", "garp_master_refresh"} {
		l, ok := v1alpha1.VerbatimNumberLimit(k)
		if !ok {
			t.Errorf("%s: no limit in the API's table", k)
			continue
		}
		for _, n := range []uint64{l.Min, l.Max, l.Max + 1} {
			v := strconv.FormatUint(n, 10)
			_, err := NewDraft("A", Position{}).SetKeyword(k, []string{v})
			api := v1alpha1.ServiceValueProblem(k, v)
			if (err == nil) != (api == "") {
				t.Errorf("%s %s: config says %v, the API %q", k, v, err, api)
			}
		}
	}
	for _, k := range []string{"vrrp_garp_master_repeat", "vrrp_garp_master_refresh_repeat", "vrrp_garp_master_delay", "vrrp_garp_master_refresh"} {
		l, _ := v1alpha1.VerbatimNumberLimit(k)
		g := DefaultGlobals()
		if _, err := g.SetKeyword(k, []string{fmt.Sprint(l.Max)}); err != nil {
			t.Errorf("%s %d: %v", k, l.Max, err)
		}
		if _, err := g.SetKeyword(k, []string{fmt.Sprint(l.Max + 1)}); err == nil {
			t.Errorf("%s %d accepted", k, l.Max+1)
		}
	}
}
