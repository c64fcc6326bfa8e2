// Command benchreport turns `make bench`'s output into docs/bench/README.md: issue 12's
// table of every figure, vrrpd beside keepalived, and SVG plots of the sampled
// distributions and of CPU against the number of instances; and, from the same output,
// the README's measured table (the goals and headline figures, between the markers
// <!-- bench:begin --> and <!-- bench:end -->), so that the README quotes no figure
// docs/bench does not hold. It is a development tool, built by the Makefile, never
// shipped.
//
//	benchreport machine [-note TEXT] [-version V]   lines about this machine, for raw.txt's head
//	benchreport merge -raw FILE -samples DIR -new FILE -new-samples DIR
//	benchreport report -raw FILE -samples DIR -out DIR [-readme FILE]
//
// merge (make bench-merge) appends the output of a run of some benchmarks, its machine
// lines at its head, to raw.txt and replaces the earlier runs' lines and samples of those
// benchmarks, keeping every other benchmark's: the report then says which figures were
// measured when, under what load.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: benchreport machine|merge|report [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "machine":
		note := fs.String("note", "", "what else ran on the machine (the load the figures were taken under)")
		version := fs.String("version", "", "the tree measured (git describe)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		_, err := io.WriteString(stdout, machine(time.Now(), *note, *version))
		return err
	case "merge":
		raw := fs.String("raw", "docs/bench/raw.txt", "the raw output to merge into, rewritten")
		samples := fs.String("samples", "docs/bench/samples", "its samples' directory")
		add := fs.String("new", "", "the new run's output, its machine lines at its head")
		addSamples := fs.String("new-samples", "", "the new run's samples' directory (none: empty)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *add == "" {
			return fmt.Errorf("merge: -new is required")
		}
		replaced, err := merge(*raw, *samples, *add, *addSamples)
		if err == nil {
			fmt.Fprintf(stdout, "%s: merged the run of %s (any earlier lines of them dropped)\n", *raw, strings.Join(replaced, ", "))
		}
		return err
	case "report":
		raw := fs.String("raw", "docs/bench/raw.txt", "`go test -bench` output, the machine lines at its head")
		samples := fs.String("samples", "docs/bench/samples", "the directory of WriteSamples' files")
		out := fs.String("out", "docs/bench", "where README.md and the plots go")
		readme := fs.String("readme", "", "a Markdown file whose section between "+benchreport.BeginMarker+" and "+
			benchreport.EndMarker+" becomes the summary of the same run (make bench: README.md); empty: none")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return report(*raw, *samples, *out, *readme)
	}
	return fmt.Errorf("unknown command %q: want machine, merge or report", args[0])
}

// Config keys of the machine lines, as `go test`'s own "cpu:" and "goos:" are.
const (
	keyDate       = benchreport.DateKey
	keyLoad       = "vrrpd-bench-loadavg"
	keyCPUs       = "vrrpd-bench-cpus"
	keyKernel     = "vrrpd-bench-kernel"
	keyKeepalived = "vrrpd-bench-keepalived"
	keyGo         = "vrrpd-bench-go"
	keyVersion    = "vrrpd-bench-version"
	keyNote       = "vrrpd-bench-note"
)

// machine describes this machine at the start of a run.
func machine(now time.Time, note, version string) string {
	var b strings.Builder
	line := func(k, v string) {
		if v = strings.Join(strings.Fields(v), " "); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	line(keyDate, now.UTC().Format(time.RFC3339))
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(l)); len(f) >= 3 {
			line(keyLoad, strings.Join(f[:3], " "))
		}
	}
	line(keyCPUs, fmt.Sprint(runtime.NumCPU()))
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		line(keyKernel, string(k))
	}
	line(keyKeepalived, keepalivedVersion())
	line(keyGo, runtime.Version())
	line(keyVersion, version)
	line(keyNote, note)
	return b.String()
}

// keepalivedVersion is the first line keepalived --version prints (on stderr), or why there
// is none.
func keepalivedVersion() string {
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		bin = "/usr/sbin/keepalived"
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if first, _, _ := strings.Cut(string(out), "\n"); strings.TrimSpace(first) != "" {
		return first
	}
	return fmt.Sprintf("not found (%v)", err)
}

// module is this module's path: the summary names a benchmark's package relative to it,
// as `go test` takes it.
const module = "github.com/vrrp-operator/vrrp-operator"

// parseRaw reads a raw output file.
func parseRaw(path string) (*benchreport.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	run, err := benchreport.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return run, nil
}

