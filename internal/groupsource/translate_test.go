package groupsource

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// testGroup is a group with three member nodes (c has no IPv6 address) and
// three instances: a dual-stack Service, one that node b does not take
// part in, and one VIP of a spreadvips Service.
func testGroup() *v1alpha1.KeepalivedGroup {
	settings := v1alpha1.InstanceSettings{
		Version:        3,
		AdvertInterval: metav1.Duration{Duration: time.Second},
		Preempt:        true,
	}
	return &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lb", Name: "edge"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0"},
		Status: v1alpha1.KeepalivedGroupStatus{
			Nodes: []v1alpha1.GroupNode{
				{Name: "a", Addresses: []string{"10.99.0.1", "fd00:99::1"}},
				{Name: "b", Addresses: []string{"10.99.0.2", "fd00:99::2"}},
				{Name: "c", Addresses: []string{"10.99.0.3"}},
			},
			Instances: []v1alpha1.Instance{
				{Key: "default/dual", VRID: 1, VIPs: []string{"10.99.0.100", "fd00:99::100", "10.99.0.99"}, Settings: settings, Priorities: v1alpha1.EncodePriorities([]uint8{254, 253, 252})},
				{Key: "default/spread/10.99.0.102", VRID: 3, VIPs: []string{"10.99.0.102"}, Settings: settings, Priorities: v1alpha1.EncodePriorities([]uint8{252, 254, 253})},
				{Key: "default/web", VRID: 2, VIPs: []string{"10.99.0.101"}, Settings: settings, Priorities: v1alpha1.EncodePriorities([]uint8{253, 0, 254})},
			},
		},
	}
}

func mustTranslate(t *testing.T, g *v1alpha1.KeepalivedGroup, node string, password []byte, resolve Resolver) (*config.Config, []config.Warning) {
	t.Helper()
	cfg, ws, err := Translate(g, node, password, resolve)
	if err != nil {
		t.Fatalf("Translate(%s): %v", node, err)
	}
	return cfg, ws
}

func names(cfg *config.Config) []string {
	var out []string
	for _, in := range cfg.Instances {
		out = append(out, in.Name)
	}
	return out
}

