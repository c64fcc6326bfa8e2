package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/route"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// corpusRefused are the corpus files vrrpd refuses, with what it says. Each is one
// keepalived refuses too (its -t reports a configuration error), so refusing it breaks no
// working setup; the test below checks that for every file keepalived accepts.
var corpusRefused = map[string]string{
	// "auth_type PASS;": keepalived reports "unknown authentication type 'PASS;'" and
	// runs without authentication, which its PASS-speaking peers ignore.
	"pub-takawatp-semicolons.conf": `pub-takawatp-semicolons.conf:15: unknown auth_type "PASS;" (want PASS)`,
}

// corpusWarned are warnings vrrpd must give about a corpus file it accepts: a line
// keepalived skips with a message and runs the rest, vrrpd skips with a warning naming
// the line.
var corpusWarned = map[string]string{
	// keepalived's own sample: "192.168.100./24" (alloc_rule reports the bad address and
	// skips the rule; keepalived -t counts it as a configuration error).
	"ka-vrrp-rules.conf": `ka-vrrp-rules.conf:12: warning: static_rules: bad rule to "192.168.100./24"; line skipped, as keepalived skips it`,
	// keepalived's own sample: "via A or B" (deprecated: keepalived reports it as a
	// configuration error, so -t refuses the file, and makes a multipath route, as vrrpd
	// does; compareMultipath checks the two readings).
	"ka-vrrp-routes.conf": `ka-vrrp-routes.conf:31: warning: virtual_routes: "or" is deprecated in keepalived; read as a multipath route`,
	// keepalived's own sample with a priority out of range: keepalived uses its default.
	"ka-vrrp-bad-priority.conf": `ka-vrrp-bad-priority.conf:41: warning: priority "500" is not a number between 1 and 255; line skipped, as keepalived skips it: using the default priority 100`,
}

// corpusSkipped are corpus files with a value keepalived reports and then runs without,
// with keepalived's message: keepalived -t counts the message as a configuration error
// and exits non-zero, yet keepalived runs the file, so the test looks for the message in
// -t's output and compares vrrpd's reading with keepalived's dump all the same.
var corpusSkipped = map[string]string{
	// vrrp_prio_handler (vrrp_parser.c).
	"ka-vrrp-bad-priority.conf": "(VI_2) Priority not valid! must be between 1 & 255. Using default 100",
}

// corpusInterfaces are the interfaces the corpus files name: keepalived -t refuses an
// instance on an interface that does not exist, so the lab has them all.
var corpusInterfaces = []string{"eth1", "eth2", "eth3", "ens160", "ens192", "eth0.0", "eth0.1"}

// Every file of testdata/keepalived-corpus (public keepalived.conf files, each naming its
// source in its first line) goes through "vrrpd check", once per config id its
// "# config-ids:" line lists. Where keepalived is installed (under CI=true it must be),
// keepalived -t checks each too, in a network namespace that has the interfaces the files
// name, and every file keepalived accepts (exit 0) vrrpd must accept, and read as
// keepalived does: keepalived started with -d shows its reading of the file, and each
// instance must have the same name, VRID, priority, interface, addresses and unicast
// peers in vrrpd's. A file keepalived refuses may go either way; its exit code is logged. keepalived -t exits 6 when scripts
// run as root without enable_script_security, which says nothing about the rest of the
// file, so only 0 counts as accepted.
func TestCheckKeepalivedCorpus(t *testing.T) {
	files, err := filepath.Glob(fixture.Path("keepalived-corpus", "*.conf"))
	if err != nil || len(files) < 15 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	keepalived, dump := keepalivedTester(t)
	accepted, multipath, skipped := 0, 0, 0
	for _, f := range files {
		base := filepath.Base(f)
		ids := corpusHeader(t, f)
		for _, id := range ids {
			var out, errb bytes.Buffer
			code := run([]string{"check", "--config", f, "--config-id", id}, &out, &errb)
			want, refused := corpusRefused[base]
			switch {
			case refused && (code != exitConfig || !strings.Contains(errb.String(), want)):
				t.Errorf("%s (id %s): exit %d, want %d with %q\n%s", base, id, code, exitConfig, want, errb.String())
			case !refused && code != exitOK:
				t.Errorf("%s (id %s): vrrpd check exit %d\n%s", base, id, code, errb.String())
			}
			if w, ok := corpusWarned[base]; ok && !strings.Contains(out.String()+errb.String(), w) {
				t.Errorf("%s (id %s): no warning %q in\n%s%s", base, id, w, out.String(), errb.String())
			}
			if keepalived == nil {
				continue
			}
			if code == exitOK {
				multipath += compareMultipath(t, f, id, dump)
			}
			kcode, kout := keepalived(f, id)
			t.Logf("%s (id %s): keepalived -t exit %d, vrrpd check exit %d", base, id, kcode, code)
			if msg, ok := corpusSkipped[base]; ok {
				if !strings.Contains(kout, msg) {
					t.Errorf("%s (id %s): keepalived -t exit %d without %q:\n%s", base, id, kcode, msg, kout)
				}
				if kcode != 0 && code == exitOK {
					skipped++
					compareWithKeepalived(t, f, id, dump)
				}
			}
			if kcode == 0 {
				accepted++
				if code != exitOK {
					t.Errorf("%s (id %s): keepalived accepts it, vrrpd refuses it:\n%s", base, id, errb.String())
				} else {
					compareWithKeepalived(t, f, id, dump)
				}
			} else if kcode != 5 && kcode != 6 {
				t.Errorf("%s (id %s): keepalived -t exit %d is not a verdict on the file:\n%s", base, id, kcode, kout)
			}
		}
	}
	if keepalived != nil && accepted < 10 {
		t.Errorf("keepalived accepted only %d files: the lab is probably missing something", accepted)
	}
	if keepalived != nil && skipped == 0 {
		t.Errorf("no file with a value keepalived skips compared with keepalived's reading")
	}
	if keepalived != nil && multipath == 0 {
		t.Errorf("no multipath route compared with keepalived's (ka-vrrp-routes.conf has one)")
	}
}

