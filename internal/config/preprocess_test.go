package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseID parses conf as keepalived.conf file "p.conf" on the router with config id id.
func parseID(t *testing.T, id, conf string) (*Config, []string) {
	t.Helper()
	cfg, ws, err := ParseWith("p.conf", []byte(conf), LoadOptions{ConfigID: id})
	if err != nil {
		t.Fatalf("ParseWith: %v", err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Error())
	}
	return cfg, got
}

func vipList(in Instance) string {
	var s []string
	for _, v := range in.VIPs {
		s = append(s, v.Prefix.String())
	}
	return strings.Join(s, " ")
}

// keepalived's doc/samples/keepalived.conf.conditional_conf, reduced to what vrrpd runs:
// "@ID" lines apply on the router with that config id, "@^ID" on every other.
func TestPreprocessConditionalLines(t *testing.T) {
	conf := `vrrp_instance VI_0 {
	state BACKUP
	interface eth0
	virtual_router_id 1
@high	priority 170
@low	priority 85
@^high	advert_int 2
@high
	virtual_ipaddress {
		10.1.0.254/32
	}
}
`
	for id, want := range map[string]struct {
		prio   uint8
		advert string
	}{"high": {170, "1s"}, "low": {85, "2s"}, "other": {100, "2s"}} {
		t.Run(id, func(t *testing.T) {
			cfg, ws := parseID(t, id, conf)
			in := cfg.Instances[0]
			if in.Priority != want.prio || in.AdvertInterval.String() != want.advert {
				t.Errorf("priority %d advert %v, want %d %s", in.Priority, in.AdvertInterval, want.prio, want.advert)
			}
			if len(ws) > 0 {
				t.Errorf("warnings: %v", ws)
			}
		})
	}
}

func TestPreprocessParameters(t *testing.T) {
	conf := `$IF=eth1
$VRID=42
@high $PRIO=150
@^high $PRIO=50
$VIPS=10.0.0.1/24 \
	10.0.0.2/24 \
	10.0.0.3/24
vrrp_instance VI_${VRID} {
	interface $IF
	virtual_router_id ${VRID}
	priority $PRIO
	virtual_ipaddress {
		$VIPS
	}
}
`
	cfg, ws := parseID(t, "high", conf)
	in := cfg.Instances[0]
	if in.Name != "VI_42" || in.Interface != "eth1" || in.VRID != 42 || in.Priority != 150 {
		t.Errorf("instance %s on %s VRID %d priority %d", in.Name, in.Interface, in.VRID, in.Priority)
	}
	if got := vipList(in); got != "10.0.0.1/24 10.0.0.2/24 10.0.0.3/24" {
		t.Errorf("VIPs %s", got)
	}
	if len(ws) > 0 {
		t.Errorf("warnings: %v", ws)
	}
	cfg, _ = parseID(t, "low", conf)
	if p := cfg.Instances[0].Priority; p != 50 {
		t.Errorf("low: priority %d", p)
	}
}

// ~SEQ repeats the rest of its line; a multi-line parameter there repeats a whole block.
// Checked against keepalived 2.2.7 (its -d dump): a comment line ends a multi-line
// definition, and "$NAME = value" (a blank before '=') is no definition at all.
func TestPreprocessDefinitionEnds(t *testing.T) {
	conf := "$VIPS=10.0.0.1/24 \\\n# a comment\n10.0.0.2/24\n$X = 1\n" + kaConf("", "virtual_ipaddress {\n$VIPS\n}")
	cfg, ws := parseID(t, "h", conf)
	if got := vipList(cfg.Instances[0]); got != "10.0.0.1/24" {
		t.Errorf("VIPs %s", got)
	}
	want := []string{
		`p.conf:4: parameter $X is not defined; the text "$X" is used as it is, as keepalived does`,
		`p.conf:3: unknown keyword "10.0.0.2/24"; ignored`,
		`p.conf:4: unknown keyword "$X"; ignored`,
	}
	if strings.Join(ws, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(ws, "\n"), strings.Join(want, "\n"))
	}
}

