package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrerequisites: every missing piece is named with how to get it, in one message;
// ping is never asked for.
func TestPrerequisites(t *testing.T) {
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	all := func(c string) (string, error) { return "/usr/bin/" + c, nil }
	var asked []string
	record := func(c string) (string, error) { asked = append(asked, c); return "/usr/bin/" + c, nil }

	if err := prerequisites(Options{}, record, 0); err != nil {
		t.Errorf("everything there: %v", err)
	}
	for _, c := range asked {
		if c == "ping" {
			t.Error("the demo asks for a ping command")
		}
	}
	err := prerequisites(Options{}, none, 1000)
	if err == nil {
		t.Fatal("nothing there, not root: no error")
	}
	for _, want := range []string{"root", "sudo make demo", "ip (", "iproute2", "go (", "--vrrpd PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
	// With --vrrpd, go is not needed, but the binary must exist.
	if err := prerequisites(Options{Vrrpd: filepath.Join(t.TempDir(), "vrrpd")}, all, 0); err == nil || !strings.Contains(err.Error(), "--vrrpd") {
		t.Errorf("missing --vrrpd binary: %v", err)
	}
	noGo := func(c string) (string, error) {
		if c == "go" {
			return "", errors.New("not found")
		}
		return "/usr/bin/" + c, nil
	}
	if err := prerequisites(Options{Vrrpd: "/proc/self/exe"}, noGo, 0); err != nil {
		t.Errorf("--vrrpd given, no go: %v", err)
	}
}
