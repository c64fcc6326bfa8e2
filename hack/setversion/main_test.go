package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the module's root, two levels up.
var repoRoot = filepath.Join("..", "..")

// appVersion reads the chart's appVersion, the version the repository's install names.
func appVersion(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/helm/vrrp-operator/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion: (.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return string(m[1])
}

// TestRepositoryNamesOneVersion: every file make release sets names the chart's
// appVersion, each on exactly the one line setversion rewrites (so a file reshaped
// since is found here, not by a release that misses it).
func TestRepositoryNamesOneVersion(t *testing.T) {
	v := appVersion(t, repoRoot)
	if err := set(repoRoot, v, true); err != nil {
		t.Error(err)
	}
}

// copyTree copies the files setversion edits into a new root.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	for _, e := range edits {
		b, err := os.ReadFile(filepath.Join(repoRoot, e.file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, e.file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestSetVersion: a new version reaches every line, and only those lines.
func TestSetVersion(t *testing.T) {
	root := copyTree(t)
	old := appVersion(t, root)
	const v = "v1.4.0-rc.1"
	if err := run([]string{"-root", root, v}); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-root", root, "-check", v}); err != nil {
		t.Errorf("-check after setting: %v", err)
	}
	if err := run([]string{"-root", root, "-check", "v1.4.1"}); err == nil {
		t.Error("-check of another version passed")
	}
	want := map[string][]string{
		"deploy/helm/vrrp-operator/Chart.yaml":         {"version: 1.4.0-rc.1", "appVersion: v1.4.0-rc.1"},
		"deploy/operator/kustomization.yaml":           {"  newTag: v1.4.0-rc.1"},
		"deploy/operator/deployment.yaml":              {"        - --vrrpd-image=ghcr.io/vrrp-operator/vrrpd:v1.4.0-rc.1"},
		"deploy/operator/policy/policy_configmap.yaml": {"  vrrpdImage: ghcr.io/vrrp-operator/vrrpd:v1.4.0-rc.1"},
	}
	for f, lines := range want {
		before, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		b, a := strings.Split(string(before), "\n"), strings.Split(string(after), "\n")
		if len(a) != len(b) {
			t.Errorf("%s: %d lines, was %d", f, len(a), len(b))
			continue
		}
		changed := 0
		for i := range a {
			if a[i] == b[i] {
				continue
			}
			changed++
			found := false
			for _, l := range lines {
				found = found || a[i] == l
			}
			if !found {
				t.Errorf("%s:%d: %q became %q", f, i+1, b[i], a[i])
			}
		}
		// The repository's own version is another, so each line changed.
		if old != v && changed != len(lines) {
			t.Errorf("%s: %d lines changed, want %d", f, changed, len(lines))
		}
	}
}

// TestSetVersionRefuses: not a release version, or a file whose line is not found exactly
// once; either way nothing is written.
func TestSetVersionRefuses(t *testing.T) {
	root := copyTree(t)
	for _, v := range []string{"1.4.0", "v1.4", "latest", "v1.4.0+build.1", "v01.4.0", ""} {
		if err := set(root, v, false); err == nil {
			t.Errorf("version %q accepted", v)
		}
	}
	chart := filepath.Join(root, "deploy/helm/vrrp-operator/Chart.yaml")
	orig, _ := os.ReadFile(chart)
	// A second vrrpdImage line in the ConfigMap.
	cm := filepath.Join(root, "deploy/operator/policy/policy_configmap.yaml")
	b, _ := os.ReadFile(cm)
	if err := os.WriteFile(cm, append(b, []byte("  vrrpdImage: ghcr.io/vrrp-operator/vrrpd:v0.0.1\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := set(root, "v9.9.9", false); err == nil || !strings.Contains(err.Error(), "2 lines match") {
		t.Errorf("two vrrpdImage lines: %v", err)
	}
	if now, _ := os.ReadFile(chart); string(now) != string(orig) {
		t.Error("Chart.yaml was written although another file was refused")
	}
}