func TestPreprocessSeq(t *testing.T) {
	conf := `$INST=vrrp_instance VI_${i} { \
	interface eth0 \
	virtual_router_id $i \
	priority ${PRIO} \
	virtual_ipaddress { \
		10.0.0.${i}/24 \
	} \
}
$PRIO=77
~SEQ(i, 1, 3) $INST
~SEQ(i, 10, 5, 20) $INST
`
	cfg, ws := parseID(t, "h", conf)
	var got []string
	for _, in := range cfg.Instances {
		got = append(got, fmt.Sprintf("%s/%d/%d/%s", in.Name, in.VRID, in.Priority, vipList(in)))
	}
	want := "VI_1/1/77/10.0.0.1/24 VI_2/2/77/10.0.0.2/24 VI_3/3/77/10.0.0.3/24 " +
		"VI_10/10/77/10.0.0.10/24 VI_15/15/77/10.0.0.15/24 VI_20/20/77/10.0.0.20/24"
	if strings.Join(got, " ") != want {
		t.Errorf("instances:\n%s\nwant:\n%s", strings.Join(got, " "), want)
	}
	if len(ws) > 0 {
		t.Errorf("warnings: %v", ws)
	}
}

// The man page's ~LST examples, as VIPs: a list of sets, nested lists, and a list with a
// ~SEQ; a set with fewer values leaves the rest empty.
func TestPreprocessList(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"~LST({IP, IP1}, {10,1},{20,4},{5,6},{12,8}) 192.168.${IP}.${IP1}/32", "192.168.10.1/32 192.168.20.4/32 192.168.5.6/32 192.168.12.8/32"},
		{"~LST(IP, 1, 2) ~LST(IP1, 5,6) 192.169.${IP}.${IP1}/32", "192.169.1.5/32 192.169.1.6/32 192.169.2.5/32 192.169.2.6/32"},
		{"~LST({IP, IP1}, {10,1},{20,4}) ~SEQ(IP2,168,2,170) 192.${IP2}.${IP}.${IP1}/32", "192.168.10.1/32 192.170.10.1/32 192.168.20.4/32 192.170.20.4/32"},
		{"~LST({A, B}, {1, 2}, {3}) 10.0.${A}.1${B}/32", "10.0.1.12/32 10.0.3.1/32"},
	} {
		cfg, ws := parseID(t, "h", kaConf("", "virtual_ipaddress {\n"+tt.line+"\n}"))
		if got := vipList(cfg.Instances[0]); got != tt.want || len(ws) > 0 {
			t.Errorf("%s:\n got %s (warnings %v)\nwant %s", tt.line, got, ws, tt.want)
		}
	}
}

func TestPreprocessSeqHex(t *testing.T) {
	cfg, _ := parseID(t, "h", kaConf("", "virtual_ipaddress {\n~SEQx(n, 10, 11) fd00::${n}/64\n}"))
	if got := vipList(cfg.Instances[0]); got != "fd00::a/64 fd00::b/64" {
		t.Errorf("VIPs %s", got)
	}
}

func TestPreprocessCommentsAndBuiltins(t *testing.T) {
	conf := kaConf("router_id $_INSTANCE", "priority 120# a comment right after the value\nauthentication {\nauth_type PASS\nauth_pass ab\\#c\n}")
	cfg, ws := parseID(t, "node7", conf)
	in := cfg.Instances[0]
	if cfg.RouterID != "node7" || in.Priority != 120 || in.AuthPass != "ab#c" {
		t.Errorf("router_id %q priority %d auth_pass %q", cfg.RouterID, in.Priority, in.AuthPass)
	}
	if len(ws) > 0 {
		t.Errorf("warnings: %v", ws)
	}
}

