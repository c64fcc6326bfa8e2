package benchreport

import (
	"slices"
	"strings"
	"testing"
)

// A raw output of two runs: the full one, then an earlier merge of BenchmarkB alone.
const mergeRaw = "vrrpd-bench-date: 2026-11-28T11:00:00Z\nvrrpd-bench-note: quiet\n" +
	"goos: linux\npkg: example.com/lab\ncpu: CPU one\n" +
	"BenchmarkA-2 \t 1\t 9 ns/op\t 5 a-vrrpd-ms\n" +
	"--- BENCH: BenchmarkA-2\n    a_test.go:1: A's log\n" +
	"BenchmarkC/sub/vrrpd-2\n" + // a result split by a child's output
	"child output\n" +
	"  \t 1\t 9 ns/op\t 7 c-vrrpd-ms\n" +
	"--- FAIL: BenchmarkC/other\n    --- FAIL: BenchmarkC/other/deeper\n        c_test.go:2: C failed\n" +
	"BenchmarkD-2 \t 1\t 9 ns/op\t 1 d-vrrpd-ms\n" +
	"PASS\nok  \texample.com/lab\t9s\n" +
	"vrrpd-bench-date: 2026-11-28T15:00:00Z\nvrrpd-bench-note: busy\n" +
	"goos: linux\npkg: example.com/lab\ncpu: CPU two\n" +
	"BenchmarkB-2 \t 1\t 9 ns/op\t 2 b-vrrpd-ms\n" +
	"--- SKIP: BenchmarkB/v6\n    b_test.go:3: no IPv6\n" +
	"PASS\n"

// Parse keeps each run's machine lines and benchmarks apart; Config stays the first run's.
func TestParseBlocks(t *testing.T) {
	run, err := Parse(strings.NewReader(mergeRaw))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Blocks) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(run.Blocks), run.Blocks)
	}
	for i, want := range []struct {
		date, note, cpu string
		benchmarks      []string
	}{
		{"2026-11-28T11:00:00Z", "quiet", "CPU one", []string{"BenchmarkA", "BenchmarkC", "BenchmarkD"}},
		{"2026-11-28T15:00:00Z", "busy", "CPU two", []string{"BenchmarkB"}},
	} {
		c := run.Blocks[i].Config
		if c[DateKey] != want.date || c["vrrpd-bench-note"] != want.note || c["cpu"] != want.cpu ||
			!slices.Equal(run.Blocks[i].Benchmarks, want.benchmarks) {
			t.Errorf("block %d: %v %v, want %+v", i, c, run.Blocks[i].Benchmarks, want)
		}
	}
	if run.Config[DateKey] != "2026-11-28T11:00:00Z" || run.Config["cpu"] != "CPU one" {
		t.Errorf("Config is not the first run's: %v", run.Config)
	}
	// Without machine lines the whole output is one block.
	plain, err := Parse(strings.NewReader("pkg: p\nBenchmarkX-2 \t 1\t 9 ns/op\n"))
	if err != nil || len(plain.Blocks) != 1 || !slices.Equal(plain.Blocks[0].Benchmarks, []string{"BenchmarkX"}) {
		t.Errorf("plain output: %v %+v", err, plain.Blocks)
	}
}

// Merge replaces every line of the benchmarks the new run reports on, wherever they are,
// drops a run left with no benchmark, and appends the new run whole.
func TestMerge(t *testing.T) {
	add := "vrrpd-bench-date: 2026-11-28T21:00:00Z\nvrrpd-bench-note: loaded\n" +
		"pkg: example.com/lab\n" +
		"BenchmarkC/sub/vrrpd-2 \t 1\t 9 ns/op\t 70 c-vrrpd-ms\n" +
		"BenchmarkB-2 \t 1\t 9 ns/op\t 20 b-vrrpd-ms\n" +
		"ok  \texample.com/lab\t9s" // no newline at the end
	got, replaced, err := Merge(mergeRaw, add)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(replaced, []string{"BenchmarkC", "BenchmarkB"}) {
		t.Errorf("replaced %v", replaced)
	}
	want := "vrrpd-bench-date: 2026-11-28T11:00:00Z\nvrrpd-bench-note: quiet\n" +
		"goos: linux\npkg: example.com/lab\ncpu: CPU one\n" +
		"BenchmarkA-2 \t 1\t 9 ns/op\t 5 a-vrrpd-ms\n" +
		"--- BENCH: BenchmarkA-2\n    a_test.go:1: A's log\n" +
		"child output\n" +
		"BenchmarkD-2 \t 1\t 9 ns/op\t 1 d-vrrpd-ms\n" +
		"PASS\nok  \texample.com/lab\t9s\n" +
		add + "\n"
	if got != want {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
	run, err := Parse(strings.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string][]float64{}
	for _, f := range run.Figures {
		vals[f.Measure] = append(vals[f.Measure], f.Value)
	}
	for m, v := range map[string][]float64{"a": {5}, "b": {20}, "c": {70}, "d": {1}} {
		if !slices.Equal(vals[m], v) {
			t.Errorf("%s: %v, want %v", m, vals[m], v)
		}
	}
	if len(run.Failed) != 0 || len(run.Skipped) != 0 || len(run.Blocks) != 2 ||
		run.Blocks[1].Config["vrrpd-bench-note"] != "loaded" {
		t.Errorf("failed %v, skipped %v, blocks %+v", run.Failed, run.Skipped, run.Blocks)
	}

	// Merging the same run again changes nothing: its own earlier lines go.
	again, _, err := Merge(got, add)
	if err != nil || again != got {
		t.Errorf("a second merge of the same run: %v\n%s", err, again)
	}
}

func TestMergeRejects(t *testing.T) {
	for name, add := range map[string]string{
		"no machine lines": "pkg: p\nBenchmarkB-2 \t 1\t 9 ns/op\n",
		"no benchmark":     "vrrpd-bench-date: 2026-11-28T21:00:00Z\nPASS\n",
		"two runs": "vrrpd-bench-date: 2026-11-28T21:00:00Z\nBenchmarkB-2 \t 1\t 9 ns/op\n" +
			"vrrpd-bench-date: 2026-11-28T22:00:00Z\nBenchmarkC-2 \t 1\t 9 ns/op\n",
	} {
		if out, _, err := Merge(mergeRaw, add); err == nil {
			t.Errorf("%s: merged:\n%s", name, out)
		}
	}
}
