package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// one parses a keepalived.conf holding one instance T with the given extra lines (and
// the given global_defs lines), and returns it. It fails the test on an error.
func one(t *testing.T, globals, body string) (Instance, []Warning) {
	t.Helper()
	cfg, ws, err := Parse("t.conf", []byte(kaConf(globals, body)))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Instances) != 1 {
		t.Fatalf("got %d instances", len(cfg.Instances))
	}
	return cfg.Instances[0], ws
}

func kaConf(globals, body string) string {
	s := ""
	if globals != "" {
		s = "global_defs {\n" + globals + "\n}\n"
	}
	if !strings.Contains(body, "virtual_ipaddress ") {
		body += "\nvirtual_ipaddress {\n10.99.0.100/24\n}"
	}
	if !strings.Contains(body, "interface") {
		body = "interface eth0\n" + body
	}
	if !strings.Contains(body, "virtual_router_id") {
		body = "virtual_router_id 51\n" + body
	}
	return s + "vrrp_instance T {\n" + body + "\n}\n"
}

func TestKeepalivedKeywords(t *testing.T) {
	addr := netip.MustParseAddr
	tests := []struct {
		name    string
		globals string
		body    string
		check   func(Instance) bool
	}{
		{"defaults", "", "", func(in Instance) bool {
			return in.Priority == 100 && in.Version == vrrp.Version2 && in.AdvertInterval == time.Second &&
				in.Preempt && in.PreemptDelay == 0 && in.AcceptMode && in.InitialState == StateBackup &&
				in.AuthType == vrrp.AuthNone && in.GARP == DefaultGARP() && in.MulticastGroup == vrrp.MulticastIPv4 &&
				!in.UnicastSrc.IsValid() && !in.Unicast() && in.Family == IPv4
		}},
		{"state MASTER", "", "state MASTER\npriority 200", func(in Instance) bool { return in.InitialState == StateMaster && in.Priority == 200 }},
		{"state MASTER without priority is the owner", "", "state MASTER", func(in Instance) bool { return in.Priority == 255 }},
		{"priority 255 without state starts MASTER", "", "priority 255", func(in Instance) bool { return in.InitialState == StateMaster }},
		{"interface", "", "interface br-lan0", func(in Instance) bool { return in.Interface == "br-lan0" && in.VIPs[0].Dev == "br-lan0" }},
		{"virtual_router_id", "", "virtual_router_id 255", func(in Instance) bool { return in.VRID == 255 }},
		{"priority", "", "priority 1", func(in Instance) bool { return in.Priority == 1 }},
		{"advert_int fractional", "", "version 3\nadvert_int 0.05", func(in Instance) bool { return in.AdvertInterval == 50*time.Millisecond }},
		{"advert_int whole", "", "advert_int 3", func(in Instance) bool { return in.AdvertInterval == 3*time.Second }},
		{"nopreempt", "", "nopreempt", func(in Instance) bool { return !in.Preempt }},
		{"preempt", "", "nopreempt\npreempt", func(in Instance) bool { return in.Preempt }},
		{"preempt_delay", "", "preempt_delay 2.5", func(in Instance) bool { return in.PreemptDelay == 2500*time.Millisecond }},
		{"accept", "", "no_accept\naccept", func(in Instance) bool { return in.AcceptMode }},
		{"no_accept", "", "no_accept", func(in Instance) bool { return !in.AcceptMode }},
		{"unicast", "", "unicast_src_ip 10.99.0.11\nunicast_peer {\n10.99.0.12\n  10.99.0.13\n}", func(in Instance) bool {
			return in.UnicastSrc == addr("10.99.0.11") && len(in.UnicastPeers) == 2 && in.UnicastPeers[1] == addr("10.99.0.13") && in.Unicast()
		}},
		{"mcast_src_ip", "", "mcast_src_ip 10.99.0.11", func(in Instance) bool { return in.UnicastSrc == addr("10.99.0.11") && !in.Unicast() }},
		{"mcast_dst_ip", "", "mcast_dst_ip 224.0.0.99", func(in Instance) bool { return in.MulticastGroup == addr("224.0.0.99") }},
		{"authentication", "", "authentication {\nauth_type PASS\nauth_pass hunter2\n}", func(in Instance) bool {
			return in.AuthType == vrrp.AuthSimple && in.AuthPass == "hunter2" && in.AuthData() == [8]byte{'h', 'u', 'n', 't', 'e', 'r', '2', 0}
		}},
		{"quoted auth_pass", "", "authentication {\nauth_type PASS\nauth_pass \"a b\"\n}", func(in Instance) bool { return in.AuthPass == "a b" }},
		{"virtual_ipaddress forms", "", "virtual_ipaddress {\n10.99.0.100/24\n10.99.0.101\n10.99.0.102/32 dev eth1\n10.99.0.103/24 dev eth1 label eth1:vip\n10.99.0.104/24 label eth0:x\n10.99.0.105/24 scope global\n}", func(in Instance) bool {
			v := in.VIPs
			return len(v) == 6 && v[0] == VIP{netip.MustParsePrefix("10.99.0.100/24"), "eth0", ""} &&
				v[1].Prefix == netip.MustParsePrefix("10.99.0.101/32") &&
				v[2] == VIP{netip.MustParsePrefix("10.99.0.102/32"), "eth1", ""} &&
				v[3] == VIP{netip.MustParsePrefix("10.99.0.103/24"), "eth1", "eth1:vip"} &&
				v[4] == VIP{netip.MustParsePrefix("10.99.0.104/24"), "eth0", "eth0:x"}
		}},
		{"IPv6 VIP without prefix", "", "virtual_ipaddress {\nfd00:99::100\n}", func(in Instance) bool {
			return in.VIPs[0].Prefix == netip.MustParsePrefix("fd00:99::100/128") && in.Family == IPv6 && in.Version == vrrp.Version3 && in.MulticastGroup == vrrp.MulticastIPv6
		}},
		{"virtual_ipaddress_excluded mixes families", "", "virtual_ipaddress_excluded {\n10.99.0.200/24\nfd00:99::200/64 dev eth1\n}", func(in Instance) bool {
			return len(in.VIPs) == 1 && len(in.ExcludedVIPs) == 2 && in.ExcludedVIPs[0].Dev == "eth0" && in.ExcludedVIPs[1] == VIP{netip.MustParsePrefix("fd00:99::200/64"), "eth1", ""}
		}},
		{"version", "", "version 3", func(in Instance) bool { return in.Version == vrrp.Version3 }},
		{"vrrp_version global", "vrrp_version 3", "", func(in Instance) bool { return in.Version == vrrp.Version3 }},
		{"version overrides global", "vrrp_version 3", "version 2", func(in Instance) bool { return in.Version == vrrp.Version2 }},
		{"global garp", "vrrp_garp_master_delay 2\nvrrp_garp_master_repeat 3\nvrrp_garp_master_refresh 60\nvrrp_garp_master_refresh_repeat 2\nvrrp_garp_interval 0.001\nvrrp_gna_interval 0.002", "", func(in Instance) bool {
			return in.GARP == GARP{MasterDelay: 2 * time.Second, MasterRepeat: 3, MasterRefresh: time.Minute, MasterRefreshRepeat: 2, Interval: time.Millisecond, NAInterval: 2 * time.Millisecond}
		}},
		{"instance garp overrides global", "vrrp_garp_master_delay 2\nvrrp_garp_master_repeat 3", "garp_master_delay 0\ngarp_master_repeat 7\ngarp_master_refresh 30\ngarp_master_refresh_repeat 4", func(in Instance) bool {
			return in.GARP == GARP{MasterDelay: 0, MasterRepeat: 7, MasterRefresh: 30 * time.Second, MasterRefreshRepeat: 4, Interval: 0, NAInterval: 0}
		}},
		{"vrrp_mcast_group4", "vrrp_mcast_group4 224.0.0.77", "", func(in Instance) bool { return in.MulticastGroup == addr("224.0.0.77") }},
		{"vrrp_mcast_group6", "vrrp_mcast_group6 ff02::77", "virtual_ipaddress {\nfd00:99::1/64\n}", func(in Instance) bool { return in.MulticastGroup == addr("ff02::77") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, ws := one(t, tt.globals, tt.body)
			if len(ws) > 0 {
				t.Errorf("unexpected warnings: %v", ws)
			}
			if !tt.check(in) {
				t.Errorf("unexpected instance %+v", in)
			}
		})
	}
}

