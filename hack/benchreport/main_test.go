package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
)

// The report from a raw output with machine lines, a failing benchmark, conventional
// figures and samples: README.md with the table, one distribution plot per sampled
// measure, the CPU plot, and no plot of an earlier run left behind.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bench")
	samples := filepath.Join(dir, "samples")
	raw := filepath.Join(dir, "raw.txt")
	head := machine(time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC), "idle", "v1.2.3")
	body := "goos: linux\npkg: example.com/lab\ncpu: Some CPU\n" +
		"BenchmarkCapacity/ipv6/vrrpd-2 \t 1\t 9 ns/op\t 1.5 cpu-100ms-ipv6-10-instances-vrrpd-pct\t 4.5 cpu-100ms-ipv6-50-instances-vrrpd-pct\n" +
		"BenchmarkCapacity/ipv6/keepalived-2 \t 1\t 9 ns/op\t 3 cpu-100ms-ipv6-10-instances-keepalived-pct\n" +
		"BenchmarkLoad50/vrrpd-2 \t 1\t 9 ns/op\t 0.3 load50-cpu-vrrpd-s\n" +
		"BenchmarkLoad50/keepalived-2 \t 1\t 9 ns/op\t 0.4 load50-cpu-keepalived-s\n" +
		"--- FAIL: BenchmarkTakeoverAdvert/vrrpd\n    conformance_test.go:312: p99 too high\n"
	if err := os.WriteFile(raw, []byte(head+body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(benchreport.SamplesEnv, samples)
	benchreport.WriteSamples(t, "failover-v3-100ms", benchreport.VRRPD, "ms", []float64{365, 366, 372})
	benchreport.WriteSamples(t, "failover-v3-100ms", benchreport.Keepalived, "ms", []float64{368, 378})
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "stale.svg"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"report", "-raw", raw, "-samples", samples, "-out", out}, os.Stdout); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	for _, want := range []string{
		"- started: 2026-11-23T17:00:00Z",
		"- load: idle",
		"- tree: v1.2.3",
		"- CPU: Some CPU",
		"| `load50-cpu` | s | 0.3 | 0.4 | 0.75× |",
		"| **no** |",
		"**These benchmarks failed**",
		"BenchmarkTakeoverAdvert/vrrpd",
		"![failover-v3-100ms: distribution (ms)](failover-v3-100ms.svg)",
		"(cpu-instances.svg)",
		"[raw.txt](../raw.txt)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("README.md lacks %q:\n%s", want, s)
		}
	}
	for _, f := range []string{"failover-v3-100ms.svg", "cpu-instances.svg"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "keepalived") {
			t.Errorf("%s is not an SVG with both daemons", f)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "stale.svg")); !os.IsNotExist(err) {
		t.Errorf("an earlier run's plot left: %v", err)
	}
}