func pfx(s string) netip.Prefix {
	a := netip.MustParseAddr(s)
	return netip.PrefixFrom(a, a.BitLen())
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func warningsText(ws []config.Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestTranslateSplitsFamilies(t *testing.T) {
	cfg, ws := mustTranslate(t, testGroup(), "a", nil, nil)
	if len(ws) != 0 {
		t.Fatalf("warnings: %s", warningsText(ws))
	}
	if cfg.RouterID != "a" {
		t.Errorf("RouterID = %q, want the node name", cfg.RouterID)
	}
	want := []config.Instance{
		{
			Name: "default/dual/ipv4", Interface: "eth0", Family: config.IPv4, VRID: 1, Priority: 254,
			Version: vrrp.Version3, AdvertInterval: time.Second, Preempt: true, AcceptMode: true,
			InitialState: config.StateBackup, BreakFirstPreempt: true, MulticastGroup: vrrp.MulticastIPv4, GARP: config.DefaultGARP(),
			VIPs: []config.VIP{{Prefix: pfx("10.99.0.99"), Dev: "eth0"}, {Prefix: pfx("10.99.0.100"), Dev: "eth0"}},
		},
		{
			Name: "default/dual/ipv6", Interface: "eth0", Family: config.IPv6, VRID: 1, Priority: 254,
			Version: vrrp.Version3, AdvertInterval: time.Second, Preempt: true, AcceptMode: true,
			InitialState: config.StateBackup, BreakFirstPreempt: true, MulticastGroup: vrrp.MulticastIPv6, GARP: config.DefaultGARP(),
			VIPs: []config.VIP{{Prefix: pfx("fd00:99::100"), Dev: "eth0"}},
		},
		{
			Name: "default/spread/10.99.0.102", Interface: "eth0", Family: config.IPv4, VRID: 3, Priority: 252,
			Version: vrrp.Version3, AdvertInterval: time.Second, Preempt: true, AcceptMode: true,
			InitialState: config.StateBackup, BreakFirstPreempt: true, MulticastGroup: vrrp.MulticastIPv4, GARP: config.DefaultGARP(),
			VIPs: []config.VIP{{Prefix: pfx("10.99.0.102"), Dev: "eth0"}},
		},
		{
			Name: "default/web", Interface: "eth0", Family: config.IPv4, VRID: 2, Priority: 253,
			Version: vrrp.Version3, AdvertInterval: time.Second, Preempt: true, AcceptMode: true,
			InitialState: config.StateBackup, BreakFirstPreempt: true, MulticastGroup: vrrp.MulticastIPv4, GARP: config.DefaultGARP(),
			VIPs: []config.VIP{{Prefix: pfx("10.99.0.101"), Dev: "eth0"}},
		},
	}
	if len(cfg.Instances) != len(want) {
		t.Fatalf("instances %v, want %d", names(cfg), len(want))
	}
	for i, w := range want {
		got := cfg.Instances[i]
		if !got.Equal(w) {
			t.Errorf("instance %d:\n got %+v\nwant %+v", i, got, w)
		}
		if got.Source.File != "KeepalivedGroup lb/edge" {
			t.Errorf("%s: Source = %q", got.Name, got.Source)
		}
	}
	// The daemon's own load would accept these instances: host prefixes,
	// one family each, VIPs on the instance's interface.
	for _, in := range cfg.Instances {
		for _, v := range in.VIPs {
			if v.Prefix.Bits() != v.Prefix.Addr().BitLen() || vrrp.FamilyOf(v.Prefix.Addr()) != in.Family {
				t.Errorf("%s: VIP %s", in.Name, v.Prefix)
			}
		}
	}
}

func TestTranslatePriorities(t *testing.T) {
	g := testGroup()
	for _, tc := range []struct {
		node  string
		want  []string
		prios []uint8
	}{
		// b's priority for default/web is 0: it does not run it.
		{"b", []string{"default/dual/ipv4", "default/dual/ipv6", "default/spread/10.99.0.102"}, []uint8{253, 253, 254}},
		{"c", []string{"default/dual/ipv4", "default/dual/ipv6", "default/spread/10.99.0.102", "default/web"}, []uint8{252, 252, 253, 254}},
	} {
		cfg, _ := mustTranslate(t, g, tc.node, nil, nil)
		if got := names(cfg); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("node %s: instances %v, want %v", tc.node, got, tc.want)
		}
		for i, in := range cfg.Instances {
			if in.Priority != tc.prios[i] {
				t.Errorf("node %s, %s: priority %d, want %d", tc.node, in.Name, in.Priority, tc.prios[i])
			}
		}
	}
}

func TestTranslateNotMember(t *testing.T) {
	for _, g := range []*v1alpha1.KeepalivedGroup{testGroup(), {ObjectMeta: metav1.ObjectMeta{Namespace: "lb", Name: "empty"}}} {
		cfg, ws, err := Translate(g, "stranger", nil, nil)
		if err != nil || len(ws) != 0 {
			t.Fatalf("%s: %v %v", g.Name, err, ws)
		}
		if cfg == nil || len(cfg.Instances) != 0 || cfg.RouterID != "stranger" {
			t.Fatalf("%s: config %+v, want no instances", g.Name, cfg)
		}
	}
	// Every priority 0: a member that takes part in nothing.
	g := testGroup()
	for i := range g.Status.Instances {
		g.Status.Instances[i].Priorities = v1alpha1.EncodePriorities([]uint8{0, 0, 0})
	}
	if cfg, _ := mustTranslate(t, g, "a", nil, nil); len(cfg.Instances) != 0 {
		t.Fatalf("instances %v, want none", names(cfg))
	}
}

func TestTranslateUnicast(t *testing.T) {
	g := testGroup()
	for i := range g.Status.Instances {
		g.Status.Instances[i].Settings.Unicast = true
	}
	type uc struct {
		src   string
		peers []netip.Addr
	}
	for _, tc := range []struct {
		node  string
		want  map[string]uc
		warns []string
	}{
		{"a", map[string]uc{
			"default/dual/ipv4":          {"10.99.0.1", addrs("10.99.0.2", "10.99.0.3")},
			"default/dual/ipv6":          {"fd00:99::1", addrs("fd00:99::2")}, // c has no IPv6 address
			"default/spread/10.99.0.102": {"10.99.0.1", addrs("10.99.0.2", "10.99.0.3")},
			// b does not take part, but stays a peer: it may be a master handing over.
			"default/web": {"10.99.0.1", addrs("10.99.0.2", "10.99.0.3")},
		}, nil},
		{"c", map[string]uc{
			"default/dual/ipv4":          {"10.99.0.3", addrs("10.99.0.1", "10.99.0.2")},
			"default/dual/ipv6":          {"", addrs("fd00:99::1", "fd00:99::2")},
			"default/spread/10.99.0.102": {"10.99.0.3", addrs("10.99.0.1", "10.99.0.2")},
			"default/web":                {"10.99.0.3", addrs("10.99.0.1", "10.99.0.2")},
		}, []string{"(default/dual/ipv6) unicast: node c has no IPv6 address"}},
	} {
		cfg, ws := mustTranslate(t, g, tc.node, nil, nil)
		if len(cfg.Instances) != len(tc.want) {
			t.Fatalf("node %s: instances %v", tc.node, names(cfg))
		}
		for _, in := range cfg.Instances {
			w := tc.want[in.Name]
			var src netip.Addr
			if w.src != "" {
				src = netip.MustParseAddr(w.src)
			}
			if in.UnicastSrc != src || !reflect.DeepEqual(in.UnicastPeers, w.peers) || !in.Unicast() {
				t.Errorf("node %s, %s: source %v peers %v, want %v %v", tc.node, in.Name, in.UnicastSrc, in.UnicastPeers, src, w.peers)
			}
		}
		text := warningsText(ws)
		if len(ws) != len(tc.warns) {
			t.Errorf("node %s: warnings:\n%s", tc.node, text)
		}
		for _, w := range tc.warns {
			if !strings.Contains(text, w) {
				t.Errorf("node %s: no warning %q in:\n%s", tc.node, w, text)
			}
		}
	}

	// Alone in an instance: no peers, which the model can only say as
	// multicast; a warning says so.
	g.Status.Instances = g.Status.Instances[2:]
	g.Status.Nodes = g.Status.Nodes[:1]
	g.Status.Instances[0].Priorities = v1alpha1.EncodePriorities([]uint8{254})
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	if in := cfg.Instances[0]; in.Unicast() || in.UnicastSrc.IsValid() {
		t.Errorf("alone: source %v peers %v", in.UnicastSrc, in.UnicastPeers)
	}
	if !strings.Contains(warningsText(ws), "(default/web) unicast: no other member has an IPv4 address; advertising by multicast") {
		t.Errorf("warnings: %s", warningsText(ws))
	}
}

func TestTranslateInterfaceFromIP(t *testing.T) {
	g := testGroup()
	g.Spec.Interface = "ignored0"
	g.Spec.InterfaceFromIP = "10.99.0.254"
	calls := 0
	resolve := func(ip netip.Addr) (string, error) {
		calls++
		if ip != netip.MustParseAddr("10.99.0.254") {
			return "", fmt.Errorf("unexpected %v", ip)
		}
		return "br-lan", nil
	}
	cfg, _ := mustTranslate(t, g, "a", nil, resolve)
	if calls != 1 {
		t.Errorf("resolver called %d times, want once per translation", calls)
	}
	for _, in := range cfg.Instances {
		if in.Interface != "br-lan" || in.VIPs[0].Dev != "br-lan" {
			t.Errorf("%s: interface %s, VIP dev %s; want br-lan", in.Name, in.Interface, in.VIPs[0].Dev)
		}
	}

	// A node that runs nothing never needs the route.
	calls = 0
	mustTranslate(t, g, "stranger", nil, resolve)
	if calls != 0 {
		t.Errorf("resolver called %d times for a non-member", calls)
	}

	_, _, err := Translate(g, "a", nil, func(netip.Addr) (string, error) { return "", errors.New("network is unreachable") })
	if err == nil || !strings.Contains(err.Error(), "interfaceFromIP 10.99.0.254: network is unreachable") || !strings.Contains(err.Error(), "instance default/dual") {
		t.Fatalf("resolver failure: %v", err)
	}
	if _, _, err := Translate(g, "a", nil, nil); err == nil || !strings.Contains(err.Error(), "interfaceFromIP 10.99.0.254") {
		t.Fatalf("no resolver: %v", err)
	}
}

func TestTranslateVerbatim(t *testing.T) {
	g := testGroup()
	g.Spec.VerbatimConfig = map[string]string{
		"vrrp_garp_master_refresh":        "60",
		"vrrp_garp_master_refresh_repeat": "2",
		"vrrp_garp_interval":              "0.001",
		"vrrp_gna_interval":               "0.002",
		"vrrp_mcast_group4":               "224.0.0.19",
		"vrrp_iptables":                   "my-keepalived",
		"vrrp_garp_master_delay":          "soon",
	}
	g.Status.Instances = g.Status.Instances[:1] // default/dual
	g.Status.Instances[0].Settings.Verbatim = map[string]string{
		"garp_master_delay":  "10",
		"garp_master_repeat": "0",
		"preempt_delay":      "2.5",
		"no_accept":          "",
		"advert_int":         "0.5",
		"mcast_dst_ip":       "ff02::13",
		"track_src_ip":       "",
		"priority":           "200",
	}
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	wantGARP := config.DefaultGARP()
	wantGARP.MasterRefresh = time.Minute
	wantGARP.MasterRefreshRepeat = 2
	wantGARP.Interval = time.Millisecond
	wantGARP.NAInterval = 2 * time.Millisecond
	wantGARP.MasterDelay = 10 * time.Second
	wantGARP.MasterRepeat = 1
	for _, in := range cfg.Instances {
		if in.GARP != wantGARP {
			t.Errorf("%s: GARP %+v, want %+v", in.Name, in.GARP, wantGARP)
		}
		// advert_int is the group's (the API's keyword table): ignored.
		if in.PreemptDelay != 2500*time.Millisecond || in.AcceptMode || !in.Preempt || in.AdvertInterval != time.Second {
			t.Errorf("%s: preempt %v delay %v accept %v interval %v", in.Name, in.Preempt, in.PreemptDelay, in.AcceptMode, in.AdvertInterval)
		}
		if in.Priority != 254 {
			t.Errorf("%s: verbatim priority applied: %d", in.Name, in.Priority)
		}
	}
	if got := cfg.Instances[0].MulticastGroup; got != netip.MustParseAddr("224.0.0.19") {
		t.Errorf("IPv4 multicast group %v, want the group's vrrp_mcast_group4", got)
	}
	if got := cfg.Instances[1].MulticastGroup; got != netip.MustParseAddr("ff02::13") {
		t.Errorf("IPv6 multicast group %v, want the Service's mcast_dst_ip", got)
	}
	want := []string{
		`KeepalivedGroup lb/edge: verbatimConfig vrrp_garp_master_delay "soon" is not a number between 0 and 4294; ignored`,
		`KeepalivedGroup lb/edge: verbatimConfig vrrp_iptables is not supported by vrrpd; ignored`,
		`KeepalivedGroup lb/edge: (default/dual) verbatim advert_int is set by the operator; ignored`,
		`KeepalivedGroup lb/edge: (default/dual) verbatim garp_master_repeat must be greater than 0; using 1`,
		`KeepalivedGroup lb/edge: (default/dual) verbatim priority is set by the operator; ignored`,
		`KeepalivedGroup lb/edge: (default/dual) verbatim track_src_ip is not supported by vrrpd; ignored`,
	}
	if got := strings.Split(strings.TrimSpace(warningsText(ws)), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The group's preempt false clears a Service's preempt_delay with a
	// warning (keepalived's rule); nopreempt is the group's, not the
	// Service's, and changes nothing.
	g.Spec.VerbatimConfig = nil
	g.Status.Instances[0].Settings.Preempt = false
	g.Status.Instances[0].Settings.Verbatim = map[string]string{"preempt": "", "preempt_delay": "5"}
	cfg, ws = mustTranslate(t, g, "a", nil, nil)
	for _, in := range cfg.Instances {
		if in.Preempt || in.PreemptDelay != 0 {
			t.Errorf("%s: preempt %v delay %v, want off and 0", in.Name, in.Preempt, in.PreemptDelay)
		}
	}
	if text := warningsText(ws); !strings.Contains(text, "(default/dual/ipv4) preempt_delay is incompatible with nopreempt; clearing it") ||
		!strings.Contains(text, "(default/dual) verbatim preempt is set by the operator; ignored") {
		t.Errorf("warnings: %s", warningsText(ws))
	}
}

func TestTranslateAuth(t *testing.T) {
	g := testGroup()
	g.Status.Instances = g.Status.Instances[1:] // IPv4 only
	pa := &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "vrrp-pass"}}
	for i := range g.Status.Instances {
		g.Status.Instances[i].Settings.Version = 2
		g.Status.Instances[i].Settings.PasswordAuth = pa
	}

	// A Secret written with a trailing newline, longer than 8 bytes:
	// trimmed and truncated as keepalived reads auth_pass.
	cfg, ws := mustTranslate(t, g, "a", []byte("secretpassword\n"), nil)
	for _, in := range cfg.Instances {
		if in.AuthType != vrrp.AuthSimple || in.AuthPass != "secretpa" || in.Version != vrrp.Version2 {
			t.Errorf("%s: auth %v %q version %d", in.Name, in.AuthType, in.AuthPass, in.Version)
		}
	}
	if len(ws) != 2 || !strings.Contains(ws[0].Message, "truncating password to 8 characters") {
		t.Errorf("warnings: %s", warningsText(ws))
	}
	cfg, ws = mustTranslate(t, g, "a", []byte("s3cret"), nil)
	if cfg.Instances[0].AuthPass != "s3cret" || len(ws) != 0 {
		t.Errorf("short password: %q, %s", cfg.Instances[0].AuthPass, warningsText(ws))
	}

	// No password for a VRRPv2 instance that needs one: an error, not an
	// instance running without authentication.
	for _, pw := range [][]byte{nil, []byte(" \n")} {
		_, _, err := Translate(g, "a", pw, nil)
		if err == nil || !strings.Contains(err.Error(), `(default/spread/10.99.0.102) passwordAuth: no password in Secret vrrp-pass key "password"`) {
			t.Errorf("password %q: %v", pw, err)
		}
	}

	// VRRPv3 has no authentication: ignored with a warning, no password needed.
	for i := range g.Status.Instances {
		g.Status.Instances[i].Settings.Version = 3
	}
	cfg, ws = mustTranslate(t, g, "a", nil, nil)
	if cfg.Instances[0].AuthType != vrrp.AuthNone || !strings.Contains(warningsText(ws), "VRRP version 3 does not support authentication") {
		t.Errorf("v3: auth %v, warnings %s", cfg.Instances[0].AuthType, warningsText(ws))
	}
}