func TestPreprocessUndefinedParameterWarns(t *testing.T) {
	conf := "@other $IF=eth9\n" + kaConf("", "interface $IF")
	cfg, ws, err := ParseWith("p.conf", []byte(conf), LoadOptions{ConfigID: "me"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Instances[0].Interface != "$IF" {
		t.Errorf("interface %q: keepalived keeps an undefined parameter as it is", cfg.Instances[0].Interface)
	}
	want := `p.conf:4: parameter $IF is not defined; the text "$IF" is used as it is, as keepalived does`
	if len(ws) != 1 || ws[0].Error() != want {
		t.Errorf("warnings %v, want %s", ws, want)
	}
}

func TestPreprocessErrors(t *testing.T) {
	tests := []struct{ name, conf, want string }{
		{"self-defined parameter", "$A=x $A\nglobal_defs {\nrouter_id $A\n}\n", "p.conf:3: parameter substitution does not end (a parameter defined by itself?)"},
		{"bad seq", "~SEQ(i 1 2) x\n", `p.conf:1: invalid ~SEQ "~SEQ(i 1 2) x": want ~SEQ(VAR, start, end) or ~SEQ(VAR, start, step, end)`},
		{"seq step away from end", "~SEQ(i, 1, -1, 5) x\n", `p.conf:1: invalid ~SEQ values "~SEQ(i, 1, -1, 5) x": the step must go from start towards end`},
		{"seq not a number", "~SEQ(i, 1, many) x\n", `p.conf:1: invalid ~SEQ "~SEQ(i, 1, many) x": "many" is not a number`},
		{"seq without end", "~SEQ(i, 1, 3 x\n", `p.conf:1: invalid ~SEQ "~SEQ(i, 1, 3 x": no closing ')'`},
		{"huge seq", "~SEQ(i, 1, 1000000000) ! nothing\n", fmt.Sprintf("p.conf:1: the configuration expands to more than %d bytes (parameters, ~SEQ)", maxConfigBytes)},
		{"lst too many values", "~LST({A, B}, {1, 2, 3}) x\n", `p.conf:1: invalid ~LST "~LST({A, B}, {1, 2, 3}) x": a set has more values than there are parameters`},
		{"lst without values", "~LST(A) x\n", `p.conf:1: invalid ~LST "~LST(A) x": want ~LST(VAR, value, ...) or ~LST({VAR, ...}, {value, ...}, ...) text`},
		{"lst bad name", "~LST({A-1}, {1}) x\n", `p.conf:1: invalid ~LST "~LST({A-1}, {1}) x": "A-1" is not a parameter name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := ParseWith("p.conf", []byte(tt.conf), LoadOptions{ConfigID: "h"})
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v\nwant  %s", err, tt.want)
			}
			if cfg != nil {
				t.Errorf("a Config came back with the error")
			}
		})
	}
}

func TestDecomment(t *testing.T) {
	for in, want := range map[string]string{
		"  priority 100   ":            "priority 100",
		"priority 100 # why":           "priority 100",
		"priority 100! why":            "priority 100",
		`script "kill -0 #1" # x`:      `script "kill -0 #1"`,
		`auth_pass a\#b`:               "auth_pass a#b",
		`script "a\#b"`:                `script "a\#b"`,
		`$X=a \`:                       `$X=a\`,
		`$X=a # comment then more \`:   `$X=a\`,
		"# only a comment":             "",
		`virtual_router_id 51 ! "odd"`: "virtual_router_id 51",
	} {
		if got := decomment(in); got != want {
			t.Errorf("decomment(%q) = %q, want %q", in, got, want)
		}
	}
}

// The keepalived.conf habits issue 9 lists: each is keepalived's documented behaviour,
// a warning with file:line, never an error.
func TestKeepalivedAsPeopleWriteIt(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		warns []string
		check func(Instance) bool
	}{
		{"VIP twice in one block, once with a label", "virtual_ipaddress {\n10.99.0.18\n10.99.0.18 label eth0:1\n}",
			[]string{"t.conf:6: VIP 10.99.0.18 is already listed at t.conf:5; this line is ignored (keepalived advertises the address twice, and a keepalived peer with this line ignores advertisements without it: remove it there too)"},
			func(in Instance) bool { return vipList(in) == "10.99.0.18/32" && in.VIPs[0].Label == "" }},
		{"VIP in both blocks", "virtual_ipaddress {\n10.99.0.18/24\n}\nvirtual_ipaddress_excluded {\n10.99.0.18/24\n10.99.0.19/24\n}",
			[]string{"t.conf:8: VIP 10.99.0.18 is already listed at t.conf:5; this line is ignored (keepalived advertises the address twice, and a keepalived peer with this line ignores advertisements without it: remove it there too)"},
			func(in Instance) bool { return len(in.VIPs) == 1 && len(in.ExcludedVIPs) == 1 }},
		{"state SLAVE", "state SLAVE\npriority 100",
			[]string{`t.conf:4: (T) unknown state "SLAVE"; using BACKUP, as keepalived does`},
			func(in Instance) bool { return in.InitialState == StateBackup }},
		{"state EQUAL", "state EQUAL",
			[]string{`t.conf:4: (T) unknown state "EQUAL"; using BACKUP, as keepalived does`},
			func(in Instance) bool { return in.InitialState == StateBackup }},
		{"BACKUP after MASTER", "priority 100\nstate MASTER\nstate BACKUP",
			[]string{"t.conf:6: (T) state previously set as MASTER; ignoring BACKUP, as keepalived does"},
			func(in Instance) bool { return in.InitialState == StateMaster }},
		{"unicast addresses with a mask or a range", "unicast_src_ip 10.99.0.11/24\nunicast_peer {\n10.99.0.12/24\n10.99.0.13-20\n}",
			[]string{
				`t.conf:4: unicast_src_ip 10.99.0.11/24: keepalived ignores the "/24"; using 10.99.0.11`,
				`t.conf:6: unicast_peer 10.99.0.12/24: keepalived ignores the "/24"; using 10.99.0.12 (2 times; the last at t.conf:7)`,
			},
			func(in Instance) bool {
				return in.UnicastSrc == netip.MustParseAddr("10.99.0.11") && len(in.UnicastPeers) == 2 &&
					in.UnicastPeers[1] == netip.MustParseAddr("10.99.0.13")
			}},
		{"notify scripts", "notify_master /bin/true\nnotify \"/usr/local/bin/n.sh\"",
			nil, func(in Instance) bool {
				return slices.Equal(in.Notify.Master.Args, []string{"/bin/true"}) &&
					slices.Equal(in.Notify.Generic.Args, []string{"/usr/local/bin/n.sh"})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, ws := one(t, "", tt.body)
			var got []string
			for _, w := range ws {
				got = append(got, w.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.warns, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.warns, "\n"))
			}
			if !tt.check(in) {
				t.Errorf("instance %+v", in)
			}
		})
	}
}

// Two instances with one name: keepalived reports the second and skips its block.
func TestKeepalivedDuplicateInstanceName(t *testing.T) {
	conf := kaConf("", "priority 150") + kaConf("", "priority 50")
	cfg, ws, err := Parse("t.conf", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Instances) != 1 || cfg.Instances[0].Priority != 150 {
		t.Errorf("instances %+v, want the first T only", cfg.Instances)
	}
	want := "t.conf:9: vrrp_instance T is already defined at t.conf:1; this block is ignored, as keepalived does"
	if len(ws) != 1 || ws[0].Error() != want {
		t.Errorf("warnings %v, want %s", ws, want)
	}
}

// 512 instances with the same unsupported keywords give one warning per keyword, with
// the count and the last place.
func TestKeepalivedWarningsGrouped(t *testing.T) {
	var b strings.Builder
	b.WriteString("vrrp_track_process G {\nprocess x\n}\n")
	for i := range 512 {
		fmt.Fprintf(&b, "vrrp_instance VI_%d {\ninterface eth%d\nvirtual_router_id %d\nstate SLAVE\ntrack_process {\neth9\n}\nnotify_master_rx_lower_pri /bin/true\nvirtual_ipaddress {\n10.%d.%d.1/24\n}\n}\n",
			i, i/255, i%255+1, i/255, i%255)
	}
	cfg, ws, err := Parse("big.conf", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Instances) != 512 {
		t.Fatalf("%d instances", len(cfg.Instances))
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Error())
	}
	last := 3 + 511*12
	want := []string{
		`big.conf:1: "vrrp_track_process" block is not supported by vrrpd yet; ignored: the process is not watched`,
		fmt.Sprintf(`big.conf:7: (VI_0) unknown state "SLAVE"; using BACKUP, as keepalived does (512 times; the last at big.conf:%d)`, last+4),
		fmt.Sprintf(`big.conf:8: "track_process" block in vrrp_instance VI_0 is not supported by vrrpd yet; ignored: the VIP will not follow the process (512 times; the last at big.conf:%d)`, last+5),
		fmt.Sprintf(`big.conf:11: "notify_master_rx_lower_pri" in vrrp_instance VI_0 is not supported by vrrpd yet; ignored: no script runs on an advertisement of lower priority (512 times; the last at big.conf:%d)`, last+8),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ws[1].Count != 512 || ws[1].Last.Line != last+4 {
		t.Errorf("Count %d Last %v", ws[1].Count, ws[1].Last)
	}
}

func writeConf(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A file is read once however often includes name it: keepalived would read it again
// and define its instances twice.
func TestIncludeReadsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "vi.conf", kaConf("", ""))
	main := writeConf(t, dir, "keepalived.conf", "include vi.conf\ninclude ./vi.conf\ninclude v*.conf\n")
	cfg, ws, err := Load(main)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Instances) != 1 || len(cfg.Files) != 2 {
		t.Errorf("instances %d files %v", len(cfg.Instances), cfg.Files)
	}
	vi := filepath.Join(dir, "vi.conf")
	want := []string{
		// The same warning twice is one, with a count.
		main + ":2: include: " + vi + " was already read (by the include at " + main + ":1); not read again (2 times; the last at " + main + ":3)",
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A file on the include stack is a cycle however its path is spelled (here through a
// symbolic link): an error, as before read-once, since keepalived would loop on it.
func TestIncludeCycleThroughLink(t *testing.T) {
	dir := t.TempDir()
	main := writeConf(t, dir, "keepalived.conf", kaConf("", "")+"include sub/x.conf\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(main, filepath.Join(dir, "sub", "link.conf")); err != nil {
		t.Fatal(err)
	}
	x := writeConf(t, filepath.Join(dir, "sub"), "x.conf", "include link.conf\n")
	_, _, err := Load(main)
	want := x + ":1: include cycle: " + filepath.Join(dir, "sub", "link.conf") + " includes itself"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
}

// The files of one configuration together are capped, and the error names the include
// that crossed the cap.
func TestIncludeTotalBytesCapped(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("! padding line of a comment that keepalived skips\n", maxConfigBytes/2/50+1)
	writeConf(t, dir, "a.conf", big)
	writeConf(t, dir, "b.conf", big)
	main := writeConf(t, dir, "keepalived.conf", kaConf("", "")+"include a.conf\ninclude b.conf\n")
	_, _, err := Load(main)
	want := fmt.Sprintf("%s:10: include: %s: the configuration's files together are larger than %d bytes", main, filepath.Join(dir, "b.conf"), maxConfigBytes)
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
	// Each alone is fine.
	main = writeConf(t, dir, "keepalived.conf", kaConf("", "")+"include a.conf\n")
	if _, _, err := Load(main); err != nil {
		t.Errorf("one half: %v", err)
	}
}

// Substitution work counts against the expansion budget: 10000 lines of 300 references
// each (9 MB) end in an error after a few dozen lines, not in billions of copied bytes.
func TestPreprocessSubstitutionWorkBounded(t *testing.T) {
	line := strings.Repeat("$B ", 300) + "\n"
	conf := "$B=x\n" + strings.Repeat(line, 10000)
	_, _, err := ParseWith("p.conf", []byte(conf), LoadOptions{ConfigID: "h"})
	var e *Error
	if err == nil || !errors.As(err, &e) || e.Pos.Line < 2 || e.Pos.Line > 1000 ||
		!strings.Contains(e.Message, "expands to more than") {
		t.Errorf("error %v", err)
	}
	t.Logf("%v", err)
}

// ${_RANDOM lo hi} over the whole 64-bit range does not wrap its width to zero (a panic
// in the random source before).
func TestPreprocessRandomWholeRange(t *testing.T) {
	conf := "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id ${_RANDOM 0 18446744073709551615}\n priority 100\n virtual_ipaddress {\n  10.99.0.100\n }\n}\n"
	if _, _, err := Parse("r.conf", []byte(conf)); err == nil {
		t.Error("a 64-bit router ID was accepted")
	} else if !strings.Contains(err.Error(), "r.conf:3") {
		t.Errorf("err %v, want one at r.conf:3", err)
	}
}
