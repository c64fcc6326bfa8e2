// Package cmd_test checks what the project's programs link: none of them may carry the
// test helpers (internal/testing/...) or the standard testing package, which would add
// test flags and test-only code paths to a binary shipped to nodes.
package cmd_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/testbin"
)

// The programs built for users: the daemon, the operator, and the demo people run as root.
var programs = []string{
	"github.com/vrrp-operator/vrrp-operator/cmd/vrrpd",
	"github.com/vrrp-operator/vrrp-operator/cmd/operator",
	"github.com/vrrp-operator/vrrp-operator/cmd/demo",
}

func TestProgramsLinkNoTestCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list the programs' dependencies: %v", err)
	}
	for _, prog := range programs {
		out, err := exec.Command("go", "list", "-deps", prog).Output()
		if err != nil {
			var stderr []byte
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				stderr = ee.Stderr
			}
			t.Fatalf("go list -deps %s: %v\n%s", prog, err, stderr)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %v", prog, deps)
		}
		for _, d := range deps {
			if d == "testing" || strings.HasPrefix(d, "testing/") ||
				strings.HasPrefix(d, "github.com/vrrp-operator/vrrp-operator/internal/testing/") {
				t.Errorf("%s links %s", prog, d)
			}
		}
	}
}

// TestVrrpdShipTags: every build of vrrpd for users (the Makefile's, the Dockerfile's)
// and the tests' (testbin) uses the same build tags, so that what the tests and the
// benchmarks run is what ships.
func TestVrrpdShipTags(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "\nVRRPD_TAGS := "+testbin.VrrpdTags+"\n") {
		t.Errorf("the Makefile's VRRPD_TAGS is not testbin.VrrpdTags (%q)", testbin.VrrpdTags)
	}
	if !strings.Contains(string(mk), "\nHOST_TAGS := $(VRRPD_TAGS),"+testbin.HostTags+"\n") {
		t.Errorf("the Makefile's HOST_TAGS is not VRRPD_TAGS and testbin.HostTags (%q)", testbin.HostTags)
	}
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"Makefile": string(mk), "Dockerfile": string(df)} {
		builds := 0
		for _, line := range strings.Split(text, "\n") {
			build := strings.Contains(line, "go build") || strings.Contains(line, "$(GO) build")
			if !build || !strings.Contains(line, "./cmd/vrrpd") {
				continue
			}
			builds++
			if !strings.Contains(line, "-tags '$(VRRPD_TAGS)'") && !strings.Contains(line, "-tags '$(HOST_TAGS)'") &&
				!strings.Contains(line, "-tags "+testbin.VrrpdTags+" ") {
				t.Errorf("%s builds vrrpd without its tags: %s", name, strings.TrimSpace(line))
			}
		}
		if builds == 0 {
			t.Errorf("%s has no build of ./cmd/vrrpd", name)
		}
	}
}

// TestHostBuildLinks: the host build links none of what it exists to leave out. Each of
// these is megabytes of code that its package initialisation and the kernel's fault-around
// map into every vrrpd (issue 12: client-go 4 MiB, runtime/pprof 0.4 MiB); an import that
// brings one back fails here rather than in the next make bench. net/http is linked by
// every build since issue 26 (the metrics, probes and HTTP checks are served and sent with
// it), and net/http/pprof never: its handlers register on the default mux.
func TestHostBuildLinks(t *testing.T) {
	deps := func(tags string) map[string]bool {
		out, err := exec.Command("go", "list", "-deps", "-tags", tags, programs[0]).Output()
		if err != nil {
			t.Fatalf("go list -deps -tags %s: %v", tags, err)
		}
		m := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			m[d] = true
		}
		return m
	}
	full, host := deps(testbin.VrrpdTags), deps(testbin.VrrpdTags+","+testbin.HostTags)
	for _, pkg := range []string{"k8s.io/client-go/rest", "runtime/pprof"} {
		if !full[pkg] {
			t.Errorf("the full build does not link %s: is this test still looking at the right names?", pkg)
		}
	}
	for d := range host {
		if strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "sigs.k8s.io/controller-runtime") ||
			d == "net/http/pprof" || d == "runtime/pprof" || d == "html/template" {
			t.Errorf("the host build links %s", d)
		}
	}
}

// TestHostBuildRefuses: the host build says what it lacks when asked for it, before
// anything starts, and exits as for a bad command line (2).
func TestHostBuildRefuses(t *testing.T) {
	bin := testbin.PathTags(t, programs[0], testbin.HostTags)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--group", "ns/g", "--node", "n1", "--metrics-address", ""}, "without Kubernetes mode"},
		{[]string{"--config", "/nonexistent.conf", "--pprof-address", "127.0.0.1:0"}, "without the profiling endpoint"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("vrrpd-host %v: %v, output %q; want exit 2 saying %q", tc.args, err, out, tc.want)
		}
	}
}
