package benchreport

import (
	"math"
	"slices"
)

// Row is one measure in one unit, vrrpd's and keepalived's figures side by side: every
// value reported for it, in order (one per run of `go test -count` or per repeated run).
type Row struct {
	Measure    string
	Unit       string
	Benchmarks []string // the benchmarks that reported it
	VRRPD      []float64
	Keepalived []float64
}

// Pair groups the conventional figures by measure and unit, in the order they first
// appear. Other figures are left out.
func Pair(figs []Figure) []*Row {
	var rows []*Row
	index := map[[2]string]*Row{}
	for _, f := range figs {
		if !f.Conventional() {
			continue
		}
		k := [2]string{f.Measure, f.Unit}
		r := index[k]
		if r == nil {
			r = &Row{Measure: f.Measure, Unit: f.Unit}
			index[k] = r
			rows = append(rows, r)
		}
		if !slices.Contains(r.Benchmarks, f.Benchmark) {
			r.Benchmarks = append(r.Benchmarks, f.Benchmark)
		}
		if f.Who == VRRPD {
			r.VRRPD = append(r.VRRPD, f.Value)
		} else {
			r.Keepalived = append(r.Keepalived, f.Value)
		}
	}
	return rows
}

// Median is the middle of vs (the mean of the two middle values for an even count); ok
// is false for none.
func Median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// Ratio is vrrpd's median over keepalived's; ok is false unless both sides were measured
// and keepalived's figure is not zero.
func (r *Row) Ratio() (float64, bool) {
	v, ok1 := Median(r.VRRPD)
	k, ok2 := Median(r.Keepalived)
	if !ok1 || !ok2 || k == 0 || math.IsNaN(v/k) {
		return 0, false
	}
	return v / k, true
}