// corpusHeader checks that a corpus file names its source on its first line, and returns
// the config ids to check it with ("# config-ids: high low"), or the one id "none".
func corpusHeader(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	ids := []string{"none"}
	for n := 0; sc.Scan() && n < 10; n++ {
		line := sc.Text()
		if n == 0 && !strings.HasPrefix(line, "# source: github.com/") {
			t.Errorf("%s: the first line does not name the source: %q", path, line)
		}
		if v, ok := strings.CutPrefix(line, "# config-ids: "); ok {
			ids = strings.Fields(v)
		}
	}
	return ids
}

// keepalivedTester returns a function that runs keepalived -t on a file in a lab
// namespace, or nil when keepalived cannot run here (then the test checks vrrpd alone,
// except under CI=true, where that is a failure).
func keepalivedTester(t *testing.T) (check func(path, id string) (int, string), dump func(path, id string) string) {
	const bin = "/usr/sbin/keepalived"
	_, statErr := os.Stat(bin)
	if statErr != nil || netlab.Usable() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but keepalived -t cannot run: %v / %v", statErr, netlab.Usable())
		}
		t.Logf("keepalived -t not run (%v / %v); checking vrrpd alone", statErr, netlab.Usable())
		return nil, nil
	}
	lab := netlabtest.New(t, "ka")
	h := lab.Host("ka")
	for _, name := range corpusInterfaces {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, args := range [][]string{
			{"link", "add", name, "type", "veth", "peer", "name", "p" + name},
			{"link", "set", name, "up"},
		} {
			if out, err := h.Command(ctx, "ip", args...).CombinedOutput(); err != nil {
				cancel()
				t.Fatalf("ip %v: %v: %s", args, err, out)
			}
		}
		cancel()
	}
	check = func(path, id string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := h.Command(ctx, bin, "-t", "-f", path, "-i", id).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("keepalived -t %s: %v", path, err)
		return -1, ""
	}
	// dump starts keepalived on the file with -d, which logs the configuration as
	// keepalived understood it, and stops it once the VRRP part of that log is
	// complete.
	dump = func(path, id string) string {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := h.Command(ctx, bin, "-n", "-l", "-D", "-d", "-f", path, "-i", id,
			"--pid="+filepath.Join(dir, "k.pid"), "--vrrp_pid="+filepath.Join(dir, "v.pid"),
			"--checkers_pid="+filepath.Join(dir, "c.pid"))
		// keepalived and its children in a process group of their own, killed at once
		// when the dump is complete: a clean stop takes keepalived about 1.7 s, and
		// the lab's namespace goes away with everything in it anyway.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		kill := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.Cancel = kill
		cmd.WaitDelay = 5 * time.Second
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatalf("keepalived: %v", err)
		}
		go func() { pw.CloseWithError(cmd.Wait()) }()
		var out strings.Builder
		inTopology, stopped := false, false
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			switch {
			case strings.Contains(line, "------< VRRP Topology >------"):
				inTopology = true
			case inTopology && strings.Contains(line, "------<") && !stopped:
				stopped = true
				_ = kill()
			}
		}
		return out.String()
	}
	return check, dump
}

// kaInstance is what the comparison looks at in keepalived's dump of one instance.
type kaInstance struct {
	vrid, priority, iface, src string
	vips, excluded, peers      []string
}

// dumpLine strips the time stamp keepalived -l puts before each line.
var dumpLine = regexp.MustCompile(`^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}: `)

