package benchreport

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The two sides of a comparison.
const (
	VRRPD      = "vrrpd"
	Keepalived = "keepalived"
)

// Units are the unit names a figure may end in. KiB is accepted beside MiB for small
// objects (an operator's status).
var Units = []string{"ms", "us", "s", "MiB", "KiB", "count", "pct", "per-s"}

var measureRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ParseUnit splits a ReportMetric unit written by the convention into its measure, side
// and unit; ok is false for any other unit (ns/op, B/op, a benchmark's own name).
func ParseUnit(s string) (measure, who, unit string, ok bool) {
	for _, u := range Units {
		rest, found := strings.CutSuffix(s, "-"+u)
		if !found {
			continue
		}
		for _, w := range []string{VRRPD, Keepalived} {
			if m, found := strings.CutSuffix(rest, "-"+w); found && checkMeasure(m) == nil {
				return m, w, u, true
			}
		}
	}
	return "", "", "", false
}

// Unit is the ReportMetric unit of measure's figure on who's side.
func Unit(measure, who, unit string) string { return measure + "-" + who + "-" + unit }

func checkMeasure(m string) error {
	if !measureRE.MatchString(m) {
		return fmt.Errorf("measure %q: want lowercase letters, digits and '-'", m)
	}
	for _, part := range strings.Split(m, "-") {
		if part == VRRPD || part == Keepalived {
			return fmt.Errorf("measure %q names a daemon: that is the who part", m)
		}
	}
	return nil
}

func checkName(measure, who, unit string) error {
	if err := checkMeasure(measure); err != nil {
		return err
	}
	if who != VRRPD && who != Keepalived {
		return fmt.Errorf("who %q: want %q or %q", who, VRRPD, Keepalived)
	}
	if !slices.Contains(Units, unit) {
		return fmt.Errorf("unit %q: want one of %v", unit, Units)
	}
	return nil
}

// scale converts v from unit from to unit to when both measure the same quantity (time
// or memory); ok is false otherwise.
func scale(v float64, from, to string) (float64, bool) {
	if from == to {
		return v, true
	}
	per := map[string]float64{"s": 1, "ms": 1e-3, "us": 1e-6, "MiB": 1 << 20, "KiB": 1 << 10}
	kind := map[string]string{"s": "time", "ms": "time", "us": "time", "MiB": "mem", "KiB": "mem"}
	if kind[from] == "" || kind[from] != kind[to] {
		return 0, false
	}
	return v * per[from] / per[to], true
}
