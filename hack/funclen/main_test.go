package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// funcOf is a function (or method, with recv) of n lines from func to its closing brace.
func funcOf(recv, name string, n int) string {
	return "func " + recv + name + "() {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
}

// A function of 101 lines is found, one of 100 is not, nor anything in a test file; a
// method is named by its type.
func TestLongFuncs(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\ntype T[X any] struct{}\n\n" + funcOf("", "ok", 100) + funcOf("", "long", 101) + funcOf("(t *T[X]) ", "method", 150)
	prod, test := filepath.Join(dir, "p.go"), filepath.Join(dir, "p_test.go")
	for _, f := range []string{prod, test} {
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long, err := longFuncs([]string{prod, test}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range long {
		got = append(got, f.name+":"+strconv.Itoa(f.lines))
	}
	if strings.Join(got, " ") != "long:101 T.method:150" {
		t.Errorf("found %v, want long (101 lines) and T.method (150)", got)
	}
	if err := run([]string{prod}, &strings.Builder{}); err == nil {
		t.Error("run passed a file with long functions")
	}
	okOnly := filepath.Join(dir, "ok.go")
	if err := os.WriteFile(okOnly, []byte("package p\n\n"+funcOf("", "ok", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{okOnly}, &strings.Builder{}); err != nil {
		t.Errorf("run failed a file without long functions: %v", err)
	}
}
