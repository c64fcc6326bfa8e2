package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// keepalived 2.2.7's strict mode (global_defs vrrp_strict, or an instance's strict_mode),
// rule by rule as its vrrp_complete_instance applies them, each checked against
// `keepalived -t` of 2.2.7 on the same file: the warning names the line, and the
// instance holds the value keepalived runs with. Lines: with one global_defs line the
// first body line is 7, without global_defs it is 4 (see kaConf).
func TestStrictRules(t *testing.T) {
	const strict = "vrrp_strict"
	tests := []struct {
		name    string
		globals string
		body    string
		line    int    // of the one warning; 0 for none
		want    string // in the warning
		check   func(Instance) bool
	}{
		{"no adjustment needed", strict, "", 0, "", func(in Instance) bool {
			// No accept mode for a non-owner, lower_prio_no_advert on; the rest as usual.
			return in.Strict && !in.AcceptMode && in.LowerPrioNoAdvert && in.Preempt &&
				in.InitialState == StateBackup && in.Priority == 100 && in.Version == vrrp.Version2
		}},
		{"owner keeps accept mode", strict, "priority 255", 0, "", func(in Instance) bool {
			return in.AcceptMode && in.InitialState == StateMaster
		}},
		{"state MASTER of a non-owner", strict, "state MASTER\npriority 100", 7, "state MASTER must match being address owner",
			func(in Instance) bool { return in.InitialState == StateBackup }},
		{"state BACKUP of the owner", strict, "state BACKUP\npriority 255", 7, "state MASTER must match being address owner",
			func(in Instance) bool { return in.InitialState == StateMaster }},
		{"authentication ignored", strict, "authentication {\nauth_type PASS\nauth_pass secret\n}", 7, "strict mode does not support authentication",
			func(in Instance) bool { return in.AuthType == vrrp.AuthNone && in.AuthPass == "" }},
		{"preempt_delay cleared", strict, "preempt_delay 5", 7, "preempt_delay is incompatible with strict mode",
			func(in Instance) bool { return in.PreemptDelay == 0 && in.Preempt }},
		{"v2 accept of a non-owner", strict, "accept", 4, "accept mode for VRRP version 2 does not comply with RFC 3768",
			func(in Instance) bool { return !in.AcceptMode }},
		{"v3 accept of a non-owner stays", strict, "version 3\naccept", 0, "",
			func(in Instance) bool { return in.AcceptMode }},
		{"lower_prio_no_advert cannot be cleared", strict, "lower_prio_no_advert false", 7, "strict mode requires lower_prio_no_advert",
			func(in Instance) bool { return in.LowerPrioNoAdvert }},
		{"first IPv6 VIP not link-local", strict, "virtual_ipaddress {\nfd00:99::1/64\nfe80::1/64\n}", 8, "the first IPv6 VIP address must be link local",
			func(in Instance) bool { return in.Family == IPv6 && len(in.VIPs) == 2 }},
		{"first IPv6 VIP link-local", strict, "virtual_ipaddress {\nfe80::1/64\nfd00:99::1/64\n}", 0, "",
			func(in Instance) bool { return in.Family == IPv6 }},
		{"IPv6 with version 2", strict, "version 2\nvirtual_ipaddress {\nfe80::1/64\n}", 7, "VRRP version 2 cannot carry IPv6",
			func(in Instance) bool { return in.Version == vrrp.Version3 }},
		{"vmac_xmit_base cleared", strict, "use_vmac\nvmac_xmit_base", 7, "vmac_xmit_base is not allowed in strict mode",
			func(in Instance) bool { return in.VMAC.Enabled && !in.VMAC.XmitBase }},
		{"VMAC address ignored", strict, "use_vmac vrrp.51 02:00:00:00:00:01", 7, "a configured VMAC address is not allowed in strict mode",
			func(in Instance) bool { return in.VMAC.Enabled && in.VMAC.MAC == nil && in.VMAC.Interface == "vrrp.51" }},
		// keepalived's man page says strict mode allows no unicast peers, but 2.2.7 tests
		// its unicast flag before setting it from the peers (vrrp.c), so it runs the
		// instance, unicast, without a word: so does vrrpd.
		{"unicast runs as in keepalived 2.2.7", strict, "unicast_src_ip 10.99.0.11\nunicast_peer {\n10.99.0.12\n}", 0, "",
			func(in Instance) bool { return in.Unicast() && in.Strict }},
		{"strict_mode per instance", "", "strict_mode\nstate MASTER\npriority 100", 5, "state MASTER must match being address owner",
			func(in Instance) bool { return in.Strict && in.InitialState == StateBackup && !in.AcceptMode }},
		{"state MASTER without priority is the owner", strict, "state MASTER", 0, "",
			func(in Instance) bool { return in.Priority == 255 && in.InitialState == StateMaster && in.AcceptMode }},
		{"strict_mode on, non-owner", "", "strict_mode on", 0, "",
			func(in Instance) bool { return in.Strict && !in.AcceptMode && in.LowerPrioNoAdvert }},
		{"strict_mode off beats vrrp_strict", strict, "strict_mode off\npreempt_delay 5", 0, "",
			func(in Instance) bool {
				return !in.Strict && in.AcceptMode && !in.LowerPrioNoAdvert && in.PreemptDelay == 5*time.Second
			}},
		{"not strict: MASTER non-owner stays MASTER", "", "state MASTER\npriority 100", 0, "",
			func(in Instance) bool { return !in.Strict && in.InitialState == StateMaster && in.AcceptMode }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, ws := one(t, tt.globals, tt.body)
			switch {
			case tt.line == 0 && len(ws) != 0:
				t.Errorf("want no warning, got %v", ws)
			case tt.line != 0 && len(ws) != 1:
				t.Errorf("want 1 warning, got %v", ws)
			case tt.line != 0 && (ws[0].Pos != Position{File: "t.conf", Line: tt.line} || !strings.Contains(ws[0].Error(), tt.want)):
				t.Errorf("warning %q, want t.conf:%d containing %q", ws[0].Error(), tt.line, tt.want)
			}
			if !tt.check(in) {
				t.Errorf("unexpected instance %+v", in)
			}
		})
	}
}

