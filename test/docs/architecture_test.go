package docs

import (
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the module's root, from this package's folder.
const root = "../.."

// goList runs the go command in the module's root and returns its output's fields.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list the module's packages: %v", err)
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	return strings.Fields(string(out))
}

// modulePackages are the module's packages by their folders relative to its root: all
// of them, the test-only ones (internal/testing's helpers, test/..., a folder of
// _test.go files only, which go list lists too) included, since a newcomer looking for
// where a test lives reads the same map.
func modulePackages(t *testing.T) []string {
	t.Helper()
	mod := goList(t, "-m")
	if len(mod) != 1 {
		t.Fatalf("go list -m: %v, want the one module", mod)
	}
	var out []string
	for _, p := range goList(t, "./...") {
		rel, ok := strings.CutPrefix(p, mod[0]+"/")
		if !ok {
			t.Fatalf("go list ./... lists %s, outside the module %s", p, mod[0])
		}
		out = append(out, rel)
	}
	if len(out) < 20 {
		t.Fatalf("go list ./... lists only %v", out)
	}
	return out
}

// architecture is ARCHITECTURE.md's backquoted spans, line by line.
type architecture struct {
	spans [][]string     // per line (0-based), the text between each pair of backquotes
	first map[string]int // each span's first line (1-based)
}

func readArchitecture(t *testing.T) architecture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile("`([^`]+)`")
	lines := strings.Split(string(b), "\n")
	a := architecture{spans: make([][]string, len(lines)), first: map[string]int{}}
	for i, l := range lines {
		for _, m := range span.FindAllStringSubmatch(l, -1) {
			a.spans[i] = append(a.spans[i], m[1])
			if _, seen := a.first[m[1]]; !seen {
				a.first[m[1]] = i + 1
			}
		}
	}
	return a
}

// names reports whether the document names the package in folder p: its folder in
// backquotes (`internal/config/` or `internal/config`), or its last element in
// backquotes on a line that names its parent folder so (the row of `internal/testing/`
// lists its helpers as `testenv`, `poll`, ...).
func (a architecture) names(p string) bool {
	if _, ok := a.first[p]; ok {
		return true
	}
	if _, ok := a.first[p+"/"]; ok {
		return true
	}
	parent, base := path.Dir(p), path.Base(p)
	if parent == "." {
		return false
	}
	for _, spans := range a.spans {
		if slices.Contains(spans, parent+"/") && (slices.Contains(spans, base) || slices.Contains(spans, base+"/")) {
			return true
		}
	}
	return false
}

// TestArchitectureNamesEveryPackage: a package ARCHITECTURE.md does not name is one a
// newcomer cannot place (issue 28 found buildinfo and regularfile missing).
func TestArchitectureNamesEveryPackage(t *testing.T) {
	a := readArchitecture(t)
	for _, p := range modulePackages(t) {
		if !a.names(p) {
			t.Errorf("ARCHITECTURE.md does not name the package %s: add it, as `%s/`, to the table of its layer (or, for a helper, by name in its folder's row)", p, p)
		}
	}
}

// TestArchitecturePathsExist: every path ARCHITECTURE.md names in backquotes inside the
// module's folders (a package, a file: `internal/daemon/host.go`) exists, so that a file
// renamed or a package removed is not described where it was.
func TestArchitecturePathsExist(t *testing.T) {
	a := readArchitecture(t)
	var checked int
	for span, line := range a.first {
		// Only spans that are paths: no words, placeholders, globs or ellipses.
		if !strings.Contains(span, "/") || strings.ContainsAny(span, " <>*$") || strings.Contains(span, "...") {
			continue
		}
		top, _, _ := strings.Cut(strings.TrimPrefix(span, "./"), "/")
		if fi, err := os.Stat(filepath.Join(root, top)); top == "" || err != nil || !fi.IsDir() {
			continue // not in the module's folders: /run/vrrpd, an API group, a URL
		}
		checked++
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(span))); err != nil {
			t.Errorf("ARCHITECTURE.md:%d names `%s`, which is not in the tree", line, span)
		}
	}
	if checked < 30 {
		t.Errorf("only %d paths checked: does ARCHITECTURE.md still name its files in backquotes?", checked)
	}
}