// Without samples or CPU figures there is no plot, and a goal nobody measured says so.
func TestReportNothingMeasured(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw.txt")
	if err := os.WriteFile(raw, []byte("PASS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"report", "-raw", raw, "-samples", filepath.Join(dir, "none"), "-out", dir}, os.Stdout); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(readme); strings.Contains(s, "## Plots") || !strings.Contains(s, "| `svc-to-vip-p99` | ms | not measured |") ||
		!strings.Contains(s, "- started: not recorded") {
		t.Errorf("README.md:\n%s", s)
	}
	if svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg")); len(svgs) > 0 {
		t.Errorf("plots of nothing: %v", svgs)
	}
}

func TestMachine(t *testing.T) {
	s := machine(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "two  engineers'\nbuilds", "")
	for _, want := range []string{"vrrpd-bench-date: 2026-01-02T03:04:05Z\n", "vrrpd-bench-cpus: ", "vrrpd-bench-go: go", "vrrpd-bench-note: two engineers' builds\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("machine lines lack %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "vrrpd-bench-version") {
		t.Error("an empty version written")
	}
	parsed, err := benchreport.Parse(strings.NewReader(s))
	if err != nil || parsed.Config["vrrpd-bench-note"] != "two engineers' builds" {
		t.Errorf("the lines do not parse back: %v %q", err, parsed.Config)
	}
	if err := run([]string{"nonsense"}, os.Stdout); err == nil {
		t.Error("an unknown command accepted")
	}
}

// merge appends a run of one benchmark to raw.txt and replaces that benchmark's lines and
// samples, keeping the others'; the report then names the later run, its machine and its
// benchmarks, and the README's section says which figures are from it.
func TestMergeCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "docs", "bench")
	raw, samples := filepath.Join(out, "raw.txt"), filepath.Join(out, "samples")
	newRaw, newSamples := filepath.Join(dir, "new.txt"), filepath.Join(dir, "new-samples")
	writeSample := func(dir, bench, who string, values ...float64) {
		t.Helper()
		b, err := json.Marshal(benchreport.Samples{Benchmark: bench, Measure: "failover-v3-100ms", Who: who, Unit: "ms", Values: values})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, benchreport.Unit("failover-v3-100ms", who, "ms")+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := machine(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC), "idle", "aaa1111") +
		"goos: linux\npkg: " + module + "/test/vrrpd\ncpu: Some CPU\n" +
		"BenchmarkFailover/v3-100ms/vrrpd-2 \t 1\t 9 ns/op\t 361.2 failover-v3-100ms-p50-vrrpd-ms\n" +
		"BenchmarkFailover/v3-100ms/keepalived-2 \t 1\t 9 ns/op\t 370 failover-v3-100ms-p50-keepalived-ms\n" +
		"BenchmarkLoad50/pair/vrrpd-2 \t 1\t 9 ns/op\t 0.3 load50-cpu-vrrpd-s\n" +
		"PASS\n"
	second := machine(time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC), "busy: a build beside it", "bbb2222") +
		"pkg: " + module + "/test/vrrpd\n" +
		"BenchmarkFailover/v3-100ms/vrrpd-2 \t 1\t 9 ns/op\t 362.5 failover-v3-100ms-p50-vrrpd-ms\n" +
		"PASS\n"
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newRaw, []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}
	writeSample(samples, "BenchmarkFailover/v3-100ms/vrrpd", "vrrpd", 361, 362)
	writeSample(samples, "BenchmarkFailover/v3-100ms/keepalived", "keepalived", 370)
	writeSample(newSamples, "BenchmarkFailover/v3-100ms/vrrpd", "vrrpd", 362, 363, 364)

	if err := run([]string{"merge", "-raw", raw, "-samples", samples, "-new", newRaw, "-new-samples", newSamples}, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := benchreport.ReadSamples(samples)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Who != "vrrpd" || len(got[0].Values) != 3 {
		t.Errorf("samples after the merge: %+v, want the new run's vrrpd side alone", got)
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte(benchreport.BeginMarker+"\n"+benchreport.EndMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"report", "-raw", raw, "-samples", samples, "-out", out, "-readme", readme}, io.Discard); err != nil {
		t.Fatal(err)
	}
	rep, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- started: 2026-11-28T09:00:00Z\n- load: idle\n",
		"## Later runs",
		"### BenchmarkFailover\n\n- started: 2026-11-28T21:00:00Z\n- load: busy: a build beside it\n",
		"- tree: bbb2222",
		"| `failover-v3-100ms-p50` | ms | 362.5 | — |", // the old keepalived figure went with its run's lines
		"| `load50-cpu` | s | 0.3 |",
	} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("the report lacks %q:\n%s", want, rep)
		}
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"From the `make bench` of tree aaa1111, started 2026-11-28T09:00:00Z",
		"The figures of BenchmarkFailover are from a later run merged in (`make bench-merge`), of tree bbb2222, " +
			"started 2026-11-28T21:00:00Z, load average ",
		"load: busy: a build beside it.",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the README's section lacks %q:\n%s", want, doc)
		}
	}

	// A run without machine lines is refused, and nothing changes.
	if err := os.WriteFile(newRaw, []byte("BenchmarkLoad50/pair/vrrpd-2 \t 1\t 9 ns/op\t 0.9 load50-cpu-vrrpd-s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(raw)
	if err := run([]string{"merge", "-raw", raw, "-samples", samples, "-new", newRaw}, io.Discard); err == nil {
		t.Error("a run without machine lines merged")
	}
	if after, _ := os.ReadFile(raw); string(after) != string(before) {
		t.Error("a refused merge changed raw.txt")
	}
}
