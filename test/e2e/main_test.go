package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testenv"
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
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// need skips (or, under CI=true, fails) a test that lacks the API server or the lab.
func need(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short (make unit)")
	}
	testenv.Require(t, env)
	netlab.Require(t)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// vrrpdBinary builds cmd/vrrpd once per test binary run.
func vrrpdBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-vrrpd-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "vrrpd")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/vrrp-operator/vrrp-operator/cmd/vrrpd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build vrrpd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// vrrpd is one vrrpd process in a lab host. Its output goes to the test log when the test
// fails.
type vrrpd struct {
	name string
	host *netlab.Host
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// startVrrpd runs the vrrpd binary in h with args and the extra environment variables.
func startVrrpd(t testing.TB, h *netlab.Host, environ []string, args ...string) *vrrpd {
	t.Helper()
	v := &vrrpd{name: "vrrpd@" + h.Name, host: h, out: &syncBuffer{}, done: make(chan struct{})}
	// `ip netns exec` execs vrrpd itself, so signals reach the daemon directly.
	v.cmd = h.Command(context.Background(), vrrpdBinary(t), args...)
	v.cmd.Env = append(os.Environ(), environ...)
	v.cmd.Stdout, v.cmd.Stderr = v.out, v.out
	if err := v.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", v.name, err)
	}
	go func() {
		v.err = v.cmd.Wait()
		close(v.done)
	}()
	t.Cleanup(func() {
		_ = v.cmd.Process.Kill()
		<-v.done
		if t.Failed() || os.Getenv("E2E_LOGS") != "" {
			t.Logf("---- %s (pid %d) output ----\n%s", v.name, v.cmd.Process.Pid, v.out.String())
		}
	})
	waitFor(t, 5*time.Second, v.name+" serving /status", func() bool {
		_, err := v.status()
		return err == nil
	})
	return v
}

// stop sends SIGTERM (vrrpd resigns its masterships) and waits for a clean exit.
func (v *vrrpd) stop(t testing.TB) {
	t.Helper()
	_ = v.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-v.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not stop within 10s of SIGTERM", v.name)
	}
	if v.err != nil {
		t.Fatalf("%s exited with %v", v.name, v.err)
	}
}

func (v *vrrpd) status() (metrics.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return metrics.GetStatus(ctx, nsClient(v.host), "http://127.0.0.1:9650")
}

// nsClient is an HTTP client whose connections are made inside h's namespace.
func nsClient(h *netlab.Host) *http.Client {
	return &http.Client{
		Timeout: 3 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var c net.Conn
				err := h.Do(func() error {
					var err error
					c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
					return err
				})
				return c, err
			},
		},
	}
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