func TestTranslateVersionAndInterval(t *testing.T) {
	g := testGroup()
	g.Status.Instances = g.Status.Instances[:1] // default/dual
	g.Status.Instances[0].Settings.Version = 2
	g.Status.Instances[0].Settings.AdvertInterval.Duration = 1500 * time.Millisecond
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	v4, v6 := cfg.Instances[0], cfg.Instances[1]
	if v4.Version != vrrp.Version2 || v4.AdvertInterval != 2*time.Second {
		t.Errorf("IPv4: version %d interval %v, want 2 and 2s", v4.Version, v4.AdvertInterval)
	}
	if v6.Version != vrrp.Version3 || v6.AdvertInterval != 1500*time.Millisecond {
		t.Errorf("IPv6: version %d interval %v, want 3 and 1.5s", v6.Version, v6.AdvertInterval)
	}
	text := warningsText(ws)
	for _, w := range []string{
		"(default/dual/ipv4) VRRPv2 advertisement interval 1.5s must be whole seconds; rounding to 2s",
		"(default/dual/ipv6) VRRP version 2 cannot carry IPv6; using version 3",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("no warning %q in:\n%s", w, text)
		}
	}

	// Settings the API server would default: version 3, 1s.
	g.Status.Instances[0].Settings = v1alpha1.InstanceSettings{}
	cfg, _ = mustTranslate(t, g, "a", nil, nil)
	if in := cfg.Instances[0]; in.Version != vrrp.Version3 || in.AdvertInterval != time.Second {
		t.Errorf("zero settings: version %d interval %v", in.Version, in.AdvertInterval)
	}
}

