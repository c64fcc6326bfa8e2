package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/version"
)

// TestHelpNamesCommands: --help (and help) lists every command and exits 0.
func TestHelpNamesCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitOK {
			t.Errorf("%v: exit %d", args, code)
		}
		help := out.String() + errb.String()
		for _, want := range []string{"vrrpd check", "vrrpd status", "vrrpd version", "--group", "-config", "-metrics-address"} {
			if !strings.Contains(help, want) {
				t.Errorf("%v: %q missing from:\n%s", args, want, help)
			}
		}
	}
	for _, cmd := range []string{"check", "status", "probe"} {
		var out, errb bytes.Buffer
		if code := run([]string{cmd, "--help"}, &out, &errb); code != exitOK || !strings.Contains(errb.String(), "vrrpd "+cmd) {
			t.Errorf("%s --help: exit %d, %q", cmd, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"frobnicate"}, &out, &errb); code != exitConfig || !strings.Contains(errb.String(), "check, status, probe, version") {
		t.Errorf("unknown command: exit %d, %q", code, errb.String())
	}
}

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"--config", "x", "--version"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitOK || out.String() != version.String("vrrpd")+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// TestVersionLdflags builds vrrpd as the Makefile does, with the version set by -ldflags
// -X, and runs it: --version prints it, and so does the log's first line.
func TestVersionLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vrrpd")
	}
	bin := filepath.Join(t.TempDir(), "vrrpd")
	const v = "v0.0.0-test-1-gdeadbee"
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X github.com/vrrp-operator/vrrp-operator/internal/version.Version="+v, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "vrrpd "+v+" (go") {
		t.Errorf("--version: %v %q", err, out)
	}
	// A configuration that fails after the logger is made: the first line still names the version.
	bad := filepath.Join(t.TempDir(), "bad.conf")
	if err := os.WriteFile(bad, []byte("vrrp_instance {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", bad, "--metrics-address", "")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !strings.Contains(first, "version="+v) {
		t.Errorf("first log line %q does not name the version", first)
	}
}