// Adjustments keepalived makes with a message: a warning naming the line, and the value
// keepalived would use.
func TestKeepalivedAdjustmentWarnings(t *testing.T) {
	tests := []struct {
		name    string
		globals string
		body    string
		line    int // of the warning, in the generated file
		want    string
		check   func(Instance) bool
	}{
		{"auth_pass truncated", "", "authentication {\nauth_type PASS\nauth_pass 123456789\n}", 6, "truncating auth_pass to 8 characters",
			func(in Instance) bool { return in.AuthPass == "12345678" }},
		{"v3 with auth", "", "version 3\nauthentication {\nauth_type PASS\nauth_pass x\n}", 5, "VRRP version 3 does not support authentication",
			func(in Instance) bool { return in.AuthType == vrrp.AuthNone && in.AuthPass == "" }},
		{"PASS without password", "", "authentication {\nauth_type PASS\n}", 4, "no password given",
			func(in Instance) bool { return in.AuthType == vrrp.AuthNone }},
		{"v2 advert rounded", "", "advert_int 1.6", 4, "must be whole seconds; rounding to 2s",
			func(in Instance) bool { return in.AdvertInterval == 2*time.Second }},
		{"v2 advert below 1s", "", "advert_int 0.1", 4, "rounding to 1s",
			func(in Instance) bool { return in.AdvertInterval == time.Second }},
		{"v3 advert rounded", "", "version 3\nadvert_int 0.055", 5, "units of 10ms; rounding to 60ms",
			func(in Instance) bool { return in.AdvertInterval == 60*time.Millisecond }},
		{"v3 advert too long", "", "version 3\nadvert_int 50", 5, "out of range; using 40.95s",
			func(in Instance) bool { return in.AdvertInterval == 40950*time.Millisecond }},
		{"IPv6 with version 2", "", "version 2\nvirtual_ipaddress {\nfd00:99::1/64\n}", 4, "VRRP version 2 cannot carry IPv6",
			func(in Instance) bool { return in.Version == vrrp.Version3 }},
		{"nopreempt with priority 255", "", "priority 255\nstate BACKUP\nnopreempt", 6, "nopreempt is incompatible with priority 255",
			func(in Instance) bool { return in.Preempt }},
		{"nopreempt with MASTER", "", "state MASTER\npriority 100\nnopreempt", 6, "nopreempt does not work with initial state MASTER",
			func(in Instance) bool { return in.Preempt }},
		{"preempt_delay with MASTER", "", "state MASTER\npriority 100\npreempt_delay 5", 6, "preempt_delay does not work with initial state MASTER",
			func(in Instance) bool { return in.PreemptDelay == 0 }},
		{"preempt_delay with nopreempt", "", "nopreempt\npreempt_delay 5", 5, "preempt_delay is incompatible with nopreempt",
			func(in Instance) bool { return in.PreemptDelay == 0 && !in.Preempt }},
		{"garp_master_repeat 0", "", "garp_master_repeat 0", 4, "garp_master_repeat must be greater than 0; using 1",
			func(in Instance) bool { return in.GARP.MasterRepeat == 1 }},
		{"vrrp_garp_master_refresh_repeat 0", "vrrp_garp_master_refresh_repeat 0", "", 2, "must be greater than 0",
			func(in Instance) bool { return in.GARP.MasterRefreshRepeat == 1 }},
		{"VIP brd ignored", "", "virtual_ipaddress {\n10.99.0.100/24 brd 10.99.0.255\n}", 5, `option "brd" "10.99.0.255" is not supported`,
			func(in Instance) bool { return len(in.VIPs) == 1 }},
		{"VIP scope link ignored", "", "virtual_ipaddress {\n10.99.0.100/24 scope link\n}", 5, "scope link is not supported",
			func(in Instance) bool { return len(in.VIPs) == 1 }},
		{"extra value", "", "priority 100 200", 4, `priority takes one value; ignoring "200"`,
			func(in Instance) bool { return in.Priority == 100 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, ws := one(t, tt.globals, tt.body)
			if len(ws) != 1 {
				t.Fatalf("want 1 warning, got %v", ws)
			}
			if ws[0].Pos.Line != tt.line || ws[0].Pos.File != "t.conf" || !strings.Contains(ws[0].Error(), tt.want) {
				t.Errorf("warning %q, want line %d containing %q", ws[0].Error(), tt.line, tt.want)
			}
			if !strings.HasPrefix(ws[0].Error(), "t.conf:") {
				t.Errorf("warning text %q does not start with file:line", ws[0].Error())
			}
			if !tt.check(in) {
				t.Errorf("unexpected instance %+v", in)
			}
		})
	}
}

