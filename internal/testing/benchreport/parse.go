package benchreport

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Figure is one value a benchmark reported. Measure, Who and Unit are the convention's
// parts; a unit outside the convention (ns/op, B/op, a benchmark's own) is kept whole in
// Unit with Measure and Who empty.
type Figure struct {
	Pkg       string // the "pkg:" line above it
	Benchmark string // without the -GOMAXPROCS suffix
	Measure   string
	Who       string
	Unit      string
	Value     float64
}

// Conventional reports whether f follows the naming convention.
func (f Figure) Conventional() bool { return f.Who != "" }

// Run is what one or more `go test -bench` outputs, one after another, held.
type Run struct {
	// Config holds the "key: value" lines (goos, cpu, and the vrrpd-bench-* lines `make
	// bench` writes about the machine); the first value of a key wins, except pkg.
	Config  map[string]string
	Figures []Figure
	// Failed and Skipped name the benchmarks that said so ("--- FAIL: BenchmarkX/y"),
	// whatever figures they reported before.
	Failed, Skipped []string
	// Blocks are the runs the output holds, in order: `make bench` writes one, and each
	// `make bench-merge` appends one (see Merge). Blocks[0] is also what Config says.
	Blocks []Block
}

// DateKey is the machine line that starts a run's block: `benchreport machine` writes it
// first, so a second one in the same output starts the next run's.
const DateKey = "vrrpd-bench-date"

// Block is one run's part of a raw output: its own machine lines and the benchmarks it
// reported on, so that a report says which figures were measured when, under what load.
type Block struct {
	Config map[string]string // as Run.Config, of this block's lines only
	// Benchmarks are the top-level names (BenchmarkX of BenchmarkX/y) with a result or a
	// verdict in the block, in the order they first appear.
	Benchmarks []string
}

// topName is a benchmark's top-level name: the one `go test -bench` selects by.
func topName(name string) string {
	top, _, _ := strings.Cut(name, "/")
	return top
}

// saw records a benchmark of the current block.
func (run *Run) saw(name string) {
	b := &run.Blocks[len(run.Blocks)-1]
	if top := topName(name); !slices.Contains(b.Benchmarks, top) {
		b.Benchmarks = append(b.Benchmarks, top)
	}
}

var (
	// A result line: name, iterations, then value-unit pairs.
	resultRE = regexp.MustCompile(`^(Benchmark\S*?)(-\d+)?\s+(\d+)\s+(\S.*)$`)
	// A name printed before the benchmark ran, its result to follow on a later line when
	// something (a child process sharing the test's stdout) wrote in between.
	nameRE = regexp.MustCompile(`^(Benchmark\S*?)(-\d+)?\s*$`)
	// The rest of such a split result.
	tailRE    = regexp.MustCompile(`^\s*(\d+)\s+(\S.*)$`)
	configRE  = regexp.MustCompile(`^([a-z][a-z0-9-]*):\s*(.*)$`)
	verdictRE = regexp.MustCompile(`^\s*--- (FAIL|SKIP): (Benchmark\S*)`)
)

// Parse reads `go test -bench` output. Lines that are neither results nor configuration
// (logs, PASS, ok) are skipped, as is a result line whose value-unit pairs do not parse.
func Parse(r io.Reader) (*Run, error) {
	run := &Run{Config: map[string]string{}, Blocks: []Block{{Config: map[string]string{}}}}
	pkg, pending := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if m := resultRE.FindStringSubmatch(line); m != nil {
			run.add(pkg, m[1], m[4])
			run.saw(m[1])
			pending = ""
			continue
		}
		if m := nameRE.FindStringSubmatch(line); m != nil {
			pending = m[1]
			run.saw(m[1])
			continue
		}
		if m := tailRE.FindStringSubmatch(line); m != nil && pending != "" {
			if run.add(pkg, pending, m[2]) {
				pending = ""
			}
			continue
		}
		if m := verdictRE.FindStringSubmatch(line); m != nil {
			run.saw(m[2])
			if m[1] == "FAIL" { // (these lines carry no -GOMAXPROCS suffix)
				run.Failed = append(run.Failed, m[2])
			} else {
				run.Skipped = append(run.Skipped, m[2])
			}
			continue
		}
		if m := configRE.FindStringSubmatch(line); m != nil {
			if m[1] == DateKey && run.Blocks[len(run.Blocks)-1].Config[DateKey] != "" {
				run.Blocks = append(run.Blocks, Block{Config: map[string]string{}})
			}
			if m[1] == "pkg" {
				pkg = m[2]
				continue
			}
			if _, seen := run.Config[m[1]]; !seen {
				run.Config[m[1]] = m[2]
			}
			if c := run.Blocks[len(run.Blocks)-1].Config; c[m[1]] == "" {
				c[m[1]] = m[2]
			}
		}
	}
	return run, sc.Err()
}

// add appends the figures of one result's value-unit pairs, all or none.
func (run *Run) add(pkg, bench, pairs string) bool {
	f := strings.Fields(pairs)
	if len(f)%2 != 0 {
		return false
	}
	var figs []Figure
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return false
		}
		fig := Figure{Pkg: pkg, Benchmark: bench, Unit: f[i+1], Value: v}
		if m, w, u, ok := ParseUnit(fig.Unit); ok {
			fig.Measure, fig.Who, fig.Unit = m, w, u
		}
		figs = append(figs, fig)
	}
	run.Figures = append(run.Figures, figs...)
	return true
}
