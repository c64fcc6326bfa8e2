package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestRouterConfig loads the config the demo writes with the real loader: it must be
// clean (the demo fails on a warning) and say what the demo claims.
func TestRouterConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(path, []byte(routerConfig("h2", 100, 250*time.Millisecond)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, ws, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 0 {
		t.Errorf("warnings: %v", ws)
	}
	if cfg.RouterID != "h2" || len(cfg.Instances) != 2 {
		t.Fatalf("router %q with %d instances, want h2 with 2", cfg.RouterID, len(cfg.Instances))
	}
	want := []struct {
		name string
		vrid uint8
		vip  string
	}{{instance4, vrid4, vip4.String()}, {instance6, vrid6, vip6.String()}}
	for i, in := range cfg.Instances {
		w := want[i]
		if in.Name != w.name || in.VRID != w.vrid || in.Priority != 100 || in.Version != vrrp.Version3 ||
			in.AdvertInterval != 250*time.Millisecond || in.Interface != "eth0" || !in.Preempt ||
			len(in.VIPs) != 1 || in.VIPs[0].Prefix.String() != w.vip {
			t.Errorf("instance %d: %+v, want %s vrid %d priority 100 v3 250ms preempt on eth0 with %s", i, in, w.name, w.vrid, w.vip)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--adverts", "15ms"},  // not a multiple of 10 ms
		{"--adverts", "0s"},    // too short
		{"--adverts", "41s"},   // too long for VRRPv3's 12 bits of centiseconds
		{"--adverts", "fast"},  // not a duration
		{"--no-such-flag"},     // unknown
		{"leftover-argument"},  // the demo takes none
		{"--pause", "-", "-x"}, // bad pause
	} {
		var stderr bytes.Buffer
		if code := run(args, io.Discard, &stderr); code != exitUsage {
			t.Errorf("run %q = %d, want %d (usage)", args, code, exitUsage)
		}
		if stderr.Len() == 0 {
			t.Errorf("run %q said nothing on stderr", args)
		}
	}
}

// TestDemo runs the whole demo, as `make demo` does but without pauses, and checks what
// every step observed, then that the teardown left nothing behind.
func TestDemo(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs the whole demo")
	}
	netlabtest.Require(t)
	// A machine with only what the demo says it needs: no ping, in particular.
	t.Setenv("PATH", onlyCommands(t, "ip", "go", "sh"))
	var out bytes.Buffer
	opts := Options{Adverts: 100 * time.Millisecond} // Vrrpd empty: the demo builds it
	rep, err := Run(t.Context(), opts, &out)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}

	for i := 1; i <= 6; i++ {
		if !strings.Contains(out.String(), fmt.Sprintf("== %d/6", i)) {
			t.Errorf("output lacks step %d's title", i)
		}
	}

	// 1: the lab.
	if len(rep.Lab.Namespaces) != 4 || rep.Lab.Suffix == "" {
		t.Errorf("lab namespaces %v (suffix %q), want the switch and three hosts", rep.Lab.Namespaces, rep.Lab.Suffix)
	}
	h1MAC, h2MAC := rep.Lab.MAC["h1"], rep.Lab.MAC["h2"]
	if len(h1MAC) != 6 || len(h2MAC) != 6 || h1MAC.String() == h2MAC.String() {
		t.Fatalf("h1 MAC %v, h2 MAC %v: want two distinct MACs", h1MAC, h2MAC)
	}

	// 2: a clean config and an election h1 wins.
	for _, h := range []string{"h1", "h2"} {
		if c := rep.Election.Checks[h]; !strings.Contains(c, "2 instance(s), 0 warning(s): OK") {
			t.Errorf("vrrpd check of %s's config said %q", h, c)
		}
	}
	wantStates(t, "election", rep.Election.States, "MASTER", "BACKUP")
	// A router that is not the address owner starts as backup and claims mastership only
	// when its Master_Down timer runs out.
	if mdi := vrrp.MasterDownInterval(priorityH1, opts.Adverts); rep.Election.Took < mdi || rep.Election.Took > mdi+2*time.Second {
		t.Errorf("h1 became master %v after starting, want just over Master_Down_Interval %v", rep.Election.Took, mdi)
	}

	// 3: the client reached the VIPs at h1's MAC.
	wantNeighbors(t, "after pinging the VIPs", rep.Reach.Neighbors, h1MAC)

	// 4: the cut. h2 cannot take over before its Master_Down_Interval minus the one
	// advert interval h1's last advert may precede the cut; the upper bound only catches
	// a failover that did not happen the VRRP way (it is generous for a loaded machine).
	f := rep.Failover
	if f.MasterDown != vrrp.MasterDownInterval(priorityH2, opts.Adverts) {
		t.Errorf("Master_Down_Interval %v", f.MasterDown)
	}
	for fam, took := range map[string]time.Duration{"IPv4": f.Took4, "IPv6": f.Took6} {
		if took < f.MasterDown-opts.Adverts-10*time.Millisecond || took > f.MasterDown+time.Second {
			t.Errorf("%s failover took %v, want about Master_Down_Interval %v", fam, took, f.MasterDown)
		}
	}
	if f.States["h1"][instance4] != "FAULT" || f.States["h1"][instance6] != "FAULT" ||
		f.States["h2"][instance4] != "MASTER" || f.States["h2"][instance6] != "MASTER" {
		t.Errorf("states after the cut %v, want h1 FAULT and h2 MASTER", f.States)
	}
	wantNeighbors(t, "after the cut, before any ping", f.Announced, h2MAC)
	wantNeighbors(t, "after the cut and a ping", f.AfterPing, h2MAC)

	// 4b: h1 back, preempting.
	wantStates(t, "after the restore", rep.Preempt.States, "MASTER", "BACKUP")
	wantNeighbors(t, "after the restore", rep.Preempt.Neighbors, h1MAC)
	if rep.Preempt.Took <= 0 {
		t.Errorf("preemption time %v", rep.Preempt.Took)
	}

	// 5: graceful stop. That h2 took over sooner than a Master_Down_Interval shows h1
	// resigned with a priority-0 advertisement (the gap is 300 ms at 100 ms adverts).
	h := rep.Handover
	if h.Exit != nil || h.H1HoldsVIP {
		t.Errorf("h1 exited with %v, still holding a VIP: %v", h.Exit, h.H1HoldsVIP)
	}
	if h.Took >= vrrp.MasterDownInterval(priorityH2, opts.Adverts) {
		t.Errorf("graceful handover took %v, not less than Master_Down_Interval (Skew_Time %v)", h.Took, h.SkewTime)
	}
	if h.States["h2"][instance4] != "MASTER" || h.States["h2"][instance6] != "MASTER" || h.States["h1"] != nil {
		t.Errorf("states after the stop %v, want h2 MASTER and h1 gone", h.States)
	}
	wantNeighbors(t, "after the stop", h.Neighbors, h2MAC)
	metrics := strings.Join(h.Metrics, "\n")
	for _, want := range []string{
		`keepalived_vrrp_state{intf="eth0",name="VI_4",vrid="51"} 2`,
		`keepalived_vrrp_state{intf="eth0",name="VI_6",vrid="52"} 2`,
		// h2 became master twice: on the cut and on the graceful stop.
		`keepalived_vrrp_become_master{intf="eth0",name="VI_4",state="MASTER",vrid="51"} 2`,
		`keepalived_vrrp_become_master{intf="eth0",name="VI_6",state="MASTER",vrid="52"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("h2's metrics lack %s; got:\n%s", want, metrics)
		}
	}

	// 6: nothing left.
	if !rep.TornDown {
		t.Error("report says the teardown was incomplete")
	}
	assertGone(t, rep.Lab.Namespaces, rep.Lab.WorkDir)
}

// TestDemoInterrupted runs the demo program and presses Ctrl-C while both routers run:
// it must exit 130 and leave no namespace, process or file behind.
func TestDemoInterrupted(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds and runs the demo")
	}
	netlabtest.Require(t)
	dir := t.TempDir()
	for _, c := range []string{"demo", "vrrpd"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, c), "github.com/vrrp-operator/vrrp-operator/cmd/"+c).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", c, err, out)
		}
	}
	// Pauses long enough that the interrupt surely lands between step 3 and step 4.
	cmd := exec.Command(filepath.Join(dir, "demo"), "--vrrpd", filepath.Join(dir, "vrrpd"), "--pause", "2s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // only if the test fails before the demo exits

	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	interrupted := false
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		// Step 3's last line: both routers run, the client has pinged.
		if !interrupted && strings.Contains(lines.Text(), "= h1's MAC") {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			interrupted = true
		}
	}
	err = cmd.Wait()
	t.Logf("demo output:\n%s", out.String())
	if !interrupted {
		t.Fatal("the demo never reached step 3")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("demo ended with %v, want exit %d", err, exitInterrupted)
	}
	if !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "== 6/6  Teardown") ||
		strings.Contains(out.String(), "== 4/6") {
		t.Error("output does not show an interrupt during step 3's pause followed by the teardown")
	}
	sfx := regexp.MustCompile(`nlab-([0-9a-f]{6})-sw`).FindStringSubmatch(out.String())
	work := regexp.MustCompile(`/\S*vrrpd-demo-[0-9]+`).FindString(out.String())
	if sfx == nil || work == "" {
		t.Fatal("output names no lab or work directory")
	}
	var nss []string
	for _, n := range []string{"sw", "client", "h1", "h2"} {
		nss = append(nss, "nlab-"+sfx[1]+"-"+n)
	}
	assertGone(t, nss, work)
}

func wantStates(t *testing.T, when string, states map[string]map[string]string, h1, h2 string) {
	t.Helper()
	for _, in := range []string{instance4, instance6} {
		if states["h1"][in] != h1 || states["h2"][in] != h2 {
			t.Errorf("%s: states %v, want h1 %s and h2 %s", when, states, h1, h2)
			return
		}
	}
}

func wantNeighbors(t *testing.T, when string, got map[netip.Addr]net.HardwareAddr, mac net.HardwareAddr) {
	t.Helper()
	for _, ip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
		if got[ip].String() != mac.String() {
			t.Errorf("%s: the client's entry for %v is %v, want %v", when, ip, got[ip], mac)
		}
	}
}

// assertGone checks that the namespaces and the work directory are gone and that no
// process runs with the work directory on its command line (a vrrpd left over).
func assertGone(t *testing.T, namespaces []string, workDir string) {
	t.Helper()
	for _, ns := range namespaces {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s is left over", ns)
		}
	}
	if workDir == "" {
		t.Error("no work directory reported")
		return
	}
	if _, err := os.Stat(workDir); err == nil {
		t.Errorf("work directory %s is left over", workDir)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(workDir)) {
			t.Errorf("process %s is left over: %s", filepath.Dir(p), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

// TestDemoFailsCleanly gives the demo a "vrrpd" that passes `check` but dies when run as
// the daemon: the demo must fail at step 2, quote the daemon's log, and tear down.
func TestDemoFailsCleanly(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds a lab")
	}
	netlabtest.Require(t)
	fake := filepath.Join(t.TempDir(), "vrrpd")
	script := "#!/bin/sh\n" +
		`if [ "$1" = check ]; then echo "$3: 2 instance(s), 0 warning(s): OK"; exit 0; fi` + "\n" +
		"echo 'fake vrrpd: cannot open raw socket' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := Run(t.Context(), Options{Vrrpd: fake, Adverts: 100 * time.Millisecond}, &out)
	t.Logf("demo output:\n%s", out.String())
	if err == nil {
		t.Fatal("the demo passed with a vrrpd that cannot run")
	}
	for _, want := range []string{"step 2", "exited unexpectedly", "fake vrrpd: cannot open raw socket"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(out.String(), "FAILED") || !rep.TornDown {
		t.Errorf("no FAILED line or no teardown (torn down: %v)", rep.TornDown)
	}
	assertGone(t, rep.Lab.Namespaces, rep.Lab.WorkDir)
}

// TestDemoKeep runs the demo with --keep: the lab must stay up with both routers running
// (h1 restarted, master again), and the commands it prints must work, the teardown
// command last.
func TestDemoKeep(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs the whole demo")
	}
	netlabtest.Require(t)
	var out bytes.Buffer
	rep, err := Run(t.Context(), Options{Adverts: 100 * time.Millisecond, Keep: true}, &out)
	t.Logf("demo output:\n%s", out.String())
	command := func(label string) string {
		m := regexp.MustCompile(`(?m)^   ` + regexp.QuoteMeta(label) + `\s+(.*)$`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("output prints no %q command", label)
		}
		return strings.TrimSuffix(strings.TrimSpace(m[1]), "   (up to plug it back)")
	}
	teardown := command("tear down:")
	// Whatever happens below, the lab goes.
	t.Cleanup(func() {
		if out, err := exec.Command("bash", "-c", teardown).CombinedOutput(); err != nil {
			t.Errorf("printed teardown command: %v\n%s", err, out)
		}
		assertGone(t, rep.Lab.Namespaces, rep.Lab.WorkDir)
	})
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}
	if rep.TornDown {
		t.Error("report says torn down under --keep")
	}
	for _, ns := range rep.Lab.Namespaces {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			t.Errorf("namespace %s is gone under --keep", ns)
		}
	}
	status := command("router status:")
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := exec.Command("bash", "-c", status).CombinedOutput()
		if err == nil && strings.Count(string(b), "MASTER") >= 2 && strings.Contains(string(b), "VI_6") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("h1 not master again after the restart: %v\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The router in h2 outlived the demo too.
	h2 := "nlab-" + rep.Lab.Suffix + "-h2"
	b, err := exec.Command("ip", "netns", "pids", h2).Output()
	if err != nil || len(strings.Fields(string(b))) == 0 {
		t.Errorf("no process left in %s: %v", h2, err)
	}
	enter := command("enter a host:")
	if b, err := exec.Command("bash", "-c", strings.Replace(enter, " bash", " ip -br addr show dev eth0", 1)).CombinedOutput(); err != nil ||
		!strings.Contains(string(b), "10.99.0.10/24") {
		t.Errorf("printed enter command does not reach the client: %v\n%s", err, b)
	}
	cut := command("cut h1's cable:")
	if !strings.HasPrefix(cut, "ip -n nlab-"+rep.Lab.Suffix+"-sw link set ") {
		t.Errorf("cut command %q", cut)
	}
}

// onlyCommands returns a PATH holding only the named commands (found on the current PATH).
func onlyCommands(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