func TestKeepalivedUnknownKeywordsWarn(t *testing.T) {
	conf := `! Configuration File for keepalived
global_defs {
   notification_email {
     admin@example.com
   }
   router_id h1
   vrrp_skip_check_adv_addr
   enable_script_security
}
vrrp_script chk_haproxy {
    script "killall -0 haproxy"
    interval 2
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    track_script {
        chk_haproxy
    }
    smtp_alert
    authentication {
        auth_type PASS
        auth_pass x
        auth_colour blue
    }
    virtual_ipaddress {
        10.99.0.100/24 nodad
    }
}
virtual_server 10.99.0.100 80 {
    real_server 10.99.0.11 80 {
    }
}
frobnicate
`
	cfg, ws, err := Parse("k.conf", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`k.conf:3: "notification_email" block in global_defs is not supported by vrrpd; ignored: no mail is sent`,
		`k.conf:7: unknown keyword "vrrp_skip_check_adv_addr" in global_defs; ignored`,
		`k.conf:20: "smtp_alert" in vrrp_instance VI_1 is not supported by vrrpd; ignored: no mail is sent`,
		`k.conf:24: unknown keyword "auth_colour" in authentication; ignored`,
		`k.conf:27: VIP 10.99.0.100/24: option "nodad" is not supported; ignored`,
		`k.conf:30: "virtual_server" block is not supported by vrrpd; ignored: vrrpd does no load balancing (IPVS)`,
		`k.conf:34: unknown keyword "frobnicate"; ignored`,
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cfg.RouterID != "h1" || len(cfg.Instances) != 1 || cfg.Instances[0].AuthPass != "x" {
		t.Errorf("config not loaded around the warnings: %+v", cfg)
	}
	if len(cfg.Scripts) != 1 || !slices.Equal(cfg.Scripts[0].Command, []string{"killall", "-0", "haproxy"}) ||
		cfg.Scripts[0].Interval != 2*time.Second || !cfg.ScriptSettings.Security ||
		!slices.Equal(cfg.Instances[0].TrackScripts, []TrackScript{{Script: "chk_haproxy"}}) {
		t.Errorf("scripts not loaded: %+v %+v %+v", cfg.Scripts, cfg.ScriptSettings, cfg.Instances[0].TrackScripts)
	}
}

// Every error names file:line and aborts the load: no Config comes back.
// TestKeepalivedSkippedLines: a virtual_ipaddress or unicast_peer line keepalived cannot
// read (alloc_ipaddress, alloc_vrrp_unicast_peer: a bad address, an option without its
// value), it reports and skips, and runs the rest; vrrpd skips it with a warning at its
// line. These were errors before issue 28.
func TestKeepalivedSkippedLines(t *testing.T) {
	for _, tt := range []struct{ name, conf, want string }{
		{"bad VIP", kaConf("", "virtual_ipaddress {\n10.99.0.300/24\n10.99.0.1/24\n}"),
			`e.conf:5: virtual_ipaddress: bad address "10.99.0.300/24" (want addr or addr/prefix); line skipped, as keepalived skips it`},
		{"VIP dev without value", kaConf("", "virtual_ipaddress {\n10.99.0.2/24 dev\n10.99.0.1/24\n}"),
			`e.conf:5: virtual_ipaddress: VIP 10.99.0.2/24: "dev" needs a value; line skipped, as keepalived skips it`},
		{"bad peer", kaConf("", "unicast_peer {\npeer.example\n10.99.0.3\n}"),
			`e.conf:5: unicast_peer: bad IP address "peer.example"; line skipped, as keepalived skips it`},
		{"bad static address", "static_ipaddress {\n10.99.0.300/24 dev eth0\n}\n" + kaConf("", "virtual_ipaddress {\n10.99.0.1/24\n}"),
			`e.conf:2: static_ipaddress: bad address "10.99.0.300/24" (want addr or addr/prefix); line skipped, as keepalived skips it`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ws, err := Parse("e.conf", []byte(tt.conf))
			if err != nil {
				t.Fatal(err)
			}
			if text := FormatWarnings(ws); !strings.Contains(text, tt.want) {
				t.Errorf("warnings:\n%s\nwant %s", text, tt.want)
			}
			in := cfg.Instances[0]
			kept := in.VIPs[0].Prefix.String() == "10.99.0.1/24"
			if strings.Contains(tt.name, "peer") {
				kept = len(in.UnicastPeers) == 1 && in.UnicastPeers[0].String() == "10.99.0.3"
			}
			if len(in.VIPs) != 1 || !kept {
				t.Errorf("the skipped line was kept, or the next one not: %+v %v", in.VIPs, in.UnicastPeers)
			}
		})
	}
}