// report writes the report of rawPath and samplesDir into out, and when readme is not
// empty, the summary of the same run into readme's marked section.
func report(rawPath, samplesDir, out, readme string) error {
	run, err := parseRaw(rawPath)
	if err != nil {
		return err
	}
	// The README is read and spliced first, so that one without its markers fails the
	// command before anything is written.
	var readmeDoc []byte
	if readme != "" {
		doc, err := os.ReadFile(readme)
		if err != nil {
			return err
		}
		spliced, err := benchreport.Splice(string(doc), readmeSection(run, rawPath, out, filepath.Dir(readme)))
		if err != nil {
			return fmt.Errorf("%s: %v", readme, err)
		}
		readmeDoc = []byte(spliced)
	}
	samples, err := benchreport.ReadSamples(samplesDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// The plots of an earlier run go: a measure no longer sampled must not linger.
	old, _ := filepath.Glob(filepath.Join(out, "*.svg"))
	for _, o := range old {
		if err := os.Remove(o); err != nil {
			return err
		}
	}
	plots, err := drawPlots(out, samples, run.Figures)
	if err != nil {
		return err
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(out, p); err == nil {
			return r
		}
		return p
	}
	rep := benchreport.Report{
		Title: "Benchmarks: vrrpd beside keepalived",
		Intro: fmt.Sprintf("Generated by `make bench` (hack/benchreport) from [%s](%s), the benchmarks' output, "+
			"and %s/, every sample of the plotted distributions. To reproduce: `make bench` "+
			"(every benchmark; `BENCH_FILTER=BenchmarkFailover` narrows it, `BENCH_NOTE=...` says what else ran), or "+
			"`make bench-merge BENCH_FILTER=...` (those benchmarks again, their lines in %s replaced, the others' kept); "+
			"`make bench-report` renders this page again from those files. "+
			"The figures' names follow internal/testing/benchreport; issue 12's goals are its Goals.",
			filepath.Base(rawPath), rel(rawPath), filepath.Base(rawPath), rel(samplesDir)),
		Machine: machineRows(run.Config),
		Later:   laterRuns(run),
		Rows:    benchreport.Pair(run.Figures),
		Goals:   benchreport.Goals,
		Other:   benchreport.Others(run.Figures),
		Plots:   plots,
		Failed:  run.Failed,
		Skipped: run.Skipped,
	}
	var b bytes.Buffer
	if err := benchreport.Render(&b, rep); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "README.md"), b.Bytes(), 0o644); err != nil {
		return err
	}
	if readme == "" {
		return nil
	}
	return os.WriteFile(readme, readmeDoc, 0o644)
}

// readmeSection is the summary of run, read from rawPath, for a README in readmeDir that
// links the full report in reportDir: the run and its machine in a sentence, then the
// goals' and headlines' rows. It depends on nothing but the raw output, so that
// TestREADMEMeasured can make it again.
func readmeSection(run *benchreport.Run, rawPath, reportDir, readmeDir string) string {
	rel := func(p string) string {
		if r, err := filepath.Rel(readmeDir, p); err == nil {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(p)
	}
	get := func(k string) string {
		if v := run.Config[k]; v != "" {
			return v
		}
		return "not recorded"
	}
	reportRel := rel(filepath.Join(reportDir, "README.md"))
	intro := fmt.Sprintf("<!-- Written by `make bench` and `make bench-report` (hack/benchreport) from %s; "+
		"edit the generator, not this section: hack/benchreport's TestREADMEMeasured compares them. -->\n\n"+
		"From the `make bench` of tree %s, started %s on %s CPUs (%s; kernel %s; %s; %s), load: %s. "+
		"vrrpd and keepalived ran one after the other in the same lab with the same keepalived.conf; "+
		"a ratio is vrrpd's figure over keepalived's, and a goal is held against vrrpd's. "+
		"Each row names the benchmarks that make it (`go test -run '^$' -bench NAME -benchtime 1x ./PACKAGE`); "+
		"[%s](%s) has every figure of the run, with plots of the distributions.",
		rel(rawPath), get(keyVersion), get(keyDate), get(keyCPUs), get("cpu"), get(keyKernel), get(keyKeepalived),
		get(keyGo), get(keyNote), reportRel, reportRel)
	for _, l := range run.Blocks[1:] {
		get := func(k string) string {
			if v := l.Config[k]; v != "" {
				return v
			}
			return "not recorded"
		}
		intro += fmt.Sprintf(" The figures of %s are from a later run merged in (`make bench-merge`), of tree %s, started %s, "+
			"load average %s at the start, load: %s.", strings.Join(l.Benchmarks, ", "), get(keyVersion), get(keyDate),
			get(keyLoad), strings.TrimSuffix(get(keyNote), "."))
	}
	var b strings.Builder
	_ = benchreport.RenderSummary(&b, benchreport.Summary{ // a strings.Builder does not fail
		Intro:     intro,
		Rows:      benchreport.Pair(run.Figures),
		Goals:     benchreport.Goals,
		Headlines: benchreport.Headlines,
		Module:    module,
		Failed:    run.Failed,
		Skipped:   run.Skipped,
	})
	return b.String()
}

// laterRuns are the runs merged into run after its first, with their machine lines.
func laterRuns(run *benchreport.Run) []benchreport.LaterRun {
	var later []benchreport.LaterRun
	for _, b := range run.Blocks[1:] {
		later = append(later, benchreport.LaterRun{Benchmarks: b.Benchmarks, Machine: machineRows(b.Config)})
	}
	return later
}

// machineRows are the machine lines of raw.txt's head and go test's own, labelled.
func machineRows(c map[string]string) [][2]string {
	var rows [][2]string
	for _, k := range [][2]string{
		{keyDate, "started"},
		{keyNote, "load"},
		{keyLoad, "load average at the start (1, 5, 15 min)"},
		{keyCPUs, "CPUs"},
		{"cpu", "CPU"},
		{keyKernel, "kernel"},
		{keyKeepalived, "keepalived"},
		{keyGo, "Go"},
		{keyVersion, "tree"},
	} {
		v := c[k[0]]
		if v == "" {
			v = "not recorded"
		}
		rows = append(rows, [2]string{k[1], v})
	}
	return rows
}
