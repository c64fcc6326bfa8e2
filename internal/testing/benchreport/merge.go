package benchreport

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// logRE is the head of a benchmark's log or verdict ("--- BENCH: BenchmarkX-2", "--- FAIL:
// BenchmarkX/y"); the lines indented deeper below it are its own.
var logRE = regexp.MustCompile(`^(\s*)--- (?:BENCH|FAIL|SKIP): (Benchmark\S*?)(-\d+)?$`)

// Merge appends add, the output of one later run with its machine lines at its head (what
// `make bench-merge` makes), to raw, the output of the runs before, and takes out of raw
// every line of a benchmark add reports on: its results, its logs and its verdicts, so that
// each benchmark's figures come from one run, the newest. A run of raw left with no
// benchmark goes whole, machine lines and all. It returns the new output and the
// benchmarks replaced (top-level names). Rerunning everything is an hour on two cores;
// this keeps the other benchmarks' figures, each block still saying when and under what
// load it was measured.
func Merge(raw, add string) (string, []string, error) {
	run, err := Parse(strings.NewReader(add))
	if err != nil {
		return "", nil, err
	}
	switch {
	case len(run.Blocks) != 1:
		return "", nil, fmt.Errorf("the run to merge holds %d runs' machine lines: merge one at a time", len(run.Blocks))
	case run.Blocks[0].Config[DateKey] == "":
		return "", nil, fmt.Errorf("the run to merge has no machine lines (%s: ...; benchreport machine writes them): "+
			"its figures would not say when or under what load they were measured", DateKey)
	case len(run.Blocks[0].Benchmarks) == 0:
		return "", nil, fmt.Errorf("the run to merge reports on no benchmark")
	}
	replaced := run.Blocks[0].Benchmarks
	var out strings.Builder
	for _, block := range splitBlocks(raw) {
		if kept, left := dropBenchmarks(block, replaced); left {
			out.WriteString(strings.Join(kept, ""))
		}
	}
	if s := out.String(); s != "" && !strings.HasSuffix(s, "\n") {
		out.WriteString("\n")
	}
	out.WriteString(add)
	if !strings.HasSuffix(add, "\n") {
		out.WriteString("\n")
	}
	return out.String(), replaced, nil
}

// splitBlocks cuts raw into its runs' blocks of lines (each with its newline): a block
// starts at its DateKey line, as Parse starts one.
func splitBlocks(raw string) [][]string {
	var blocks [][]string
	var cur []string
	dated := false
	for _, l := range strings.SplitAfter(raw, "\n") {
		if l == "" {
			continue
		}
		if m := configRE.FindStringSubmatch(strings.TrimRight(l, " \t\r\n")); m != nil && m[1] == DateKey {
			if dated {
				blocks = append(blocks, cur)
				cur = nil
			}
			dated = true
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	return blocks
}

// dropBenchmarks is block without the lines of the benchmarks named (top-level), and
// whether any other benchmark's line is left in it.
func dropBenchmarks(block []string, names []string) (kept []string, left bool) {
	gone := func(name string) bool { return slices.Contains(names, topName(name)) }
	logIndent := -1      // dropping the lines indented deeper than this: a dropped log's
	tailPending := false // a dropped name line's result may follow on a later line
	for _, l := range block {
		line := strings.TrimRight(l, " \t\r\n")
		if logIndent >= 0 {
			if line != "" && len(line)-len(strings.TrimLeft(line, " \t")) > logIndent {
				continue
			}
			logIndent = -1
		}
		if m := logRE.FindStringSubmatch(line); m != nil {
			if gone(m[2]) {
				logIndent = len(m[1])
				continue
			}
			left = true
		} else if m := resultRE.FindStringSubmatch(line); m != nil {
			tailPending = false
			if gone(m[1]) {
				continue
			}
			left = true
		} else if m := nameRE.FindStringSubmatch(line); m != nil {
			tailPending = gone(m[1])
			if tailPending {
				continue
			}
			left = true
		} else if tailPending && tailRE.MatchString(line) {
			tailPending = false
			continue
		}
		kept = append(kept, l)
	}
	return kept, left
}
