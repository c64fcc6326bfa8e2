package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
)

// TestREADMEMeasured: README.md's measured table is what benchreport makes of
// docs/bench/raw.txt, so that a figure edited by hand, or a raw.txt replaced without
// `make bench-report`, fails make test.
func TestREADMEMeasured(t *testing.T) {
	const root = "../.."
	raw := filepath.Join(root, "docs", "bench", "raw.txt")
	parsed, err := parseRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := readmeSection(parsed, raw, filepath.Join(root, "docs", "bench"), root)
	doc, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := benchreport.Between(string(doc))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "(none)", "(none)"
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("README.md's section between %s and %s is not what docs/bench/raw.txt makes: run make bench-report "+
					"(and change the generator, internal/testing/benchreport, rather than the table). Its line %d:\n%s\nwant:\n%s",
					benchreport.BeginMarker, benchreport.EndMarker, i+1, g, w)
			}
		}
	}
	// The section is the real run's: the packages named as go test takes them, and the
	// figure of the CPU goal there.
	for _, s := range []string{"./test/vrrpd`", "| yes |", "`BenchmarkLoad50 ./test/vrrpd`"} {
		if !strings.Contains(want, s) {
			t.Errorf("the section made of docs/bench/raw.txt lacks %q:\n%s", s, want)
		}
	}
}

// `report -readme` rewrites the section between the markers from the same raw output as
// the report, and leaves the text around it alone; a README without the markers fails
// before anything is written.
func TestReportREADMESection(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "docs", "bench")
	raw := filepath.Join(out, "raw.txt")
	head := machine(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC), "idle", "abc1234")
	body := "goos: linux\npkg: " + module + "/test/vrrpd\ncpu: Some CPU\n" +
		"BenchmarkLoad50/pair/vrrpd-2 \t 1\t 9 ns/op\t 0.3 load50-cpu-vrrpd-s\n" +
		"BenchmarkLoad50/pair/keepalived-2 \t 1\t 9 ns/op\t 0.4 load50-cpu-keepalived-s\n" +
		"BenchmarkMemory50-2 \t 1\t 9 ns/op\t 17.5 peak-rss-vrrpd-MiB\t 9.8 peak-rss-keepalived-MiB\n" +
		"BenchmarkFailover/v3-100ms/vrrpd-2 \t 1\t 9 ns/op\t 361.2 failover-v3-100ms-p50-vrrpd-ms\n" +
		"pkg: example.com/elsewhere\n" +
		"BenchmarkOther-2 \t 1\t 9 ns/op\t 7 svc-to-vip-p99-vrrpd-ms\n"
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, []byte(head+body), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	before, after := "# Title\n\n## Measured\n\nProse before.\n\n", "\nProse after.\n"
	stale := benchreport.BeginMarker + "\n| an old | hand-written | row |\n" + benchreport.EndMarker + "\n"
	if err := os.WriteFile(readme, []byte(before+stale+after), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"report", "-raw", raw, "-samples", filepath.Join(dir, "none"), "-out", out, "-readme", readme}
	if err := run(args, os.Stdout); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.HasPrefix(doc, before+benchreport.BeginMarker+"\n") || !strings.HasSuffix(doc, benchreport.EndMarker+"\n"+after) {
		t.Errorf("the text around the markers changed:\n%s", doc)
	}
	if strings.Contains(doc, "hand-written") {
		t.Errorf("the old rows stayed:\n%s", doc)
	}
	for _, want := range []string{
		"from docs/bench/raw.txt;",
		"From the `make bench` of tree abc1234, started 2026-11-28T09:00:00Z on ",
		"load: idle.",
		"[docs/bench/README.md](docs/bench/README.md)",
		"| 0.3 s | 0.4 s | 0.75× | **no** | `BenchmarkLoad50 ./test/vrrpd` |",
		"| 17.5 MiB | 9.8 MiB | 1.786× | **no** | `BenchmarkMemory50 ./test/vrrpd` |",
		"| 361.2 ms | — |  | — | `BenchmarkFailover ./test/vrrpd` |",
		"| 7 ms | — |  | yes | `BenchmarkOther example.com/elsewhere` |",
		"| not measured | — |  | not measured |  |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("README.md lacks %q:\n%s", want, doc)
		}
	}
	// The section is what TestREADMEMeasured makes of the same raw output.
	parsed, err := parseRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := benchreport.Between(doc); got != readmeSection(parsed, raw, out, dir) {
		t.Errorf("the section written is not readmeSection's:\n%s", got)
	}

	// No markers: an error, and neither file written.
	if err := os.WriteFile(readme, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, "README.md")); err != nil {
		t.Fatal(err)
	}
	if err := run(args, os.Stdout); err == nil || !strings.Contains(err.Error(), benchreport.BeginMarker) {
		t.Errorf("a README without markers: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "README.md")); !os.IsNotExist(err) {
		t.Errorf("the report was written although the README could not be: %v", err)
	}
}

// TestBenchReportCurrent: docs/bench/README.md is what benchreport makes of the raw.txt and
// samples/ beside it, so that a raw.txt replaced without `make bench-report`, or a figure
// edited by hand in the report, fails make test as TestREADMEMeasured does for the README.
func TestBenchReportCurrent(t *testing.T) {
	src := filepath.Join("..", "..", "docs", "bench")
	out := filepath.Join(t.TempDir(), "docs", "bench")
	if err := os.CopyFS(out, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := report(filepath.Join(out, "raw.txt"), filepath.Join(out, "samples"), out, ""); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(src, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "(none)", "(none)"
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/bench/README.md is not what its raw.txt and samples/ make: run make bench-report. Its line %d:\n%s\nwant:\n%s", i+1, g, w)
			}
		}
	}
	if !strings.Contains(string(want), "| yes |") {
		t.Errorf("the report made of docs/bench/raw.txt holds no goal met:\n%s", want)
	}
}