// TestTranslateErrors: a status vrrpd cannot run. What is wrong with one instance drops
// that instance with a warning naming it, and the group's others run; what is wrong with
// the group (its interface, its members) is an error, and nothing applies.
func TestTranslateErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(g *v1alpha1.KeepalivedGroup)
		dropped string // the instance key dropped; "" for an error of the whole group
		want    string
	}{
		{"priorities not base64", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].Priorities = "not base64!" },
			"default/web", `instance default/web: priorities "not base64!": not base64`},
		{"priorities too few", func(g *v1alpha1.KeepalivedGroup) {
			g.Status.Instances[0].Priorities = v1alpha1.EncodePriorities([]uint8{254, 253})
		}, "default/dual", "instance default/dual: priorities \"/v0=\": 2 values for 3 nodes"},
		{"priority 255", func(g *v1alpha1.KeepalivedGroup) {
			g.Status.Instances[1].Priorities = v1alpha1.EncodePriorities([]uint8{1, 255, 2})
		}, "default/spread/10.99.0.102", "instance default/spread/10.99.0.102: priorities \"Af8C\": value 255 for node 1"},
		{"bad VIP", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VIPs = []string{"10.99.0.300"} },
			"default/web", `instance default/web: bad VIP "10.99.0.300"`},
		{"multicast VIP", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VIPs = []string{"224.0.0.18"} },
			"default/web", `instance default/web: VIP 224.0.0.18 is a multicast address, not a host address`},
		{"unspecified VIP", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VIPs = []string{"::"} },
			"default/web", `instance default/web: VIP :: is the unspecified address, not a host address`},
		{"loopback VIP", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VIPs = []string{"10.99.0.101", "127.0.0.1"} },
			"default/web", `instance default/web: VIP 127.0.0.1 is a loopback address`},
		{"link-local VIP", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VIPs = []string{"169.254.169.254"} },
			"default/web", `instance default/web: VIP 169.254.169.254 is an IPv4 link-local address`},
		{"broadcast VIP", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VIPs = []string{"255.255.255.255"} },
			"default/web", `instance default/web: VIP 255.255.255.255 is the broadcast address`},
		{"one VIP twice", func(g *v1alpha1.KeepalivedGroup) {
			g.Status.Instances[2].VIPs = []string{"10.99.0.101", "::ffff:10.99.0.101"}
		}, "default/web", `(default/web) address 10.99.0.101 is listed twice`},
		{"no VIPs", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VIPs = nil },
			"default/web", `instance default/web: no VIPs`},
		{"VRID 0", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VRID = 0 },
			"default/web", `instance default/web: VRID 0 is outside 1..255`},
		{"VRID 256", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VRID = 256 },
			"default/web", `instance default/web: VRID 256 is outside 1..255`},
		{"version 4", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].Settings.Version = 4 },
			"default/web", `instance default/web: VRRP version 4 is neither 2 nor 3`},
		{"one VRID twice", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[2].VRID = 3 },
			"default/web", `(default/web) interface eth0, VRID 3, IPv4 is already used by instance default/spread/10.99.0.102`},
		{"one key twice", func(g *v1alpha1.KeepalivedGroup) { g.Status.Instances[1].Key = "default/web" },
			"", `instance default/web: listed twice`},
		{"no interface", func(g *v1alpha1.KeepalivedGroup) { g.Spec.Interface = "" },
			"", `instance default/dual: the group sets neither interface nor interfaceFromIP`},
		{"bad node address", func(g *v1alpha1.KeepalivedGroup) { g.Status.Nodes[2].Addresses = []string{"fe80::1%eth0"} },
			"", `node c: bad address "fe80::1%eth0"`},
	} {
		g := testGroup()
		all, _ := mustTranslate(t, testGroup(), "a", nil, nil)
		tc.mutate(g)
		cfg, ws, err := Translate(g, "a", nil, nil)
		if tc.name == "one key twice" {
			// Two status entries under one key: the second is dropped, and the
			// instance the first describes runs.
			if err != nil || !warned(ws, tc.want) || len(cfg.Instances) != len(all.Instances)-1 {
				t.Errorf("%s: error %v, warnings %v, %d instances", tc.name, err, ws, len(cfg.Instances))
			}
			continue
		}
		if tc.dropped == "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: config %v, error %v; want %q", tc.name, cfg, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: the whole group fails: %v", tc.name, err)
			continue
		}
		if !warned(ws, tc.want) {
			t.Errorf("%s: no warning %q in %v", tc.name, tc.want, ws)
		}
		var names, want []string
		for _, in := range cfg.Instances {
			names = append(names, in.Name)
		}
		for _, in := range all.Instances {
			if in.Name != tc.dropped && !strings.HasPrefix(in.Name, tc.dropped+"/ipv") {
				want = append(want, in.Name)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: instances %v, want %v (all but %s)", tc.name, names, want, tc.dropped)
		}
	}
	if _, _, err := Translate(nil, "a", nil, nil); err == nil {
		t.Error("nil group: no error")
	}
}

