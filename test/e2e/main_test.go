package e2e

import (
	"flag"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testbin"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
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
		code = testenv.Main(m, func(e *envtest.Environment) {
			// Room for the scale lab's 2,000 Services (envtest's default range holds a few
			// hundred ClusterIPs). The API server only hands these out; nothing routes them.
			e.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
		}, func(e *testenv.Env) { env = e })
	}
	testbin.Cleanup()
	os.Exit(code)
}

// need skips (or, under CI=true, fails) a test that lacks the API server or the lab.
func need(t testing.TB) {
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
type vrrpd struct{ *vrrpdtest.Proc }

// startVrrpd runs the vrrpd binary in h with args and the extra environment variables.
func startVrrpd(t testing.TB, h *netlab.Host, environ []string, args ...string) *vrrpd {
	t.Helper()
	p := vrrpdtest.Start(t, h, "vrrpd@"+h.Name, environ, vrrpdBinary(t), args...)
	vrrpdtest.WaitServing(t, h, p.Name)
	return &vrrpd{p}
}

func (v *vrrpd) status() (metrics.Status, error) { return vrrpdtest.Status(v.Host) }
