// Package netlabtest ties package netlab's labs to a test: the lab is built for
// the test and torn down when it ends, and a machine that cannot build one
// skips the test, except under CI=true, where that is a failure.
package netlabtest

import (
	"os"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// Require skips the test when the machine cannot build a lab (not root, or no
// ip command), except under CI=true, where a lab test must never be skipped
// silently, so it fails instead.
func Require(t testing.TB) {
	t.Helper()
	if err := netlab.Usable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("netlab: CI=true but cannot build a lab: %v", err)
		}
		t.Skipf("netlab: %v (set CI=true to make this a failure)", err)
	}
}

// New builds a lab with the named hosts for a test (see [Require]) and tears
// it down, processes included, when the test ends.
func New(t testing.TB, hosts ...string) *netlab.Lab {
	t.Helper()
	Require(t)
	lab, err := netlab.Create(hosts...)
	if err != nil {
		t.Fatalf("netlab: %v", err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("netlab: teardown: %v", err)
		}
	})
	return lab
}