func TestKeepalivedErrors(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want string // the whole error text
	}{
		{"unbalanced close", "global_defs {\n}\n}\n", `e.conf:3: unexpected "}" with no block open`},
		{"unclosed block", "global_defs {\nrouter_id x\nvrrp_instance A {\ninterface eth0\n", `e.conf:3: missing "}": block of "vrrp_instance" opened here is never closed`},
		{"stray open", "vrrp_instance A {\n}\n{\n}\n", `e.conf:3: unexpected "{" without a keyword before it`},
		{"unterminated quote", "global_defs {\nrouter_id \"h1\n}\n", `e.conf:2: unterminated quoted string`},
		{"missing value", kaConf("", "priority"), `e.conf:4: priority needs a value`},
		// keepalived 2.2.7 skips a bad VRID but then refuses the instance without one
		// (vrrp_complete_instance); bad values keepalived skips and runs without are in
		// TestKeepalivedSkippedValues.
		{"vrid 0", "vrrp_instance A {\ninterface eth0\nvirtual_router_id 0\n}\n", `e.conf:3: virtual_router_id "0" is not a number between 1 and 255`},
		{"vrid 256", "vrrp_instance A {\ninterface eth0\nvirtual_router_id 256\n}\n", `e.conf:3: virtual_router_id "256" is not a number between 1 and 255`},
		{"auth AH", kaConf("", "authentication {\nauth_type AH\n}"), `e.conf:5: auth_type AH (IPsec authentication header) is not supported by vrrpd; use PASS or none`},
		{"auth unknown", kaConf("", "authentication {\nauth_type MD5\n}"), `e.conf:5: unknown auth_type "MD5" (want PASS)`},
		{"vip block missing", kaConf("", "virtual_ipaddress 10.0.0.1"), `e.conf:4: virtual_ipaddress needs a { ... } block`},
		{"instance without name", "vrrp_instance {\n}\n", `e.conf:1: vrrp_instance needs a name`},
		{"global_defs without block", "global_defs\n", `e.conf:1: global_defs needs a { ... } block`},
		{"no interface", "vrrp_instance A {\nvirtual_router_id 1\n}\n", `e.conf:1: (A) no interface given`},
		{"no vrid", "vrrp_instance A {\ninterface eth0\n}\n", `e.conf:1: (A) no virtual router ID given (virtual_router_id, 1..255)`},
		{"v3 without VIP", "vrrp_instance A {\ninterface eth0\nvirtual_router_id 1\nversion 3\n}\n", `e.conf:1: (A) no VIP specified; at least one is required`},
		// keepalived runs a v2 instance without VIPs (TestKeepalivedV2WithoutVIP), except in strict mode.
		{"v2 strict without VIP", "vrrp_instance A {\ninterface eth0\nstrict_mode\nvirtual_router_id 1\nvirtual_ipaddress {\n}\nvirtual_ipaddress_excluded {\n10.0.0.1\n}\n}\n", `e.conf:1: (A) no VIP specified; at least one is required`},
		// The first address written sets the family (keepalived 2.2.7 as vrrpd): here the
		// IPv6 peer or source, so the IPv4 VIP after it is skipped and the instance has
		// none, keepalived's "No VIP specified" (keepalived -t exits 5). The other order
		// is in TestKeepalivedSkippedValues.
		{"peer family", kaConf("", "unicast_peer {\nfd00:99::2\n}"), `e.conf:1: (T) no VIP specified; at least one is required`},
		{"src family", kaConf("", "unicast_src_ip fd00:99::2"), `e.conf:1: (T) no VIP specified; at least one is required`},
		{"bad label", kaConf("", "virtual_ipaddress {\n10.99.0.1/24 label eth1:x\n}"), `e.conf:5: (T) label "eth1:x" must be the device name "eth0" or start with "eth0:"`},
		{"duplicate vrid", kaConf("", "") + strings.Replace(kaConf("", ""), "vrrp_instance T", "vrrp_instance U", 1), `e.conf:9: (U) interface eth0, VRID 51, IPv4 is already used by instance T at e.conf:1`},
		{"include without name", "include\n", `e.conf:1: include needs a file name or pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := Parse("e.conf", []byte(tt.conf))
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("a Config came back with the error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n %s\nwant\n %s", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Pos.File != "e.conf" || e.Pos.Line < 1 {
				t.Errorf("error %v is not a positioned *Error", err)
			}
		})
	}
}

// A bad value keepalived 2.2.7 reports and then runs without (the instance kept, the line
// skipped, its default or earlier value in use) is a warning naming the line and what is
// used instead, and the instance runs with that value. Each case names keepalived's
// handler.
func TestKeepalivedSkippedValues(t *testing.T) {
	skipped := func(line int, msg, instead string) string {
		return "s.conf:" + itoa(line) + ": " + msg + "; line skipped, as keepalived skips it: " + instead
	}
	const prio100 = "using the default priority 100"
	const src = "the source address stays as it was (the interface's by default)"
	tests := []struct {
		name  string
		conf  string
		warn  string
		check func(in Instance) bool
	}{
		// vrrp_prio_handler: "Priority not valid! ... Using default 100".
		{"priority word", kaConf("", "priority high"), skipped(4, `priority "high" is not a number between 1 and 255`, prio100),
			func(in Instance) bool { return in.Priority == 100 }},
		{"priority 0", kaConf("", "priority 0"), skipped(4, `priority "0" is not a number between 1 and 255`, prio100),
			func(in Instance) bool { return in.Priority == 100 }},
		{"priority 256 after a good one", kaConf("", "priority 150\npriority 256"), skipped(5, `priority "256" is not a number between 1 and 255`, prio100),
			func(in Instance) bool { return in.Priority == 100 }},
		// vrrp_adv_handler: "Advert interval (...) not valid! ... - ignoring".
		{"advert_int 0", kaConf("", "advert_int 0"), skipped(4, `advert_int "0" is not a number of seconds between 10ms and 4m15s`, "the advertisement interval stays as it was (1s by default)"),
			func(in Instance) bool { return in.AdvertInterval == time.Second }},
		{"advert_int text after a good one", kaConf("", "advert_int 3\nadvert_int 1,5"), skipped(5, `advert_int "1,5" is not a number of seconds between 10ms and 4m15s`, "the advertisement interval stays as it was (1s by default)"),
			func(in Instance) bool { return in.AdvertInterval == 3*time.Second }},
		// vrrp_version_handler (instance): "Version must be either 2 or 3", return.
		{"version 4", kaConf("vrrp_version 3", "version 4"), skipped(7, `version "4" is not a number between 2 and 3`, "the VRRP version stays as it was (vrrp_version's, 2 by default)"),
			func(in Instance) bool { return in.Version == vrrp.Version3 }},
		// vrrp_version_handler (global_parser.c): "VRRP Error: Version must be either 2 or 3", return.
		{"vrrp_version 1", kaConf("vrrp_version 1", ""), skipped(2, `vrrp_version "1" is not a number between 2 and 3`, "the default version stays 2"),
			func(in Instance) bool { return in.Version == vrrp.Version2 }},
		// vrrp_srcip_handler: "malformed src address[...]. Skipping...".
		{"unicast_src_ip", kaConf("", "unicast_src_ip 10.99.0\nunicast_peer {\n10.99.0.2\n}"), skipped(4, `bad IP address "10.99.0"`, src),
			func(in Instance) bool { return !in.UnicastSrc.IsValid() && len(in.UnicastPeers) == 1 }},
		{"mcast_src_ip after a good one", kaConf("", "mcast_src_ip 10.99.0.1\nmcast_src_ip 10.99.0.x"), skipped(5, `bad IP address "10.99.0.x"`, src),
			func(in Instance) bool { return in.UnicastSrc == netip.MustParseAddr("10.99.0.1") }},
		// vrrp_mcast_dstip_handler: "mcast_dst_ip ... not multicast. Skipping...".
		{"mcast_dst_ip", kaConf("", "mcast_dst_ip 10.0.0.1"), skipped(4, "mcast_dst_ip 10.0.0.1 is not a multicast address", "the instance uses vrrp_mcast_group4/6's group (224.0.0.18 or ff02::12 by default)"),
			func(in Instance) bool { return in.MulticastGroup == netip.MustParseAddr("224.0.0.18") }},
		// vrrp_mcast_group4_handler / _group6_handler: "... is not multicast. Skipping" and
		// "... is not IPv6. Skipping".
		{"vrrp_mcast_group4", kaConf("vrrp_mcast_group4 10.0.0.1", ""), skipped(2, "vrrp_mcast_group4 10.0.0.1 is not an IPv4 multicast address", "the IPv4 multicast group stays as it was (224.0.0.18 by default)"),
			func(in Instance) bool { return in.MulticastGroup == netip.MustParseAddr("224.0.0.18") }},
		{"vrrp_mcast_group6", kaConf("vrrp_mcast_group6 224.0.0.1", "virtual_ipaddress {\nfd00:99::1/64\n}"), skipped(2, "vrrp_mcast_group6 224.0.0.1 is not an IPv6 multicast address", "the IPv6 multicast group stays as it was (ff02::12 by default)"),
			func(in Instance) bool { return in.MulticastGroup == netip.MustParseAddr("ff02::12") }},
		// vrrp_preempt_delay_handler: "Preempt_delay not valid!", set to 0.
		{"preempt_delay", kaConf("", "preempt_delay 5\npreempt_delay 2000"), skipped(5, `preempt_delay "2000" is not a number of seconds between 0s and 16m40s`, "using no delay (0)"),
			func(in Instance) bool { return in.PreemptDelay == 0 }},
		// vrrp_strict_mode_handler, vrrp_lower_prio_no_advert_handler: "invalid ... specified".
		{"strict_mode", kaConf("", "strict_mode maybe"), skipped(4, `strict_mode "maybe" is not a boolean (true, on, yes, false, off or no)`, "strict mode stays as it was (off by default)"),
			func(in Instance) bool { return !in.Strict }},
		{"lower_prio_no_advert", kaConf("", "lower_prio_no_advert\nlower_prio_no_advert 2"), skipped(5, `lower_prio_no_advert "2" is not a boolean (true, on, yes, false, off or no)`, "lower_prio_no_advert stays as it was (off by default)"),
			func(in Instance) bool { return in.LowerPrioNoAdvert }},
		{"vrrp_lower_prio_no_advert", kaConf("vrrp_lower_prio_no_advert x", ""), skipped(2, `vrrp_lower_prio_no_advert "x" is not a boolean (true, on, yes, false, off or no)`, "the default stays as it was (off)"),
			func(in Instance) bool { return !in.LowerPrioNoAdvert }},
		// vrrp_down_timer_adverts_handler (both): "Invalid ... down_timer_adverts [1:100]".
		{"down_timer_adverts", kaConf("vrrp_down_timer_adverts 5", "down_timer_adverts 0"), skipped(7, `down_timer_adverts "0" is not a number between 1 and 100`, "down_timer_adverts stays as it was (vrrp_down_timer_adverts's, 3 by default)"),
			func(in Instance) bool { return in.DownTimerAdverts == 5 }},
		{"vrrp_down_timer_adverts", kaConf("vrrp_down_timer_adverts 101", ""), skipped(2, `vrrp_down_timer_adverts "101" is not a number between 1 and 100`, "the default stays 3"),
			func(in Instance) bool { return in.DownTimerAdverts == 0 }}, // 0: RFC 5798's 3
		// vrrp_srcip_handler, alloc_vrrp_unicast_peer, alloc_vrrp_vip: the first address
		// written sets the family; a later one of the other family is skipped.
		{"source of the other family", kaConf("", "virtual_ipaddress {\n10.99.0.100/24\n}\nunicast_src_ip fd00:99::2"),
			"s.conf:7: (T) source address fd00:99::2 is not IPv4 like the instance (its first address, 10.99.0.100 at s.conf:5); skipped, as keepalived skips it",
			func(in Instance) bool { return in.Family == IPv4 && !in.UnicastSrc.IsValid() }},
		{"peer of the other family", kaConf("", "virtual_ipaddress {\n10.99.0.100/24\n}\nunicast_peer {\n10.99.0.2\nfd00:99::3\n}"),
			"s.conf:9: (T) unicast peer fd00:99::3 is not IPv4 like the instance (its first address, 10.99.0.100 at s.conf:5); skipped, as keepalived skips it",
			func(in Instance) bool {
				return in.Family == IPv4 && slices.Equal(in.UnicastPeers, []netip.Addr{netip.MustParseAddr("10.99.0.2")})
			}},
		{"VIP of the other family", kaConf("", "virtual_ipaddress {\n10.99.0.1/24\nfd00:99::1/64\n}"),
			"s.conf:6: (T) VIP fd00:99::1 is not IPv4 like the instance (its first address, 10.99.0.1 at s.conf:5); skipped, as keepalived skips it",
			func(in Instance) bool {
				return in.Family == IPv4 && len(in.VIPs) == 1 && in.VIPs[0].Prefix == netip.MustParsePrefix("10.99.0.1/24")
			}},
		{"IPv6 source first", kaConf("", "unicast_src_ip fd00:99::2\nvirtual_ipaddress {\nfd00:99::1/64\n10.99.0.1/24\n}"),
			"s.conf:7: (T) VIP 10.99.0.1 is not IPv6 like the instance (its first address, fd00:99::2 at s.conf:4); skipped, as keepalived skips it",
			func(in Instance) bool {
				return in.Family == IPv6 && len(in.VIPs) == 1 && in.UnicastSrc == netip.MustParseAddr("fd00:99::2")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ws, err := Parse("s.conf", []byte(tt.conf))
			if err != nil {
				t.Fatalf("error %v, want the warning\n %s", err, tt.warn)
			}
			var got []string
			for _, w := range ws {
				got = append(got, w.Error())
			}
			if !slices.Contains(got, tt.warn) {
				t.Errorf("warnings\n %s\nwant\n %s", strings.Join(got, "\n "), tt.warn)
			}
			if len(cfg.Instances) != 1 || !tt.check(cfg.Instances[0]) {
				t.Errorf("instances %+v: not the value keepalived uses", cfg.Instances)
			}
		})
	}
	// YAML stays strict: TestYAML* keep these values as errors ("priority range").
}

// Same VRID on another family or interface is fine (keepalived keys on all three).
func TestKeepalivedSameVRIDOtherFamilyOrInterface(t *testing.T) {
	conf := kaConf("", "") +
		strings.Replace(kaConf("", "virtual_ipaddress {\nfd00:99::1/64\n}"), "vrrp_instance T", "vrrp_instance T6", 1) +
		strings.Replace(kaConf("", "interface eth1"), "vrrp_instance T", "vrrp_instance T1", 1)
	cfg, ws, err := Parse("s.conf", []byte(conf))
	if err != nil || len(ws) > 0 {
		t.Fatalf("err %v warnings %v", err, ws)
	}
	if len(cfg.Instances) != 3 {
		t.Fatalf("got %d instances", len(cfg.Instances))
	}
}

// All invalid instances are reported, not just the first.
func TestKeepalivedReportsEveryBadInstance(t *testing.T) {
	conf := "vrrp_instance A {\ninterface eth0\n}\nvrrp_instance B {\nvirtual_router_id 2\n}\n"
	_, _, err := Parse("m.conf", []byte(conf))
	want := "m.conf:1: (A) no virtual router ID given (virtual_router_id, 1..255)\nm.conf:4: (B) no interface given"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want\n%s", err, want)
	}
}

func TestKeepalivedCommentsAndBraces(t *testing.T) {
	conf := `# hash comment
! bang comment
   ! indented comment
global_defs { router_id h1   # trailing comment
 vrrp_version 3 ! trailing bang
}
vrrp_instance VI_1
{
  interface eth0 # comment
  virtual_router_id 51
  priority 100
  unicast_peer { 10.99.0.12 }
  virtual_ipaddress {
    10.99.0.100/24
  } }
`
	cfg, ws, err := Parse("c.conf", []byte(conf))
	if err != nil || len(ws) > 0 {
		t.Fatalf("err %v warnings %v", err, ws)
	}
	in := cfg.Instances[0]
	if cfg.RouterID != "h1" || in.Version != vrrp.Version3 || in.Interface != "eth0" || in.Source.Line != 7 ||
		len(in.UnicastPeers) != 1 || len(in.VIPs) != 1 {
		t.Errorf("got %+v %+v", cfg, in)
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestKeepalivedInclude(t *testing.T) {
	inst := func(name string, vrid int) string {
		return "vrrp_instance " + name + " {\ninterface eth0\nvirtual_router_id " + itoa(vrid) + "\nvirtual_ipaddress {\n10.99.0." + itoa(vrid) + "/24\n}\n}\n"
	}
	dir := writeFiles(t, map[string]string{
		"etc/keepalived.conf":         "global_defs {\ninclude globals.inc\n}\ninclude conf.d/*.conf\ninclude /nonexistent-vrrpd-test/*.conf\n",
		"etc/globals.inc":             "router_id from-include\nvrrp_version 3\n",
		"etc/conf.d/20-b.conf":        inst("B", 20),
		"etc/conf.d/10-a.conf":        inst("A", 10) + "include ../nested/c.inc\n",
		"etc/conf.d/readme.txt":       "not included",
		"etc/nested/c.inc":            inst("C", 30),
		"etc/conf.d/30-d.conf/ignore": "a directory matching the glob is skipped",
	})
	main := filepath.Join(dir, "etc", "keepalived.conf")
	cfg, ws, err := Load(main)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range cfg.Instances {
		names = append(names, in.Name)
	}
	if strings.Join(names, ",") != "A,C,B" {
		t.Errorf("instances %v, want A,C,B (glob sorted, nested include in place)", names)
	}
	if cfg.RouterID != "from-include" || cfg.Instances[0].Version != vrrp.Version3 {
		t.Errorf("include inside global_defs not applied: %+v", cfg)
	}
	if got := cfg.Instances[1].Source; got.File != filepath.Join(dir, "etc", "nested", "c.inc") || got.Line != 1 {
		t.Errorf("C defined at %v", got)
	}
	if len(cfg.Files) != 5 || cfg.Files[0] != main {
		t.Errorf("Files = %v", cfg.Files)
	}
	if len(ws) != 1 || ws[0].Pos != (Position{main, 5}) || !strings.Contains(ws[0].Message, "matches no files") {
		t.Errorf("warnings %v, want one for the include that matches nothing", ws)
	}
}

func TestKeepalivedIncludeErrors(t *testing.T) {
	t.Run("cycle", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.conf": "include b.conf\n", "b.conf": "\ninclude a.conf\n"})
		_, _, err := Load(filepath.Join(dir, "a.conf"))
		want := filepath.Join(dir, "b.conf") + ":2: include cycle: " + filepath.Join(dir, "a.conf") + " includes itself"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})
	t.Run("error in included file names that file", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.conf": "include sub/b.conf\n", "sub/b.conf": "vrrp_instance X {\n  virtual_router_id x\n}\n"})
		_, _, err := Load(filepath.Join(dir, "a.conf"))
		want := filepath.Join(dir, "sub", "b.conf") + `:2: virtual_router_id "x" is not a number between 1 and 255`
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})
	t.Run("directory matched by include is skipped", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.conf": "include sub\n", "sub/x": ""})
		_, ws, err := Load(filepath.Join(dir, "a.conf"))
		if err != nil || len(ws) != 0 {
			t.Errorf("a directory named by include is skipped: err %v ws %v", err, ws)
		}
	})
	t.Run("not a regular file", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.conf": "\ninclude pipe\n"})
		if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
			t.Skip("mkfifo:", err)
		}
		_, _, err := Load(filepath.Join(dir, "a.conf"))
		want := filepath.Join(dir, "a.conf") + ":2: include: " + filepath.Join(dir, "pipe") + " is not a regular file"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})
	t.Run("main file missing", func(t *testing.T) {
		_, _, err := Load(filepath.Join(t.TempDir(), "none.conf"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v, want not-exist", err)
		}
	})
}