// TestTranslateDeterministic: the order of the status lists and of map
// iteration never shows in the output.
func TestTranslateDeterministic(t *testing.T) {
	base := testGroup()
	base.Spec.VerbatimConfig = map[string]string{"a": "1", "b": "2", "c": "3", "vrrp_garp_master_delay": "1"}
	for i := range base.Status.Instances {
		base.Status.Instances[i].Settings.Unicast = true
		base.Status.Instances[i].Settings.Verbatim = map[string]string{"x": "", "y": "", "z": "", "garp_master_repeat": "3", "nopreempt": ""}
	}
	want, wantWs := mustTranslate(t, base, "a", nil, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		g := base.DeepCopy()
		rng.Shuffle(len(g.Status.Instances), func(i, j int) {
			g.Status.Instances[i], g.Status.Instances[j] = g.Status.Instances[j], g.Status.Instances[i]
		})
		for i := range g.Status.Instances {
			vips := g.Status.Instances[i].VIPs
			rng.Shuffle(len(vips), func(a, b int) { vips[a], vips[b] = vips[b], vips[a] })
		}
		got, ws := mustTranslate(t, g, "a", nil, nil)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ws, wantWs) {
			t.Fatalf("output differs:\n%+v\n%+v", got, want)
		}
	}
}

// FuzzTranslate: whatever the status holds, Translate does not panic, and
// every configuration it accepts is one the VRRP state machine accepts.
func FuzzTranslate(f *testing.F) {
	f.Add("/v0B", "10.99.0.100", "fd00:99::100", "10.99.0.1", int32(3), int64(time.Second), true, "garp_master_delay", "5", []byte("s3cret"), 7)
	f.Add("AAAA", "::ffff:10.99.0.1", "", "", int32(2), int64(1500*time.Millisecond), false, "advert_int", "0.05", []byte(""), 0)
	f.Add("////", "10.99.0.100", "10.99.0.100", "fd00:99::1", int32(0), int64(0), true, "nopreempt", "x", []byte("0123456789"), 255)
	f.Fuzz(func(t *testing.T, prios, vip1, vip2, addr string, version int32, interval int64, unicast bool, vk, vv string, password []byte, vrid int) {
		g := testGroup()
		g.Status.Nodes[0].Addresses = []string{addr, "fd00:99::1"}
		in := &g.Status.Instances[0]
		in.Priorities = prios
		in.VIPs = []string{vip1, vip2}
		in.VRID = vrid
		in.Settings = v1alpha1.InstanceSettings{
			Version:        version,
			AdvertInterval: metav1.Duration{Duration: time.Duration(interval)},
			Unicast:        unicast,
			Verbatim:       map[string]string{vk: vv},
			PasswordAuth:   &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "p"}},
		}
		g.Spec.VerbatimConfig = map[string]string{"vrrp_" + vk: vv}
		cfg, _, err := Translate(g, "a", password, nil)
		if err != nil {
			return
		}
		for _, c := range cfg.Instances {
			primary := netip.MustParseAddr("10.99.0.1")
			if c.Family == config.IPv6 {
				primary = netip.MustParseAddr("fe80::1")
			}
			if err := c.StateMachineConfig(primary).Validate(); err != nil {
				t.Fatalf("%s: translated config rejected by the state machine: %v\n%+v", c.Name, err, c)
			}
			for _, v := range append(c.VIPs, c.ExcludedVIPs...) {
				if v.Dev != c.Interface || v.Prefix.Bits() != v.Prefix.Addr().BitLen() || vrrp.FamilyOf(v.Prefix.Addr()) != c.Family {
					t.Fatalf("%s: VIP %+v", c.Name, v)
				}
			}
			for _, p := range c.UnicastPeers {
				if vrrp.FamilyOf(p) != c.Family {
					t.Fatalf("%s: peer %v of the wrong family", c.Name, p)
				}
			}
		}
	})
}

