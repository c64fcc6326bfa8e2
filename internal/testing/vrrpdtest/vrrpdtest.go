// Package vrrpdtest is what the end-to-end suites that run daemons in a netlab lab share
// (test/vrrpd for vrrpd against itself and keepalived, test/e2e for vrrpd in Kubernetes
// mode): starting a daemon as a test-scoped process, vrrpd's /status endpoint, a state
// directory like /run/vrrpd, polling for a condition, and asking which hosts hold a VIP.
package vrrpdtest

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// MetricsAddress is where the suites' vrrpd serve /metrics and /status, inside each lab
// host (each has a loopback of its own, so every daemon can use the same one).
const MetricsAddress = "127.0.0.1:9650"

// Proc is a daemon running in a lab host for one test.
type Proc struct{ *netlab.Proc }

// Start runs bin with args in h (env, when not nil, adds to the environment). The process
// is killed when the test ends, and its output goes to the test log if the test failed, or
// always when E2E_LOGS is set; with E2E_LOG_DIR set, also to a file of its own there
// (NAME.PID.log), whole, since a benchmark's log is cut short.
func Start(t testing.TB, h *netlab.Host, name string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p, err := h.Start(name, env, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() || os.Getenv("E2E_LOGS") != "" {
			t.Logf("---- %s (pid %d) output ----\n%s", p.Name, p.Pid(), p.Output())
		}
		if dir := os.Getenv("E2E_LOG_DIR"); dir != "" {
			f := filepath.Join(dir, fmt.Sprintf("%s.%d.log", strings.ReplaceAll(p.Name, "/", "_"), p.Pid()))
			if err := os.WriteFile(f, []byte(p.Output()), 0o644); err != nil {
				t.Errorf("E2E_LOG_DIR: %v", err)
			}
		}
	})
	return &Proc{p}
}

// MustStop sends SIGTERM and waits for the exit; it fails the test unless the exit is
// clean within 10 s.
func (p *Proc) MustStop(t testing.TB) {
	t.Helper()
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// MustSignal sends s, failing the test if it cannot.
func (p *Proc) MustSignal(t testing.TB, s syscall.Signal) {
	t.Helper()
	if err := p.Signal(s); err != nil {
		t.Fatalf("signal %s: %v", p.Name, err)
	}
}

// Status asks the vrrpd in h for its /status at [MetricsAddress].
func Status(h *netlab.Host) (metrics.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return metrics.GetStatus(ctx, h.DialContext, "http://"+MetricsAddress)
}

// WaitServing waits until the vrrpd in h answers /status, up to 5 s, and then until it is
// ready (/readyz: its configuration loaded, its sockets open, no instance in INIT), up to 5 s
// more. The HTTP server answers before the loop has published its instances, and a host
// slowed by other tests (a VMAC to create, sysctls to write) can take a while: a test
// reading an instance's status at once would find none. A daemon that never gets ready
// (an instance that cannot start, which some tests want) is waited for no longer.
func WaitServing(t testing.TB, h *netlab.Host, name string) {
	t.Helper()
	WaitFor(t, 5*time.Second, name+" serving /status", func() bool {
		_, err := Status(h)
		return err == nil
	})
	client := &http.Client{Transport: &http.Transport{DialContext: h.DialContext, DisableKeepAlives: true}, Timeout: time.Second}
	defer client.CloseIdleConnections()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		resp, err := client.Get("http://" + MetricsAddress + metrics.ReadyPath)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
	}
	t.Logf("%s not ready after 5 s; going on", name)
}

// NewStateDir returns a state directory on tmpfs, as /run/vrrpd is on a real host, removed
// when the test ends: vrrpd syncs its VIP record before every VIP it adds, and on a test
// machine's disk an fsync can take hundreds of milliseconds, which would be measured as
// failover time.
func NewStateDir(t testing.TB) string {
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

// WaitFor polls cond every 10 ms until it holds, or fails the test once timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
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

// HasAddr reports whether h's eth0 holds a (whatever the prefix length it was added with).
func HasAddr(t testing.TB, h *netlab.Host, a netip.Addr) bool {
	t.Helper()
	ok, err := h.HasAddr(netip.PrefixFrom(a, a.BitLen()))
	if err != nil {
		t.Fatalf("%s: %v", h.Name, err)
	}
	return ok
}

// Holders lists the names of the hosts whose eth0 holds a, in the order given.
func Holders(t testing.TB, a netip.Addr, hosts ...*netlab.Host) []string {
	t.Helper()
	var out []string
	for _, h := range hosts {
		if HasAddr(t, h, a) {
			out = append(out, h.Name)
		}
	}
	return out
}

// KeepalivedBinary is the installed keepalived; without one it skips t, or fails it under
// CI=true.
func KeepalivedBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/keepalived"); err == nil {
			return bin
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("keepalived not installed: %v", err)
		}
		t.Skipf("keepalived not installed: %v", err)
	}
	return bin
}

// StartKeepalived runs the real keepalived (VRRP only, in the foreground, logging to the
// console) in h with the configuration file conf, and any further arguments (say
// --config-id, which keepalived-operator's pods pass).
func StartKeepalived(t testing.TB, h *netlab.Host, conf string, args ...string) *Proc {
	t.Helper()
	bin := KeepalivedBinary(t)
	dir := t.TempDir()
	return Start(t, h, "keepalived@"+h.Name, nil, bin, append([]string{
		"-f", conf, "-l", "-D", "-n", "-G", "-P",
		"-p", filepath.Join(dir, "keepalived.pid"),
		"-r", filepath.Join(dir, "vrrp.pid"),
		"-c", filepath.Join(dir, "checkers.pid")}, args...)...)
}