// The keywords strict mode is made of, and the settings next to it, with keepalived's
// values: an optional boolean for the instance keywords, none for vrrp_strict.
func TestStrictAndAdvertKeywords(t *testing.T) {
	tests := []struct {
		globals, body string
		check         func(Instance) bool
	}{
		{"", "", func(in Instance) bool {
			return !in.Strict && !in.LowerPrioNoAdvert && !in.V3ChecksumAsV2 && !in.OwnerIgnoreAdverts
		}},
		{"", "lower_prio_no_advert", func(in Instance) bool { return in.LowerPrioNoAdvert }},
		{"", "lower_prio_no_advert yes", func(in Instance) bool { return in.LowerPrioNoAdvert }},
		{"vrrp_lower_prio_no_advert", "", func(in Instance) bool { return in.LowerPrioNoAdvert }},
		{"vrrp_lower_prio_no_advert true", "lower_prio_no_advert no", func(in Instance) bool { return !in.LowerPrioNoAdvert }},
		{"", "v3_checksum_as_v2", func(in Instance) bool { return in.V3ChecksumAsV2 }},
		{"v3_checksum_as_v2", "", func(in Instance) bool { return in.V3ChecksumAsV2 }},
		{"v3_checksum_as_v2", "v3_checksum_as_v2 false", func(in Instance) bool { return !in.V3ChecksumAsV2 }},
		{"", "strict_mode true", func(in Instance) bool { return in.Strict }},
		{"vrrp_strict", "strict_mode no", func(in Instance) bool { return !in.Strict }},
	}
	for _, tt := range tests {
		in, ws := one(t, tt.globals, tt.body)
		if len(ws) != 0 || !tt.check(in) {
			t.Errorf("globals %q, body %q: %+v, warnings %v", tt.globals, tt.body, in, ws)
		}
		if sm := in.StateMachineConfig(netip.MustParseAddr("10.99.0.1")); sm.LowerPrioNoAdvert != in.LowerPrioNoAdvert ||
			sm.V3ChecksumAsV2 != in.V3ChecksumAsV2 || sm.OwnerIgnoreAdverts != in.OwnerIgnoreAdverts {
			t.Errorf("globals %q, body %q: state machine config %+v does not carry the instance's", tt.globals, tt.body, sm)
		}
	}
	// keepalived 2.2.7 reports a bad strict_mode or lower_prio_no_advert and goes on
	// without it (TestKeepalivedSkippedValues); v3_checksum_as_v2 is keepalived 2.2.8's,
	// whose value vrrpd keeps refusing.
	for _, body := range []string{"v3_checksum_as_v2 TRUE"} {
		_, _, err := Parse("e.conf", []byte(kaConf("", body)))
		if err == nil || !strings.Contains(err.Error(), "e.conf:4: ") || !strings.Contains(err.Error(), "is not a boolean") {
			t.Errorf("%s: error %v, want one naming e.conf:4", body, err)
		}
	}
	for _, body := range []string{"strict_mode maybe", "lower_prio_no_advert 1"} {
		_, ws, err := Parse("e.conf", []byte(kaConf("", body)))
		if err != nil || len(ws) != 1 || !strings.Contains(ws[0].Error(), "e.conf:4: ") || !strings.Contains(ws[0].Error(), "is not a boolean") {
			t.Errorf("%s: error %v, warnings %v, want a warning naming e.conf:4", body, err, ws)
		}
	}
	if _, ws := one(t, "vrrp_strict 1", ""); len(ws) != 1 || !strings.Contains(ws[0].Error(), "t.conf:2: vrrp_strict takes no value") {
		t.Errorf("vrrp_strict with a value: warnings %v", ws)
	}
}