// TestTranslateVerbatimIgnored: what vrrpd ignores of a Service's verbatim
// keywords, it names: a keyword that would run a program, a bad value, and
// an mcast_dst_ip of a family the instance has no VIP of.
func TestTranslateVerbatimIgnored(t *testing.T) {
	g := testGroup()
	g.Status.Instances = g.Status.Instances[2:] // default/web, IPv4 only
	g.Status.Instances[0].Settings.Verbatim = map[string]string{
		"notify_master":  "/bin/true",
		"preempt_delay":  "soon",
		"mcast_dst_ip":   "ff02::13",
		"unicast_src_ip": "10.99.0.9",
		"use_vmac":       "",
		"vmac_xmit_base": "",
	}
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	in := cfg.Instances[0]
	if in.PreemptDelay != 0 || in.MulticastGroup != vrrp.MulticastIPv4 || in.Unicast() || in.UnicastSrc.IsValid() || in.VMAC.Enabled {
		t.Errorf("ignored keywords applied: %+v", in)
	}
	want := []string{
		`(default/web) verbatim mcast_dst_ip ff02::13: the instance has no IPv6 VIP; ignored`,
		`(default/web) verbatim notify_master would run a program, which vrrpd never does on a Service's say; ignored`,
		`(default/web) verbatim preempt_delay "soon" is not a number of seconds between`,
		`(default/web) verbatim unicast_src_ip is set by the operator; ignored`,
		`(default/web) verbatim use_vmac is the group's decision (spec.useVMAC of the KeepalivedGroup), not a Service's; ignored`,
		`(default/web) verbatim vmac_xmit_base is the group's decision (spec.vmacXmitBase of the KeepalivedGroup), not a Service's; ignored`,
	}
	text := warningsText(ws)
	if len(ws) != len(want) {
		t.Errorf("warnings:\n%s", text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("no warning %q in:\n%s", w, text)
		}
	}
}

