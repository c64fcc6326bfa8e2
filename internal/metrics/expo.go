package metrics

// A small writer of Prometheus' text exposition format (version 0.0.4), instead of
// prometheus/client_golang: that library, with its protobuf and procfs dependencies and the
// package initialisation they run, cost vrrpd about 2.6 MiB of its resident set (issue 12
// measured 18.8 MiB against 21.4 with it), for a few dozen series built from one snapshot
// per scrape.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Metric types, as the exposition's # TYPE line names them.
const (
	typeCounter = "counter"
	typeGauge   = "gauge"
	typeSummary = "summary"
)

// family is one metric: its samples, each with one value per label name. A family with
// no samples is not written, as client_golang omits it.
type family struct {
	name, help, typ string
	labels          []string
	samples         []sample
}

type sample struct {
	suffix string // "_sum", "_count" for a summary's totals; "" otherwise
	extra  string // one more label, name="value", already escaped (a summary's quantile)
	values []string
	value  float64
}

func newFamily(name, typ, help string, labels ...string) *family {
	return &family{name: name, help: help, typ: typ, labels: labels}
}

// add appends a sample with one value per label of f.
func (f *family) add(v float64, values ...string) {
	f.samples = append(f.samples, sample{values: values, value: v})
}

// exposition collects families and writes them sorted by name, each series' labels sorted
// by name, as client_golang's handler does, so that the output is stable across scrapes.
type exposition struct {
	families []*family
}

func (e *exposition) family(name, typ, help string, labels ...string) *family {
	f := newFamily(name, typ, help, labels...)
	e.families = append(e.families, f)
	return f
}

// write writes every family to w. A series with a label value that is not valid UTF-8
// (names come from configuration files) is left out and reported in the returned error;
// the rest is written.
func (e *exposition) write(w io.Writer) error {
	slices.SortStableFunc(e.families, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	bw := bufio.NewWriter(w)
	var bad []error
	for _, f := range e.families {
		if len(f.samples) == 0 {
			continue
		}
		order := make([]int, len(f.labels)) // label positions, sorted by name
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(f.labels[a], f.labels[b]) })
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
	series:
		for _, s := range f.samples {
			for _, v := range s.values {
				if !utf8.ValidString(v) {
					bad = append(bad, fmt.Errorf("%s: label value %q is not valid UTF-8", f.name, v))
					continue series
				}
			}
			bw.WriteString(f.name)
			bw.WriteString(s.suffix)
			n := 0
			sep := func() {
				if n == 0 {
					bw.WriteByte('{')
				} else {
					bw.WriteByte(',')
				}
				n++
			}
			for _, i := range order {
				sep()
				bw.WriteString(f.labels[i])
				bw.WriteString(`="`)
				bw.WriteString(escapeLabel(s.values[i]))
				bw.WriteByte('"')
			}
			if s.extra != "" {
				sep()
				bw.WriteString(s.extra)
			}
			if n > 0 {
				bw.WriteByte('}')
			}
			bw.WriteByte(' ')
			bw.WriteString(formatValue(s.value))
			bw.WriteByte('\n')
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return errors.Join(bad...)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

// formatValue writes a sample value as client_golang does: the shortest representation,
// and Prometheus' spellings of the infinities and NaN.
func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
