package vrrp

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The ledger's promise is a test for every requirement; this keeps the promise checkable.
// TestConformanceLedger reads CONFORMANCE.md and fails when a test it cites does not exist:
// the top-level function (Test, Fuzz or Benchmark) in the Go test files of its package,
// and each subtest level among the string literals that can name it.

// ledgerRef matches a cited test: `TestX`, `TestX/sub/...`, `FuzzX`, `BenchmarkX`, or
// `…/sub` continuing the previous citation's function.
var ledgerRef = regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]*(?:/[^`]*)?|…/[^`]+)`")

// ledgerPath matches a package path named in a row: a directory of the module (or a file in
// it), such as internal/daemon, internal/transport or fuzz/instance_test.go.
var ledgerPath = regexp.MustCompile(`\b(?:internal|test|cmd|fuzz|garp|vip|controller)(?:/[A-Za-z0-9_.-]+)*`)

// defaultLedgerPackages are where a citation without a path is looked for: the ledger says
// its tests run in ./vrrp, and the fuzz targets in ./fuzz.
var defaultLedgerPackages = []string{"vrrp", "fuzz"}

// testPackage is what the test files of one directory declare.
type testPackage struct {
	funcs map[string]*ast.FuncDecl
	// shared are the string literals outside any function (tables of subtest names).
	shared []string
}

type ledgerChecker struct {
	root string
	pkgs map[string]*testPackage
}

func (lc *ledgerChecker) pkg(dir string) (*testPackage, error) {
	if p, ok := lc.pkgs[dir]; ok {
		return p, nil
	}
	files, err := filepath.Glob(filepath.Join(lc.root, dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	p := &testPackage{funcs: map[string]*ast.FuncDecl{}}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				if fn.Recv == nil {
					p.funcs[fn.Name.Name] = fn
				}
				continue
			}
			p.shared = append(p.shared, stringLiterals(d)...)
		}
	}
	lc.pkgs[dir] = p
	return p, nil
}

func stringLiterals(n ast.Node) []string {
	var out []string
	ast.Inspect(n, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

// subtestMatches reports whether the subtest name seg (as `go test` prints it, spaces as
// underscores; a * in the ledger stands for any text) can come from the literal lit, which
// may be a format string.
func subtestMatches(seg, lit string) bool {
	lit = strings.ReplaceAll(lit, " ", "_")
	var re strings.Builder
	re.WriteString("^")
	fixed := 0
	for i := 0; i < len(lit); i++ {
		if lit[i] == '%' && i+1 < len(lit) {
			re.WriteString(".+")
			i++
			continue
		}
		fixed++
		re.WriteString(regexp.QuoteMeta(lit[i : i+1]))
	}
	re.WriteString("$")
	if fixed < 3 && fixed < len(lit) {
		return false // a format like "%v" or "%d: %v" would name anything
	}
	litRE, err := regexp.Compile(re.String())
	if err != nil {
		return false
	}
	if !strings.Contains(seg, "*") {
		return litRE.MatchString(seg)
	}
	// A wildcard citation: some literal must fit the pattern.
	segRE := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(seg), `\*`, ".*") + "$")
	return segRE.MatchString(lit)
}

// find reports whether name (Func or Func/sub/...) exists in the package dir.
func (lc *ledgerChecker) find(dir, name string) (bool, error) {
	p, err := lc.pkg(dir)
	if err != nil {
		return false, err
	}
	parts := strings.Split(name, "/")
	fn, ok := p.funcs[parts[0]]
	if !ok {
		return false, nil
	}
	lits := append(stringLiterals(fn.Body), p.shared...)
	for _, seg := range parts[1:] {
		found := false
		for _, l := range lits {
			if subtestMatches(seg, l) {
				found = true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// check returns one line per citation of ledger that names no existing test.
func (lc *ledgerChecker) check(ledger string) ([]string, int, error) {
	var problems []string
	cited := 0
	for n, line := range strings.Split(ledger, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		dirs := append([]string(nil), defaultLedgerPackages...)
		for _, p := range ledgerPath.FindAllString(line, -1) {
			p = strings.TrimRight(p, ".")
			if strings.HasSuffix(p, ".go") {
				p = filepath.Dir(p)
			}
			if st, err := os.Stat(filepath.Join(lc.root, p)); err == nil && st.IsDir() {
				dirs = append(dirs, p)
			}
		}
		last := ""
		for _, m := range ledgerRef.FindAllStringSubmatch(line, -1) {
			name := m[1]
			if rest, ok := strings.CutPrefix(name, "…/"); ok {
				if last == "" {
					problems = append(problems, fmt.Sprintf("line %d: %q continues no citation", n+1, name))
					continue
				}
				name = last + "/" + rest
			}
			last, _, _ = strings.Cut(name, "/")
			cited++
			found := false
			for _, d := range dirs {
				ok, err := lc.find(d, name)
				if err != nil {
					return nil, 0, err
				}
				if ok {
					found = true
					break
				}
			}
			if !found {
				problems = append(problems, fmt.Sprintf("line %d: %s not found in %v", n+1, name, dirs))
			}
		}
	}
	return problems, cited, nil
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

func TestConformanceLedger(t *testing.T) {
	root := moduleRoot(t)
	ledger, err := os.ReadFile("CONFORMANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	lc := &ledgerChecker{root: root, pkgs: map[string]*testPackage{}}
	problems, cited, err := lc.check(string(ledger))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("CONFORMANCE.md cites a test that does not exist: %s", p)
	}
	if cited < 100 {
		t.Errorf("only %d citations found: the ledger's format and this parser disagree", cited)
	}

	t.Run("the checker fails on what does not exist", func(t *testing.T) {
		bogus := strings.Join([]string{
			"| a | `TestNoSuchThing` |",
			"| b | `TestBackup/no_such_case` |",
			"| c | `TestUnmarshalErrors/version_0`, `…/version_99` |",
			"| d | `TestSimulatedLAN` (internal/daemon) `TestNoSuchDaemonTest` |",
			"| e | `TestHandlePacketRouting` |", // in internal/daemon, not cited with its path
		}, "\n")
		problems, cited, err := lc.check(bogus)
		if err != nil {
			t.Fatal(err)
		}
		if cited != 7 || len(problems) != 5 {
			t.Fatalf("%d citations, problems %q; want 7 citations and 5 problems", cited, problems)
		}
		good := "| f | `TestUnmarshalErrors/version_*`, `…/v2_over_IPv6`; `TestHandlePacketRouting` (internal/daemon) |"
		if problems, _, _ := lc.check(good); len(problems) != 0 {
			t.Fatalf("existing citations reported: %q", problems)
		}
	})
}
