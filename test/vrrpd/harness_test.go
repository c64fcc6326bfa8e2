package vrrpd_test

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testbin"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
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
	if role := os.Getenv(floorRoleEnv); role != "" {
		// Run again as BenchmarkLoad50's floor program (floor_test.go).
		err := runFloor(role)
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// proc is a daemon (vrrpd or keepalived) running in a lab host, killed when the test ends.
type proc = vrrpdtest.Proc

// vrrpd is one vrrpd daemon with its config and state directory.
type vrrpd struct {
	*proc
	conf, stateDir string
}

func startVrrpd(t testing.TB, h *netlab.Host, conf, stateDir string, extra ...string) *vrrpd {
	t.Helper()
	if stateDir == "" {
		stateDir = vrrpdtest.NewStateDir(t)
	}
	args := append([]string{"--config", conf, "--state-dir", stateDir, "--metrics-address", vrrpdtest.MetricsAddress, "--log-level", "debug"}, extra...)
	// VRRPD_EXTRA_ARGS adds flags to every vrrpd a test starts, to look inside one
	// (--pprof-address, --realtime-priority) without editing the test.
	args = append(args, strings.Fields(os.Getenv("VRRPD_EXTRA_ARGS"))...)
	p := vrrpdtest.Start(t, h, "vrrpd@"+h.Name, nil, vrrpdBinary(t), args...)
	vrrpdtest.WaitServing(t, h, p.Name)
	return &vrrpd{proc: p, conf: conf, stateDir: stateDir}
}

// keepalivedBinary is the installed keepalived; without one it skips t, or fails it under
// CI=true.
func keepalivedBinary(t testing.TB) string { return vrrpdtest.KeepalivedBinary(t) }

// startKeepalived runs the real keepalived (VRRP only) in h with conf.
func startKeepalived(t testing.TB, h *netlab.Host, conf string) *proc {
	t.Helper()
	return vrrpdtest.StartKeepalived(t, h, conf)
}

func (v *vrrpd) status() (metrics.Status, error) { return vrrpdtest.Status(v.Host) }

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
	resp, err := v.Host.HTTPClient(3 * time.Second).Get("http://" + vrrpdtest.MetricsAddress + "/metrics")
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

func hasAddr(t testing.TB, h *netlab.Host, p netip.Prefix) bool {
	t.Helper()
	return vrrpdtest.HasAddr(t, h, p.Addr())
}

// waitSoleHolder waits until exactly want holds p among hosts, then checks for settle
// that it stays that way: never the VIP on two hosts once settled.
func waitSoleHolder(t testing.TB, timeout, settle time.Duration, p netip.Prefix, want *netlab.Host, hosts ...*netlab.Host) {
	t.Helper()
	vrrpdtest.WaitFor(t, timeout, fmt.Sprintf("%v held by %s alone", p, want.Name), func() bool {
		hs := vrrpdtest.Holders(t, p.Addr(), hosts...)
		return len(hs) == 1 && hs[0] == want.Name
	})
	end := time.Now().Add(settle)
	for time.Now().Before(end) {
		if hs := vrrpdtest.Holders(t, p.Addr(), hosts...); len(hs) != 1 || hs[0] != want.Name {
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
