package benchreport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// SamplesEnv names the environment variable holding the directory WriteSamples writes to.
const SamplesEnv = "VRRPD_BENCH_SAMPLES"

// Samples is one distribution as WriteSamples stores it: one file per measure, side and
// unit.
type Samples struct {
	Benchmark string    `json:"benchmark"`
	Measure   string    `json:"measure"`
	Who       string    `json:"who"`
	Unit      string    `json:"unit"`
	Values    []float64 `json:"values"`
}

// WriteSamples stores every sample of a distribution whose summary the benchmark reports
// with ReportMetric, when $VRRPD_BENCH_SAMPLES names a directory; it does nothing
// otherwise. A later call for the same measure, side and unit replaces the earlier one,
// as the last round's ReportMetric does. A name outside the convention or a failed write
// fails tb: a report with a distribution silently missing would look complete.
func WriteSamples(tb testing.TB, measure, who, unit string, values []float64) {
	tb.Helper()
	dir := os.Getenv(SamplesEnv)
	if dir == "" {
		return
	}
	if err := writeSamples(dir, Samples{Benchmark: tb.Name(), Measure: measure, Who: who, Unit: unit, Values: values}); err != nil {
		tb.Errorf("benchreport: %v", err)
	}
}

func writeSamples(dir string, s Samples) error {
	if err := checkName(s.Measure, s.Who, s.Unit); err != nil {
		return err
	}
	if s.Values == nil {
		s.Values = []float64{}
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err // NaN or Inf among the values
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Written aside and renamed, so that a reader never sees half a file.
	name := filepath.Join(dir, Unit(s.Measure, s.Who, s.Unit)+".json")
	tmp, err := os.CreateTemp(dir, ".samples-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// ReadSamples reads every distribution WriteSamples left in dir, ordered by measure, unit
// and side (vrrpd first). A directory that does not exist holds none.
func ReadSamples(dir string) ([]Samples, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var all []Samples
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s Samples
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		if err := checkName(s.Measure, s.Who, s.Unit); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b Samples) int {
		if c := strings.Compare(a.Measure, b.Measure); c != 0 {
			return c
		}
		if c := strings.Compare(a.Unit, b.Unit); c != 0 {
			return c
		}
		return strings.Compare(b.Who, a.Who) // "vrrpd" before "keepalived"
	})
	return all, nil
}
