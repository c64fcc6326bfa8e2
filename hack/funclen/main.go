// Command funclen fails when a production function (one outside a _test.go file) is
// longer than 100 lines, from its func keyword to its closing brace: such a function
// does several things without naming them, and a newcomer must read it whole to change
// one (issue 28). `make lint` runs it over the files git tracks, so none can grow back.
//
//	funclen [-max N] [FILE.go ...]   without files: every tracked .go file below .
//
// It is a development tool, never shipped.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// allowed are functions over the limit let through for a while ("path:name"), say while
// a change that splits them is under way; each stays allowed only while it is too long,
// so that the list cannot outlive the functions. Empty since issue 28.
var allowed = []string{}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("funclen", flag.ContinueOnError)
	limit := fs.Int("max", 100, "the longest a production function may be, in lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files := fs.Args()
	if len(files) == 0 {
		b, err := exec.Command("git", "ls-files", "*.go").Output()
		if err != nil {
			return fmt.Errorf("git ls-files: %w", err)
		}
		files = strings.Fields(string(b))
	}
	long, err := longFuncs(files, *limit)
	if err != nil {
		return err
	}
	var bad []string
	seen := map[string]bool{}
	for _, f := range long {
		seen[f.id] = true
		if !slices.Contains(allowed, f.id) {
			bad = append(bad, fmt.Sprintf("%s:%d: %s is %d lines, more than %d: split it into steps with names", f.file, f.line, f.name, f.lines, *limit))
		}
	}
	if len(fs.Args()) == 0 {
		for _, id := range allowed {
			if !seen[id] {
				bad = append(bad, fmt.Sprintf("%s is allowed to be long but is not (or is gone): take it off the list in hack/funclen", id))
			}
		}
	}
	for _, b := range bad {
		fmt.Fprintln(out, b)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d function(s) to split", len(bad))
	}
	return nil
}

// longFunc is a function over the limit.
type longFunc struct {
	file, name, id string
	line, lines    int
}

// longFuncs returns the functions and methods of the files (test files passed over)
// longer than limit lines.
func longFuncs(files []string, limit int) ([]longFunc, error) {
	var out []longFunc
	fset := token.NewFileSet()
	for _, path := range files {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
			if n := end - start + 1; n > limit {
				name := funcName(fd)
				out = append(out, longFunc{file: path, name: name, id: filepath.ToSlash(path) + ":" + name, line: start, lines: n})
			}
		}
	}
	return out, nil
}

// funcName is the function's name, a method's as Type.Method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}
