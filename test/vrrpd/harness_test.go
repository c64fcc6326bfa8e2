package vrrpd_test

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testbin"
)

// The lab: client is 10.99.0.10, h1 10.99.0.11, h2 10.99.0.12 (netlab numbers hosts from
// .10 in creation order), as in the keepalived captures and configs under testdata/.
func newLab(t testing.TB) (lab *netlab.Lab, client, h1, h2 *netlab.Host) {
	t.Helper()
	if testing.Short() {
		t.Skip("namespace test: skipped with -short (make unit)")
	}
	lab = netlabtest.New(t, "client", "h1", "h2")
	return lab, lab.Host("client"), lab.Host("h1"), lab.Host("h2")
}

// vrrpdBinary is cmd/vrrpd, built once per test binary run.
func vrrpdBinary(t testing.TB) string { return testbin.Vrrpd(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// proc is a daemon (vrrpd or keepalived) running in a lab host. It is killed when the test
// ends, and its output goes to the test log if the test failed.
type proc struct{ *netlab.Proc }

func startProc(t testing.TB, name string, h *netlab.Host, bin string, args ...string) *proc {
	t.Helper()
	p, err := h.Start(name, nil, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("---- %s output ----\n%s", p.Name, p.Output())
		}
	})
	return &proc{p}
}

// stop sends SIGTERM and waits for the exit; it fails the test unless the exit is clean.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func (p *proc) signal(t testing.TB, s syscall.Signal) {
	t.Helper()
	if err := p.Signal(s); err != nil {
		t.Fatalf("signal %s: %v", p.Name, err)
	}
}

// vrrpd is one vrrpd daemon with its config and state directory.
type vrrpd struct {
	*proc
	conf, stateDir string
}

// writeConf writes a config into the test's temp dir.
func writeConf(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func startVrrpd(t testing.TB, h *netlab.Host, conf, stateDir string) *vrrpd {
	t.Helper()
	if stateDir == "" {
		stateDir = newStateDir(t)
	}
	p := startProc(t, "vrrpd@"+h.Name, h, vrrpdBinary(t),
		"--config", conf, "--state-dir", stateDir, "--metrics-address", "127.0.0.1:9650", "--log-level", "debug")
	v := &vrrpd{proc: p, conf: conf, stateDir: stateDir}
	waitFor(t, 5*time.Second, p.Name+" serving /status", func() bool {
		_, err := v.status()
		return err == nil
	})
	return v
}

// newStateDir returns a state directory on tmpfs, as /run/vrrpd is on a real host: the VIP
// record is synced before every VIP is added, and on this test machine's disk an fsync can
// take hundreds of milliseconds, which would be measured as failover time.
func newStateDir(t testing.TB) string {
	t.Helper()
	base := "/dev/shm"
	if _, err := os.Stat(base); err != nil {
		base = ""
	}
	dir, err := os.MkdirTemp(base, "vrrpd-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startKeepalived runs the real keepalived (VRRP only) in h with conf.
func startKeepalived(t testing.TB, h *netlab.Host, conf string) *proc {
	t.Helper()
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("keepalived not installed: %v", err)
		}
		t.Skipf("keepalived not installed: %v", err)
	}
	dir := t.TempDir()
	return startProc(t, "keepalived@"+h.Name, h, bin,
		"-f", conf, "-l", "-D", "-n", "-G", "-P",
		"-p", filepath.Join(dir, "keepalived.pid"),
		"-r", filepath.Join(dir, "vrrp.pid"),
		"-c", filepath.Join(dir, "checkers.pid"))
}

func (v *vrrpd) status() (metrics.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return metrics.GetStatus(ctx, v.Host.HTTPClient(3*time.Second), "http://127.0.0.1:9650")
}

func (v *vrrpd) mustStatus(t testing.TB) metrics.Status {
	t.Helper()
	st, err := v.status()
	if err != nil {
		t.Fatalf("%s: %v", v.Name, err)
	}
	return st
}

// instance returns the named instance's status.
func (v *vrrpd) instance(t testing.TB, name string) metrics.InstanceStatus {
	t.Helper()
	for _, in := range v.mustStatus(t).Instances {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("%s has no instance %s", v.Name, name)
	return metrics.InstanceStatus{}
}

// scrape reads /metrics and returns every sample as "name{labels}" -> value.
func (v *vrrpd) scrape(t testing.TB) map[string]float64 {
	t.Helper()
	resp, err := v.Host.HTTPClient(3 * time.Second).Get("http://127.0.0.1:9650/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", v.Name, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		f, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = f
	}
	return out
}

// metric sums the samples of a metric name whose labels contain every given label pair
// (e.g. `name="VI_1"`), whatever the other labels (keepalived_exporter puts the current
// state in a label, so a counter's series changes with the state).
func metric(samples map[string]float64, name string, labels ...string) float64 {
	var sum float64
	for k, v := range samples {
		n, rest, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
			}
		}
		if ok {
			sum += v
		}
	}
	return sum
}

// waitFor polls cond every 10 ms until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hasAddr(t testing.TB, h *netlab.Host, p netip.Prefix) bool {
	t.Helper()
	ok, err := h.HasAddr(p)
	if err != nil {
		t.Fatalf("%s: %v", h.Name, err)
	}
	return ok
}

// holders returns the hosts that hold p.
func holders(t testing.TB, p netip.Prefix, hosts ...*netlab.Host) []string {
	t.Helper()
	var out []string
	for _, h := range hosts {
		if hasAddr(t, h, p) {
			out = append(out, h.Name)
		}
	}
	return out
}

// waitSoleHolder waits until exactly want holds p among hosts, then checks for settle
// that it stays that way: never the VIP on two hosts once settled.
func waitSoleHolder(t testing.TB, timeout, settle time.Duration, p netip.Prefix, want *netlab.Host, hosts ...*netlab.Host) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%v held by %s alone", p, want.Name), func() bool {
		hs := holders(t, p, hosts...)
		return len(hs) == 1 && hs[0] == want.Name
	})
	end := time.Now().Add(settle)
	for time.Now().Before(end) {
		if hs := holders(t, p, hosts...); len(hs) != 1 || hs[0] != want.Name {
			t.Fatalf("%v held by %v after settling on %s", p, hs, want.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cut(t testing.TB, h *netlab.Host) {
	t.Helper()
	if err := h.Cut(); err != nil {
		t.Fatal(err)
	}
}

func restore(t testing.TB, h *netlab.Host) {
	t.Helper()
	if err := h.Restore(); err != nil {
		t.Fatal(err)
	}
}