// The group's v3ChecksumAsV2 (copied into each instance's settings) reaches
// every virtual router of both families; global_defs' vrrp_strict in
// spec.verbatimConfig applies keepalived's strict rules to all of them, a
// Service's strict_mode to its own; the keepalived keyword for the checksum
// is the group field's to decide.
func TestTranslateChecksumAndStrict(t *testing.T) {
	g := testGroup()
	for i := range g.Status.Instances {
		g.Status.Instances[i].Settings.V3ChecksumAsV2 = true
	}
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	if len(ws) != 0 {
		t.Errorf("warnings:\n%s", warningsText(ws))
	}
	for _, in := range cfg.Instances {
		sm := in.StateMachineConfig(netip.MustParseAddr("10.99.0.1"))
		if !in.V3ChecksumAsV2 || sm.SendChecksumForm() != vrrp.ChecksumNoPseudoHeader {
			t.Errorf("%s: V3ChecksumAsV2 %v, sends %v", in.Name, in.V3ChecksumAsV2, sm.SendChecksumForm())
		}
		if in.Strict || !in.AcceptMode || in.LowerPrioNoAdvert {
			t.Errorf("%s: strict without being asked: %+v", in.Name, in)
		}
	}

	g = testGroup()
	g.Spec.VerbatimConfig = map[string]string{"vrrp_strict": "", "v3_checksum_as_v2": ""}
	cfg, ws = mustTranslate(t, g, "a", nil, nil)
	for _, in := range cfg.Instances {
		if !in.Strict || in.AcceptMode || !in.LowerPrioNoAdvert || in.V3ChecksumAsV2 {
			t.Errorf("%s: vrrp_strict not applied, or v3_checksum_as_v2 applied: %+v", in.Name, in)
		}
	}
	// keepalived says the same of a Service's global IPv6 VIP in strict mode.
	if text := warningsText(ws); len(ws) != 2 || !strings.Contains(text, "verbatimConfig v3_checksum_as_v2 is ignored: the group's v3ChecksumAsV2 decides") ||
		!strings.Contains(text, "(default/dual/ipv6) strict mode: the first IPv6 VIP address must be link local") {
		t.Errorf("warnings:\n%s", text)
	}

	g = testGroup()
	g.Status.Instances[2].Settings.Verbatim = map[string]string{"strict_mode": "", "lower_prio_no_advert": "off"}
	cfg, ws = mustTranslate(t, g, "a", nil, nil)
	for _, in := range cfg.Instances {
		if want := in.Name == "default/web"; in.Strict != want || in.LowerPrioNoAdvert != want {
			t.Errorf("%s: strict %v lower_prio_no_advert %v, want %v", in.Name, in.Strict, in.LowerPrioNoAdvert, want)
		}
	}
	if text := warningsText(ws); len(ws) != 1 || !strings.Contains(text, "(default/web) strict mode requires lower_prio_no_advert; setting it") {
		t.Errorf("warnings:\n%s", text)
	}
}

// TestTranslateHandoverOnly: the takeover settings the operator writes while
// keepalived-operator's pods run reach the state machine.
func TestTranslateHandoverOnly(t *testing.T) {
	g := testGroup()
	for i := range g.Status.Instances {
		s := &g.Status.Instances[i].Settings
		s.Version, s.Preempt, s.HandoverOnly = 2, false, true
		g.Status.Instances[i].VIPs = []string{"10.99.0.10" + fmt.Sprint(i)}
	}
	cfg, _ := mustTranslate(t, g, "a", nil, nil)
	if len(cfg.Instances) != 3 {
		t.Fatalf("instances %v, want 3", names(cfg))
	}
	for _, in := range cfg.Instances {
		sm := in.StateMachineConfig(netip.MustParseAddr("10.99.0.1"))
		if !in.HandoverOnly || !sm.HandoverOnly || sm.Version != vrrp.Version2 || sm.Preempt {
			t.Errorf("%s: handoverOnly %v/%v version %v preempt %v, want true/true 2 false", in.Name, in.HandoverOnly, sm.HandoverOnly, sm.Version, sm.Preempt)
		}
	}
	g.Status.Instances[0].Settings.HandoverOnly = false
	cfg, _ = mustTranslate(t, g, "a", nil, nil)
	if cfg.Instances[0].HandoverOnly {
		t.Errorf("%s: handoverOnly without the setting", cfg.Instances[0].Name)
	}
}