// keepalived's own shipped keepalived.conf (keepalived 2.2.7
// keepalived/etc/keepalived/keepalived.conf, installed by Debian's keepalived 1:2.2.7 as
// /etc/keepalived/keepalived.conf.sample; copied unchanged) sets vrrp_strict. vrrpd loads
// it to the instance keepalived runs: `keepalived -t` of 2.2.7 says "(VI_1) State MASTER
// must match being address owner" and "(VI_1) Strict mode does not support
// authentication. Ignoring.", and so does vrrpd, on those lines.
func TestStrictShippedSample(t *testing.T) {
	path := fixture.Keepalived("keepalived.conf.sample")
	cfg, ws, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	vip := func(s string) VIP { return VIP{Prefix: netip.MustParsePrefix(s), Dev: "eth0"} }
	garp := DefaultGARP()
	want := Instance{
		Name: "VI_1", Interface: "eth0", Family: IPv4, VRID: 51, Priority: 100, Version: vrrp.Version2,
		AdvertInterval: time.Second, Preempt: true, AcceptMode: false, InitialState: StateBackup,
		MulticastGroup: vrrp.MulticastIPv4, GARP: garp, Strict: true, LowerPrioNoAdvert: true,
		VIPs: []VIP{vip("192.168.200.16/32"), vip("192.168.200.17/32"), vip("192.168.200.18/32")},
	}
	if cfg.RouterID != "LVS_DEVEL" || len(cfg.Instances) != 1 || !cfg.Instances[0].Equal(want) {
		t.Fatalf("got %q %+v\nwant %+v", cfg.RouterID, cfg.Instances, want)
	}
	strictWarnings := map[int]string{
		20: "(VI_1) strict mode: state MASTER must match being address owner",
		25: "(VI_1) strict mode does not support authentication",
	}
	for _, w := range ws {
		if m, ok := strictWarnings[w.Pos.Line]; ok && strings.Contains(w.Message, m) {
			delete(strictWarnings, w.Pos.Line)
			continue
		}
		// The rest are keepalived features vrrpd does not run (mail, virtual servers,
		// vrrp_skip_check_adv_addr): each says so.
		if !strings.Contains(w.Message, "not supported by vrrpd") && !strings.Contains(w.Message, "unknown keyword") {
			t.Errorf("unexpected warning %v", w)
		}
	}
	for line, m := range strictWarnings {
		t.Errorf("no warning %q at line %d; got %v", m, line, ws)
	}
}