// parseDump reads the instances out of keepalived -d's output.
func parseDump(out string) map[string]*kaInstance {
	ins := map[string]*kaInstance{}
	var cur *kaInstance
	var list *[]string
	for _, line := range strings.Split(out, "\n") {
		line = dumpLine.ReplaceAllString(line, "")
		switch {
		case strings.HasPrefix(line, "------<"):
			cur, list = nil, nil
			continue
		case !strings.HasPrefix(line, " "):
			// The processes' other messages come between the dump's lines.
			continue
		}
		if name, ok := strings.CutPrefix(line, " VRRP Instance = "); ok {
			cur = &kaInstance{}
			ins[name] = cur
			list = nil
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasPrefix(line, "     ") && list != nil {
			*list = append(*list, strings.Fields(line)[0])
			continue
		}
		list = nil
		f := strings.TrimSpace(line)
		switch {
		case !strings.HasPrefix(line, "   ") || strings.HasPrefix(line, "    "):
			if !strings.HasPrefix(line, "  ") {
				cur = nil // the next item of the topology, a sync group for example
			}
		case strings.HasPrefix(f, "Virtual IP Excluded"):
			list = &cur.excluded
		case strings.HasPrefix(f, "Virtual IP ("):
			list = &cur.vips
		case strings.HasPrefix(f, "Unicast Peer"):
			list = &cur.peers
		default:
			if k, v, ok := strings.Cut(f, " = "); ok {
				switch k {
				case "Virtual Router ID":
					cur.vrid = v
				case "Priority":
					cur.priority = v
				case "Interface":
					// "vrrp0.1, vmac on eth0.0": the instance's own interface.
					_, cur.iface, _ = strings.Cut(v, ", vmac on ")
					if cur.iface == "" {
						cur.iface = v
					}
				case "Using src_ip":
					// Without one configured, keepalived shows the address it took
					// from the interface.
					cur.src = "(none)"
					if a, ok := strings.CutSuffix(v, " (from configuration)"); ok {
						cur.src = a
					}
				}
			}
		}
	}
	return ins
}

// compareWithKeepalived checks that vrrpd's reading of a file keepalived accepts has
// the instances keepalived's own dump shows, with the same VRID, priority, interface,
// addresses and unicast peers. Addresses compare as sets without prefix length:
// keepalived keeps an address listed twice, vrrpd once.
func compareWithKeepalived(t *testing.T, path, id string, dump func(path, id string) string) {
	t.Helper()
	cfg, _, err := config.LoadWith(path, config.LoadOptions{ConfigID: id})
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if len(cfg.Instances) == 0 {
		return // keepalived logs no VRRP topology to compare with
	}
	out := dump(path, id)
	ka := parseDump(out)
	if len(ka) == 0 && strings.Contains(out, " - exiting") {
		// ka-conditional-conf.conf names network namespaces ("@high net_namespace
		// high") that keepalived enters before it shows its configuration.
		t.Logf("%s (id %s): keepalived stopped before showing its configuration; not compared", filepath.Base(path), id)
		return
	}
	base := filepath.Base(path)
	if len(ka) != len(cfg.Instances) {
		t.Errorf("%s (id %s): keepalived has %d instances, vrrpd %d\n%s", base, id, len(ka), len(cfg.Instances), out)
		return
	}
	set := func(ss []string) string {
		m := map[string]bool{}
		for _, s := range ss {
			s, _, _ = strings.Cut(s, "/")
			m[s] = true
		}
		keys := slices.Sorted(maps.Keys(m))
		return strings.Join(keys, " ")
	}
	addrs := func(ps []config.VIP) []string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Prefix.Addr().String())
		}
		return s
	}
	for _, in := range cfg.Instances {
		k := ka[in.Name]
		if k == nil {
			t.Errorf("%s (id %s): vrrpd has instance %s, keepalived has not", base, id, in.Name)
			continue
		}
		var peers []string
		for _, p := range in.UnicastPeers {
			peers = append(peers, p.String())
		}
		src := "(none)"
		if in.UnicastSrc.IsValid() {
			src = in.UnicastSrc.String()
		}
		got := fmt.Sprintf("vrid %d priority %d interface %s src %s vips [%s] excluded [%s] peers [%s]",
			in.VRID, in.Priority, in.Interface, src, set(addrs(in.VIPs)), set(addrs(in.ExcludedVIPs)), set(peers))
		want := fmt.Sprintf("vrid %s priority %s interface %s src %s vips [%s] excluded [%s] peers [%s]",
			k.vrid, k.priority, k.iface, k.src, set(k.vips), set(k.excluded), set(k.peers))
		if got != want {
			t.Errorf("%s (id %s) instance %s:\nvrrpd      %s\nkeepalived %s", base, id, in.Name, got, want)
		}
	}
}

