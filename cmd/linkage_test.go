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
			if !strings.Contains(line, "-tags '$(VRRPD_TAGS)'") && !strings.Contains(line, "-tags "+testbin.VrrpdTags+" ") {
				t.Errorf("%s builds vrrpd without its tags: %s", name, strings.TrimSpace(line))
			}
		}
		if builds == 0 {
			t.Errorf("%s has no build of ./cmd/vrrpd", name)
		}
	}
}