// The YAML file's settings of the same meaning: defaults and per instance, the instance
// winning, with strict mode's adjustments warned about on the YAML line.
func TestYAMLStrictAndAdvertSettings(t *testing.T) {
	conf := `defaults:
  strict: true
  v3ChecksumAsV2: true
instances:
- name: A
  interface: eth0
  vrid: 1
  state: MASTER
  vips: [10.0.0.1/24]
- name: B
  interface: eth0
  vrid: 2
  strict: false
  v3ChecksumAsV2: false
  ownerIgnoreAdverts: true
  vips: [10.0.0.2/24]
- name: C
  interface: eth0
  vrid: 3
  lowerPrioNoAdvert: false
  vips: [10.0.0.3/24]
`
	cfg, ws, err := Parse("s.yaml", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := cfg.Instances[0], cfg.Instances[1], cfg.Instances[2]
	if !a.Strict || !a.V3ChecksumAsV2 || !a.LowerPrioNoAdvert || a.OwnerIgnoreAdverts || a.InitialState != StateMaster || a.Priority != 255 {
		t.Errorf("A: %+v", a)
	}
	if b.Strict || b.V3ChecksumAsV2 || b.LowerPrioNoAdvert || !b.OwnerIgnoreAdverts || !b.AcceptMode {
		t.Errorf("B: %+v", b)
	}
	if !c.Strict || !c.LowerPrioNoAdvert || !c.V3ChecksumAsV2 {
		t.Errorf("C: %+v", c)
	}
	if len(ws) != 1 || ws[0].Error() != "s.yaml:20: (C) strict mode requires lower_prio_no_advert; setting it" {
		t.Errorf("warnings %v", ws)
	}
	// keepalived.conf and YAML agree on what strict mode does.
	ka, _, err := Parse("s.conf", []byte(kaConf("vrrp_strict\nv3_checksum_as_v2", "state MASTER\nvirtual_ipaddress {\n10.0.0.1/24\n}")))
	if err != nil {
		t.Fatal(err)
	}
	ka.Instances[0].Name, ka.Instances[0].VRID = "A", 1
	if !ka.Instances[0].Equal(a) {
		t.Errorf("keepalived.conf:\n%+v\nYAML:\n%+v", ka.Instances[0], a)
	}
}

// Kubernetes mode's setter gives what the keyword gives.
func TestDraftSetV3ChecksumAsV2(t *testing.T) {
	d := NewDraft("T", Position{File: "KeepalivedGroup ns/g"})
	d.SetInterface("eth0")
	d.SetVRID(51)
	d.AddVIP(VIP{Prefix: netip.MustParsePrefix("10.99.0.100/24")})
	d.SetV3ChecksumAsV2(true)
	got, ws, err := Resolve(d, DefaultGlobals(), Options{})
	if err != nil || len(ws) != 0 {
		t.Fatal(err, ws)
	}
	want, _ := one(t, "", "v3_checksum_as_v2")
	got.Source = want.Source
	if !got.V3ChecksumAsV2 || !got.Equal(want) {
		t.Errorf("setter:\n%+v\nkeyword:\n%+v", got, want)
	}
}
