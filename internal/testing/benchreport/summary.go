package benchreport

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The README's measured table is a summary of one `make bench`: the figures of Goals and
// Headlines, which hack/benchreport writes between BeginMarker and EndMarker from the same
// raw output as the full report, so that every figure the README quotes has one source and
// an edit by hand shows as a difference (hack/benchreport's TestREADMEMeasured).
const (
	BeginMarker = "<!-- bench:begin -->"
	EndMarker   = "<!-- bench:end -->"
)

// Headline is a figure the summary shows beside the goals: one a reader asks for first,
// held to no bound.
type Headline struct {
	Measure string
	Text    string
}

// Headlines are the summary's rows after the goals, in this order.
var Headlines = []Headline{
	{"failover-v3-100ms-p50", "failover, VRRPv3 at 100 ms adverts: the master's last advert (as the backup received it) → VIP in the backup's kernel (floor: Master_Down_Interval, 360.9 ms), p50"},
	{"failover-v3-100ms-p99", "the same, p99"},
	{"failover-v3-10ms-p50", "failover at 10 ms adverts (floor 36.1 ms), p50"},
	{"failover-v3-10ms-p99", "the same, p99"},
	{"takeover-advert-p50", "Master_Down_Timer → first advert on the wire at 10 ms adverts, p50"},
	{"takeover-vip-p50", "Master_Down_Timer → VIP in the kernel at 10 ms adverts, p50"},
	{"takeover-garp-p50", "Master_Down_Timer → first GARP/NA on the wire at 10 ms adverts, p50"},
	{"takeover-50ms-wakeup-to-wire-p50", "issue 8's figure (Master_Down_Timer firing → the takeover's advert on the wire), p50"},
	{"takeover-50ms-k2k-p99", "at 50 ms adverts, the master's last advert arriving → the takeover's advert leaving, less Master_Down_Interval: kernel to kernel, so keepalived's is timed too, p99"},
	{"capacity-100ms-ipv6-instances", "instances at 100 ms two hosts hold for 10 s without a transition (IPv6: up to all 255 VRIDs)"},
	{"capacity-100ms-ipv6-cpu-at-max", "CPU of both hosts over those 10 s, at that many instances"},
	{"peak-rss-full-build", "peak RSS at 50 instances at 100 ms, standalone: the image's build (both modes)"},
	{"cpu-255x10ms-default", "CPU of both hosts over the hold, 255 instances at 10 ms (default scheduling)"},
	{"cpu-255x10ms-realtime", "the same with --realtime-priority (keepalived: vrrp_rt_priority)"},
	{"cpu-25x10ms-busy-default", "CPU of both hosts over the hold, 25 instances at 10 ms beside 4 busy loops (default scheduling)"},
	{"tracked50-transitions", "transitions, 50 instances at 100 ms each tracking a vrrp_script"},
	{"vips2000-peak-rss", "issue 31: peak RSS, one instance of 2,000 IPv4 VIPs at 100 ms held on a master/backup pair, standalone (the full build; the host build beside it in the full report)"},
	{"vips2000-cpu", "CPU of both hosts over 20 s of that hold"},
	{"takeover2000-ipv4-last-vip", "issue 31: takeover of one instance of 2,000 IPv4 VIPs at 100 ms, Master_Down_Timer → the last VIP in the kernel, median of 3"},
	{"takeover2000-ipv4-advert-gap", "the new master's longest advert gap from the takeover to the end of its first announcement burst (a backup's patience: 360.9 ms)"},
	{"takeover2000-ipv4-announce-peak-10ms", "the most GARPs in any 10 ms of that burst (vrrp_garp_interval unset: keepalived's default, no pacing)"},
	{"svc-to-vip-p50", "Service created → VIP held on one node, p50"},
	{"svc-to-vip-operator-p50", "of which the operator's part, p50"},
}

// Summary is what the README's measured table says.
type Summary struct {
	Intro     string // Markdown above the table: which run, on what machine
	Rows      []*Row
	Goals     []Goal
	Headlines []Headline
	// Module is the module's import path: a benchmark's package is named relative to it
	// (./test/vrrpd), as `go test` takes it.
	Module string
	// Failed and Skipped are Run's: benchmarks whose figures are missing.
	Failed, Skipped []string
}

