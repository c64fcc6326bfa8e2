package benchreport

import (
	"strings"
	"testing"
)

// The summary: a row per goal in the goals' order (measured or not), then a row per
// headline; values with their units, the ratio, the verdict, and the benchmarks with their
// packages relative to the module.
func TestRenderSummary(t *testing.T) {
	run, err := Parse(strings.NewReader("pkg: example.com/m/test/vrrpd\n" +
		"BenchmarkLoad50/pair/vrrpd-2 1 1 ns/op 0.21 load50-cpu-vrrpd-s\n" +
		"BenchmarkLoad50/pair/keepalived-2 1 1 ns/op 0.42 load50-cpu-keepalived-s\n" +
		"BenchmarkTakeoverOverhead-2 1 1 ns/op 1200 takeover-vip-p99-vrrpd-us 800 takeover-vip-p99-keepalived-us\n" +
		"BenchmarkTakeoverOverhead-2 1 1 ns/op 1000 takeover-vip-p99-vrrpd-us\n" +
		"BenchmarkTakeoverOverhead-2 1 1 ns/op 900 takeover-vip-p99-vrrpd-us\n" +
		"pkg: example.com/m\n" +
		"BenchmarkTop-2 1 1 ns/op 3 head-count-vrrpd-count 12.5 svc-to-vip-p99-vrrpd-ms\n" +
		"--- FAIL: BenchmarkGone/sub\n"))
	if err != nil {
		t.Fatal(err)
	}
	goals := []Goal{
		{Measure: "takeover-vip-p99", Unit: "ms", Op: AtMost, Bound: 1, Text: "VIP p99 ≤ 1 ms"},
		{Measure: "load50-cpu", Unit: "s", Op: AtMost, Bound: 0.6, OfKeepalived: true, Text: "CPU | ≤ 0.6 ×"},
		{Measure: "never-reported", Unit: "s", Op: AtMost, Bound: 1, Text: "nobody measured this"},
		{Measure: "svc-to-vip-p99", Unit: "ms", Op: NoBound, Text: "reported only"},
	}
	heads := []Headline{{"head-count", "a count"}, {"missing-headline", "not there"}}
	var b strings.Builder
	if err := RenderSummary(&b, Summary{Intro: "The run.\n", Rows: Pair(run.Figures), Goals: goals, Headlines: heads,
		Module: "example.com/m", Failed: run.Failed}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	want := "The run.\n\n" +
		"**These benchmarks failed in that run**, so their figures are missing below: BenchmarkGone/sub\n\n" +
		"| what | vrrpd | keepalived | ratio | goal met? | benchmark |\n" +
		"|---|---|---|---|---|---|\n" +
		// three runs of vrrpd (median 1000 µs = 1 ms: met), one of keepalived
		"| VIP p99 ≤ 1 ms | 1000 µs (900–1200, 3 runs) | 800 µs | 1.25× | yes | `BenchmarkTakeoverOverhead ./test/vrrpd` |\n" +
		"| CPU \\| ≤ 0.6 × | 0.21 s | 0.42 s | 0.5× | yes | `BenchmarkLoad50 ./test/vrrpd` |\n" +
		"| nobody measured this | not measured | — |  | not measured |  |\n" +
		"| reported only | 12.5 ms | — |  | — | `BenchmarkTop .` |\n" +
		"| a count | 3 | — |  | — | `BenchmarkTop .` |\n" +
		"| not there | not measured | — |  | — |  |\n"
	if s != want {
		t.Errorf("summary:\n%s\nwant:\n%s", s, want)
	}

	// A goal missed says so.
	b.Reset()
	strict := []Goal{{Measure: "load50-cpu", Unit: "s", Op: AtMost, Bound: 0.4, OfKeepalived: true, Text: "CPU ≤ 0.4 ×"}}
	if err := RenderSummary(&b, Summary{Rows: Pair(run.Figures), Goals: strict}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| CPU ≤ 0.4 × | 0.21 s | 0.42 s | 0.5× | **no** | `BenchmarkLoad50 example.com/m/test/vrrpd` |\n") {
		t.Errorf("a missed goal, without a module:\n%s", b.String())
	}
}

// Every goal and headline of the real lists is a measure of the convention, and no
// headline repeats a goal's measure (the goal's row would take its figure).
func TestHeadlines(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range Goals {
		seen[g.Measure] = true
	}
	for _, h := range Headlines {
		if err := checkMeasure(h.Measure); err != nil {
			t.Error(err)
		}
		if seen[h.Measure] {
			t.Errorf("headline %s repeats a goal's measure or another headline", h.Measure)
		}
		seen[h.Measure] = true
		if h.Text == "" {
			t.Errorf("headline %s has no text", h.Measure)
		}
	}
}

func TestSplice(t *testing.T) {
	doc := "before\n" + BeginMarker + "\nold\nrows\n" + EndMarker + "\nafter\n"
	got, err := Splice(doc, "new")
	if err != nil {
		t.Fatal(err)
	}
	if want := "before\n" + BeginMarker + "\nnew\n" + EndMarker + "\nafter\n"; got != want {
		t.Errorf("Splice = %q, want %q", got, want)
	}
	if sec, err := Between(got); err != nil || sec != "new\n" {
		t.Errorf("Between = %q, %v", sec, err)
	}
	if again, _ := Splice(got, "new\n"); again != got {
		t.Errorf("splicing the same section again changed the document: %q", again)
	}
	if empty, err := Splice(doc, ""); err != nil || empty != "before\n"+BeginMarker+"\n"+EndMarker+"\nafter\n" {
		t.Errorf("an empty section: %q, %v", empty, err)
	}
	for name, bad := range map[string]string{
		"no markers":    "text\n",
		"no end":        BeginMarker + "\nx\n",
		"no begin":      "x\n" + EndMarker + "\n",
		"end first":     EndMarker + "\nx\n" + BeginMarker + "\n",
		"begin twice":   BeginMarker + "\n" + BeginMarker + "\n" + EndMarker + "\n",
		"end twice":     BeginMarker + "\n" + EndMarker + "\n" + EndMarker + "\n",
		"not own line":  "text " + BeginMarker + "\n" + EndMarker + "\n",
		"text after it": BeginMarker + " text\n" + EndMarker + "\n",
	} {
		if _, err := Splice(bad, "new\n"); err == nil {
			t.Errorf("%s: Splice accepted %q", name, bad)
		}
		if _, err := Between(bad); err == nil {
			t.Errorf("%s: Between accepted %q", name, bad)
		}
	}
}
