package benchreport

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Plot is a picture the report shows, by its file name relative to the report.
type Plot struct {
	Title string
	File  string
}

// Report is everything the Markdown report says.
type Report struct {
	Title   string
	Intro   string      // Markdown: what the report is and how to reproduce it
	Machine [][2]string // label, value
	// Later are the runs merged after the first (make bench-merge), each with the
	// benchmarks whose figures it holds.
	Later []LaterRun
	Rows  []*Row
	Goals []Goal
	Other []Figure // figures outside the convention
	Plots []Plot
	// Failed and Skipped are Run's: benchmarks whose figures are missing.
	Failed, Skipped []string
}

// LaterRun is a run merged into the raw output after the first: the benchmarks it
// measured (their figures in the first run were replaced) and its machine, labelled.
type LaterRun struct {
	Benchmarks []string
	Machine    [][2]string
}

// Render writes the report: the machine, then one table of every conventional figure
// (issue 12's goals first, in their order, "not measured" where nobody reported one;
// then every other measure), the plots, then the other benchmarks' figures.
func Render(w io.Writer, rep Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", rep.Title)
	if rep.Intro != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(rep.Intro))
	}
	if len(rep.Machine) > 0 {
		b.WriteString("## Machine\n\n")
		for _, m := range rep.Machine {
			fmt.Fprintf(&b, "- %s: %s\n", m[0], cell(m[1]))
		}
		b.WriteString("\n")
	}
	if len(rep.Later) > 0 {
		b.WriteString("## Later runs\n\n")
		b.WriteString("The figures of these benchmarks come from later runs, merged into the raw output with " +
			"`make bench-merge` (which drops any earlier run's lines of the same benchmarks); the machine above is " +
			"the first run's and holds for every other figure.\n\n")
		for _, l := range rep.Later {
			fmt.Fprintf(&b, "### %s\n\n", cell(strings.Join(l.Benchmarks, ", ")))
			for _, m := range l.Machine {
				fmt.Fprintf(&b, "- %s: %s\n", m[0], cell(m[1]))
			}
			b.WriteString("\n")
		}
	}
	for _, v := range []struct {
		what  string
		names []string
	}{{"failed", rep.Failed}, {"were skipped", rep.Skipped}} {
		if names := leaves(v.names); len(names) > 0 {
			fmt.Fprintf(&b, "**These benchmarks %s**, so their figures are missing below (go test prints none for them; "+
				"the raw output says why, and a failed one's log line often has its figures): %s\n\n", v.what, cell(strings.Join(names, ", ")))
		}
	}
	b.WriteString("## Figures\n\n")
	b.WriteString("vrrpd and keepalived ran one after the other in the same lab with the same keepalived.conf. " +
		"A figure reported by several runs shows their median with the range. The ratio is vrrpd's over keepalived's; " +
		"— is a measure with no keepalived side. A goal is held against vrrpd's figure (its median).\n\n")
	b.WriteString("| measure | unit | vrrpd | keepalived | ratio | goal (issue 12) | met? |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	done := map[*Row]bool{}
	for _, g := range rep.Goals {
		row := goalRow(rep.Rows, g, done)
		if row == nil {
			fmt.Fprintf(&b, "| `%s` | %s | not measured | — | | %s | not measured |\n",
				g.Measure, g.Unit, cell(g.Text))
			continue
		}
		done[row] = true
		writeRow(&b, row, &g)
	}
	for _, r := range rep.Rows {
		if !done[r] {
			writeRow(&b, r, nil)
		}
	}
	b.WriteString("\n")
	if len(rep.Plots) > 0 {
		b.WriteString("## Plots\n\n")
		for _, p := range rep.Plots {
			fmt.Fprintf(&b, "### %s\n\n![%s](%s)\n\n", p.Title, p.Title, p.File)
		}
	}
	if len(rep.Other) > 0 {
		b.WriteString("## Other benchmarks\n\n")
		b.WriteString("Figures outside the naming convention (micro-benchmarks and their own units).\n\n")
		b.WriteString("| package | benchmark | figures |\n|---|---|---|\n")
		type key struct{ pkg, bench string }
		var order []key
		vals := map[key][]string{}
		for _, f := range rep.Other {
			k := key{f.Pkg, f.Benchmark}
			if _, ok := vals[k]; !ok {
				order = append(order, k)
			}
			vals[k] = append(vals[k], formatValue(f.Value)+" "+f.Unit)
		}
		for _, k := range order {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(k.pkg), cell(k.bench), cell(strings.Join(vals[k], ", ")))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// goalRow is the first of rows not done yet that carries g's measure in a unit g's bound
// converts to, or nil.
func goalRow(rows []*Row, g Goal, done map[*Row]bool) *Row {
	for _, r := range rows {
		if gg, ok := GoalFor([]Goal{g}, r); ok && gg.Measure == r.Measure && !done[r] {
			return r
		}
	}
	return nil
}

// leaves drops the names that are a parent of another ("BenchmarkX" fails with its
// "BenchmarkX/y") and repeats.
func leaves(names []string) []string {
	var out []string
	for _, n := range names {
		parent := slices.ContainsFunc(names, func(o string) bool { return strings.HasPrefix(o, n+"/") })
		if !parent && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func writeRow(b *strings.Builder, r *Row, g *Goal) {
	ratio := ""
	if x, ok := r.Ratio(); ok {
		ratio = formatValue(x) + "×"
	}
	goal, met := "", ""
	if g != nil {
		goal = cell(g.Text)
		met = map[Verdict]string{NotMeasured: "not measured", Reported: "reported", Met: "yes", Missed: "**no**"}[g.Check(r)]
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", r.Measure, r.Unit, formatValues(r.VRRPD, "not measured"), formatValues(r.Keepalived, "—"), ratio, goal, met)
}

// formatValues is the median of vs, with the range and count when there are several, or
// absent for none.
func formatValues(vs []float64, absent string) string {
	m, ok := Median(vs)
	if !ok {
		return absent
	}
	if len(vs) == 1 {
		return formatValue(m)
	}
	return fmt.Sprintf("%s (%s–%s, %d runs)", formatValue(m), formatValue(slices.Min(vs)), formatValue(slices.Max(vs)), len(vs))
}

// formatValue keeps four significant digits, without trailing zeros or an exponent for
// what benchmarks report (up to billions of ns/op).
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case a >= 1000 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 0.001:
		s := strconv.FormatFloat(v, 'f', max(0, 3-int(math.Floor(math.Log10(a)))), 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

// cell keeps text from breaking a table row.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