// RenderSummary writes the summary: Intro, the benchmarks that failed or were skipped,
// then a row per goal (in the goals' order, "not measured" where nobody reported one)
// and a row per headline, each naming the benchmarks that made it.
func RenderSummary(w io.Writer, s Summary) error {
	var b strings.Builder
	if s.Intro != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(s.Intro))
	}
	for _, v := range []struct {
		what  string
		names []string
	}{{"failed", s.Failed}, {"were skipped", s.Skipped}} {
		if names := leaves(v.names); len(names) > 0 {
			fmt.Fprintf(&b, "**These benchmarks %s in that run**, so their figures are missing below: %s\n\n", v.what, cell(strings.Join(names, ", ")))
		}
	}
	b.WriteString("| what | vrrpd | keepalived | ratio | goal met? | benchmark |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	done := map[*Row]bool{}
	for _, g := range s.Goals {
		r := goalRow(s.Rows, g, done)
		if r == nil {
			fmt.Fprintf(&b, "| %s | not measured | — |  | not measured |  |\n", cell(g.Text))
			continue
		}
		done[r] = true
		met := map[Verdict]string{NotMeasured: "not measured", Reported: "—", Met: "yes", Missed: "**no**"}[g.Check(r)]
		summaryRow(&b, g.Text, r, met, s.Module)
	}
	for _, h := range s.Headlines {
		i := slices.IndexFunc(s.Rows, func(r *Row) bool { return r.Measure == h.Measure && !done[r] })
		if i < 0 {
			fmt.Fprintf(&b, "| %s | not measured | — |  | — |  |\n", cell(h.Text))
			continue
		}
		done[s.Rows[i]] = true
		summaryRow(&b, h.Text, s.Rows[i], "—", s.Module)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func summaryRow(b *strings.Builder, what string, r *Row, met, module string) {
	ratio := ""
	if x, ok := r.Ratio(); ok {
		ratio = formatValue(x) + "×"
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", cell(what), withUnit(r.VRRPD, "not measured", r.Unit),
		withUnit(r.Keepalived, "—", r.Unit), ratio, met, cell(commands(r, module)))
}

// withUnit is formatValues with the unit as a reader writes it after a number.
func withUnit(vs []float64, absent, unit string) string {
	m, ok := Median(vs)
	if !ok {
		return absent
	}
	u := " " + unit
	switch unit {
	case "us":
		u = " µs"
	case "count":
		u = ""
	case "pct":
		u = " %"
	case "per-s":
		u = "/s"
	}
	if len(vs) == 1 {
		return formatValue(m) + u
	}
	return fmt.Sprintf("%s%s (%s–%s, %d runs)", formatValue(m), u, formatValue(slices.Min(vs)), formatValue(slices.Max(vs)), len(vs))
}

// commands names the benchmarks that made r as `go test -bench` takes them: the top-level
// benchmark and its package relative to module.
func commands(r *Row, module string) string {
	var out []string
	for i, bench := range r.Benchmarks {
		top, _, _ := strings.Cut(bench, "/")
		c := top
		if i < len(r.Pkgs) && r.Pkgs[i] != "" {
			pkg := r.Pkgs[i]
			if rest, ok := strings.CutPrefix(pkg, module+"/"); ok && module != "" {
				pkg = "./" + rest
			} else if pkg == module {
				pkg = "."
			}
			c += " " + pkg
		}
		if c = "`" + c + "`"; !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return strings.Join(out, ", ")
}

// Between returns what lies between BeginMarker's line and EndMarker in doc.
func Between(doc string) (string, error) {
	start, end, err := markers(doc)
	if err != nil {
		return "", err
	}
	return doc[start:end], nil
}

// Splice returns doc with what lies between BeginMarker's line and EndMarker replaced by
// section, the text around them as it was.
func Splice(doc, section string) (string, error) {
	start, end, err := markers(doc)
	if err != nil {
		return "", err
	}
	if section != "" && !strings.HasSuffix(section, "\n") {
		section += "\n"
	}
	return doc[:start] + section + doc[end:], nil
}

// markers finds the section: from the line after BeginMarker to the start of EndMarker's
// line. Each marker must stand once in doc, on a line of its own, begin before end.
func markers(doc string) (start, end int, err error) {
	find := func(m string) (int, error) {
		switch n := strings.Count(doc, m); n {
		case 0:
			return 0, fmt.Errorf("no %s marker", m)
		case 1:
		default:
			return 0, fmt.Errorf("%s stands %d times: want once", m, n)
		}
		i := strings.Index(doc, m)
		if (i > 0 && doc[i-1] != '\n') || (i+len(m) < len(doc) && doc[i+len(m)] != '\n') {
			return 0, fmt.Errorf("%s must be a line of its own", m)
		}
		return i, nil
	}
	b, err := find(BeginMarker)
	if err != nil {
		return 0, 0, err
	}
	e, err := find(EndMarker)
	if err != nil {
		return 0, 0, err
	}
	if e < b {
		return 0, 0, fmt.Errorf("%s comes before %s", EndMarker, BeginMarker)
	}
	start = b + len(BeginMarker)
	if start < len(doc) {
		start++ // the newline
	}
	return start, e, nil
}