// compareMultipath checks vrrpd's multipath routes in a file against keepalived's
// reading: keepalived -d must show each with the same paths (gateway, device, weight,
// onlink) in the same order. It runs whether or not keepalived -t accepts the file,
// since keepalived reports the "or" that makes such a route as a configuration error yet
// makes the route; it returns how many routes it compared (none without keepalived, dump
// nil).
func compareMultipath(t *testing.T, path, id string, dump func(path, id string) string) int {
	t.Helper()
	if dump == nil {
		return 0
	}
	cfg, _, err := config.LoadWith(path, config.LoadOptions{ConfigID: id})
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return 0
	}
	var routes []route.Route
	for _, in := range cfg.Instances {
		routes = append(routes, in.Routes...)
	}
	routes = append(routes, cfg.Static.Routes...)
	routes = slices.DeleteFunc(routes, func(r route.Route) bool { return r.Nexthops.IsZero() })
	if len(routes) == 0 {
		return 0
	}
	out := dump(path, id)
	base := filepath.Base(path)
	for _, r := range routes {
		var want []string
		for _, n := range r.Nexthops.List() {
			want = append(want, pathText(n.Via.String(), n.Dev, n.Weight, n.OnLink))
		}
		var got []string
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(dumpLine.ReplaceAllString(line, ""))
			if slices.Contains(f, r.Dst.String()) && slices.Contains(f, "nexthop") {
				got = kaPaths(f)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s (id %s): route %s: keepalived's paths %q, vrrpd's %q\n%s", base, id, r.Dst, got, want, out)
		}
	}
	return len(routes)
}

// kaPaths reads the paths of a route line of keepalived -d ("10.7.0.0/16 table 100 proto
// 18 nexthop via inet 10.99.0.1 dev eth0 weight 3 nexthop ..."). A dev or onlink of the
// route itself, which keepalived shows before the nexthops of an "or" route, is each
// path's without its own, as vrrpd reads it.
func kaPaths(f []string) []string {
	type path struct {
		via, dev string
		weight   uint16
		onlink   bool
	}
	var top path
	var ps []path
	cur := &top
	for i := 0; i < len(f); i++ {
		next := func() string {
			if i+1 < len(f) {
				i++
				return f[i]
			}
			return ""
		}
		switch f[i] {
		case "nexthop":
			ps = append(ps, path{})
			cur = &ps[len(ps)-1]
		case "via":
			if v := next(); v == "inet" || v == "inet6" {
				cur.via = next()
			} else {
				cur.via = v
			}
		case "dev":
			cur.dev = next()
		case "weight":
			w, _ := strconv.ParseUint(next(), 10, 16)
			cur.weight = uint16(w)
		case "onlink":
			cur.onlink = true
		}
	}
	var out []string
	for _, p := range ps {
		if p.dev == "" {
			p.dev = top.dev
		}
		out = append(out, pathText(p.via, p.dev, p.weight, p.onlink || top.onlink))
	}
	return out
}

// pathText is one path in the comparison's words; weight 1 is no weight (the kernel's
// default).
func pathText(via, dev string, weight uint16, onlink bool) string {
	if via == "invalid IP" {
		via = ""
	}
	if weight == 1 {
		weight = 0
	}
	return fmt.Sprintf("via %s dev %s weight %d onlink %v", via, dev, weight, onlink)
}

// TestMultipathMatchesKeepalived: the route lines of both multipath syntaxes (keepalived's
// "or" and its nexthop clauses, with per-path devices, weights and onlink) read as
// keepalived -d shows them.
func TestMultipathMatchesKeepalived(t *testing.T) {
	conf := `vrrp_instance VI_1 {
    state BACKUP
    interface eth1
    virtual_router_id 51
    priority 100
    virtual_ipaddress {
        10.99.0.200
    }
    virtual_routes {
        10.7.0.0/16 table 100 metric 5 nexthop via 10.99.0.1 dev eth1 weight 3 nexthop via inet 10.99.0.2 onlink nexthop dev eth2
        2001:db8:7::/48 nexthop via fd00:99::1 weight 1 nexthop via fd00:99::2 weight 256
        10.9.0.0/16 via 10.99.0.1 or 10.99.0.2 dev eth1 onlink
    }
}
static_routes {
    10.10.0.0/16 via 10.99.0.3 or 10.99.0.4
}
`
	path := filepath.Join(t.TempDir(), "multipath.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	_, dump := keepalivedTester(t)
	if dump == nil {
		t.Skip("keepalived cannot run here")
	}
	if n := compareMultipath(t, path, "none", dump); n != 4 {
		t.Errorf("compared %d routes, want 4", n)
	}
}