// warned reports whether a warning contains want.
func warned(ws []config.Warning, want string) bool {
	return slices.ContainsFunc(ws, func(w config.Warning) bool { return strings.Contains(w.Error(), want) })
}

// TestTranslateVerbatimBounds: a verbatim number beyond its limit (a Service's
// garp_master_repeat of 2^31-1, a group's global one) is ignored with a warning, the
// instance runs on keepalived's default, and the rest of the group is untouched.
func TestTranslateVerbatimBounds(t *testing.T) {
	g := testGroup()
	g.Spec.VerbatimConfig = map[string]string{"vrrp_garp_master_refresh_repeat": "100000"}
	g.Status.Instances[2].Settings.Verbatim = map[string]string{"garp_master_repeat": "2147483647", "garp_master_delay": "1"}
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	in, ok := cfg.Instance("default/web")
	if !ok {
		t.Fatalf("default/web not running: %v", names(cfg))
	}
	if in.GARP.MasterRepeat != config.DefaultGARPMasterRepeat || in.GARP.MasterDelay != time.Second || in.GARP.MasterRefreshRepeat != config.DefaultGARPRefreshRepeat {
		t.Errorf("GARP %+v: want the default repeats and the valid delay", in.GARP)
	}
	for _, w := range []string{
		`(default/web) verbatim garp_master_repeat "2147483647" is not a number between 0 and 255; ignored`,
		`verbatimConfig vrrp_garp_master_refresh_repeat "100000" is not a number between 0 and 255; ignored`,
	} {
		if !warned(ws, w) {
			t.Errorf("no warning %q in %v", w, ws)
		}
	}
}

// The group's useVMAC (copied into each instance's settings) runs every virtual router,
// of both families, with keepalived's use_vmac without arguments; the group's
// vmacXmitBase (in the settings of default/web here) completes it.
func TestTranslateUseVMAC(t *testing.T) {
	g := testGroup()
	for i := range g.Status.Instances {
		g.Status.Instances[i].Settings.UseVMAC = true
	}
	g.Status.Instances[2].Settings.VMACXmitBase = true
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	if len(ws) != 0 {
		t.Errorf("warnings:\n%s", warningsText(ws))
	}
	if len(cfg.Instances) < 3 {
		t.Fatalf("instances %+v", cfg.Instances)
	}
	for _, in := range cfg.Instances {
		if !in.VMAC.Enabled || in.VMAC.Interface != "" || in.VMAC.MAC != nil || in.VMAC.XmitBase != (in.Name == "default/web") {
			t.Errorf("%s: VMAC %+v", in.Name, in.VMAC)
		}
	}
}

// TestTranslateStartDelay: each instance starts StartDelayStep later per member node
// ranked above this one (a node that does not run it does not count), up to
// StartDelayRanks steps; the best-ranked node starts without delay.
func TestTranslateStartDelay(t *testing.T) {
	g := testGroup()
	step := StartDelayStep
	for node, want := range map[string]map[string]time.Duration{
		// default/dual: 254, 253, 252; spread: 252, 254, 253; web: 253, 0 (b), 254.
		"a": {"default/dual/ipv4": 0, "default/dual/ipv6": 0, "default/spread/10.99.0.102": 2 * step, "default/web": step},
		"c": {"default/dual/ipv4": 2 * step, "default/dual/ipv6": 2 * step, "default/spread/10.99.0.102": step, "default/web": 0},
	} {
		cfg, _ := mustTranslate(t, g, node, nil, nil)
		if len(cfg.Instances) != len(want) {
			t.Fatalf("node %s: %d instances, want %d", node, len(cfg.Instances), len(want))
		}
		for _, in := range cfg.Instances {
			if in.StartDelay != want[in.Name] {
				t.Errorf("node %s, %s: start delay %v, want %v", node, in.Name, in.StartDelay, want[in.Name])
			}
		}
	}
	// A shared router (issue 31) steps SharedStartDelayStep a rank.
	g.Status.Instances = append(g.Status.Instances, v1alpha1.Instance{Key: "@default/b,c", VRID: 4, VIPs: []string{"10.99.0.110", "10.99.0.111"},
		Settings: g.Status.Instances[0].Settings, Priorities: v1alpha1.EncodePriorities([]uint8{79, 254, 204})})
	for node, want := range map[string]time.Duration{"a": 2 * SharedStartDelayStep, "b": 0, "c": SharedStartDelayStep} {
		cfg, _ := mustTranslate(t, g, node, nil, nil)
		i := slices.IndexFunc(cfg.Instances, func(in config.Instance) bool { return in.Name == "@default/b,c" })
		if i < 0 {
			t.Fatalf("node %s: no shared router in %v", node, names(cfg))
		}
		if got := cfg.Instances[i].StartDelay; got != want {
			t.Errorf("node %s, the shared router: start delay %v, want %v", node, got, want)
		}
	}
	prios := []uint8{254, 204, 79, 29, 3, 2, 1}
	for self, want := range []time.Duration{0, step, 2 * step, 3 * step, 4 * step, 4 * step, 4 * step} {
		if got := startDelay(prios, self, step); got != want {
			t.Errorf("rank %d of 7: start delay %v, want %v", self, got, want)
		}
	}
}
