package e2e

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testbin"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// env is the package's API server, nil when envtest is not available (or under -short).
var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	var code int
	if testing.Short() {
		// make unit: no API server, no namespaces; the test skips itself.
		code = m.Run()
	} else {
		code = testenv.Main(m, nil, func(e *testenv.Env) { env = e })
	}
	testbin.Cleanup()
	os.Exit(code)
}

// need skips (or, under CI=true, fails) a test that lacks the API server or the lab.
func need(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short (make unit)")
	}
	testenv.Require(t, env)
	netlabtest.Require(t)
}

// vrrpdBinary is cmd/vrrpd, built once per test binary run.
func vrrpdBinary(t testing.TB) string { return testbin.Vrrpd(t) }

// vrrpd is one vrrpd process in a lab host. Its output goes to the test log when the test
// fails (or always with E2E_LOGS set).
type vrrpd struct{ *netlab.Proc }

// startVrrpd runs the vrrpd binary in h with args and the extra environment variables.
func startVrrpd(t testing.TB, h *netlab.Host, environ []string, args ...string) *vrrpd {
	t.Helper()
	p, err := h.Start("vrrpd@"+h.Name, environ, vrrpdBinary(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	v := &vrrpd{p}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() || os.Getenv("E2E_LOGS") != "" {
			t.Logf("---- %s (pid %d) output ----\n%s", p.Name, p.Pid(), p.Output())
		}
	})
	waitFor(t, 5*time.Second, p.Name+" serving /status", func() bool {
		_, err := v.status()
		return err == nil
	})
	return v
}

// stop sends SIGTERM (vrrpd resigns its masterships) and waits for a clean exit.
func (v *vrrpd) stop(t testing.TB) {
	t.Helper()
	if err := v.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func (v *vrrpd) status() (metrics.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return metrics.GetStatus(ctx, v.Host.HTTPClient(3*time.Second), "http://127.0.0.1:9650")
}

// newStateDir is a state directory on tmpfs, as /run/vrrpd is on a node (an fsync on this
// machine's disk can take long enough to show up as failover time).
func newStateDir(t testing.TB) string {
	t.Helper()
	base := "/dev/shm"
	if _, err := os.Stat(base); err != nil {
		base = ""
	}
	dir, err := os.MkdirTemp(base, "e2e-vrrpd-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
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
