package benchreport

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Row is one measure in one unit, vrrpd's and keepalived's figures side by side: every
// value reported for it, in order (one per run of `go test -count` or per repeated run).
type Row struct {
	Measure    string
	Unit       string
	Benchmarks []string // the benchmarks that reported it
	Pkgs       []string // the package of each of Benchmarks (its "pkg:" line)
	VRRPD      []float64
	Keepalived []float64
}

// Pair groups the conventional figures by measure and unit, in the order their
// benchmarks first appear, and within one benchmark by measure with numbers in numeric
// order (go test prints a result's units sorted as text: 10, 100, 25). Other figures are
// left out.
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
			r.Pkgs = append(r.Pkgs, f.Pkg)
		}
		if f.Who == VRRPD {
			r.VRRPD = append(r.VRRPD, f.Value)
		} else {
			r.Keepalived = append(r.Keepalived, f.Value)
		}
	}
	// A benchmark's place is its first appearance; sub-benchmarks of one parent that
	// differ only in the side ("…/vrrpd", "…/keepalived") count as one.
	group := func(r *Row) string {
		if i := strings.LastIndexByte(r.Benchmarks[0], '/'); i >= 0 {
			return r.Benchmarks[0][:i]
		}
		return r.Benchmarks[0]
	}
	first := map[string]int{}
	for i, r := range rows {
		if _, ok := first[group(r)]; !ok {
			first[group(r)] = i
		}
	}
	slices.SortStableFunc(rows, func(a, b *Row) int {
		if c := cmp.Compare(first[group(a)], first[group(b)]); c != 0 {
			return c
		}
		return naturalCompare(a.Measure, b.Measure)
	})
	return rows
}

// naturalCompare orders strings as text, but runs of digits by their value.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(a[:da], 10, 64)
			nb, _ := strconv.ParseUint(b[:db], 10, 64)
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && n < 18 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
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

// Others are the figures outside the convention, less the ns/op of the benchmarks that
// report in it: a lab benchmark's one round is its whole run, so that is only its
// duration.
func Others(figs []Figure) []Figure {
	conventional := map[string]bool{}
	for _, f := range figs {
		if f.Conventional() {
			conventional[f.Pkg+" "+f.Benchmark] = true
		}
	}
	var out []Figure
	for _, f := range figs {
		if !f.Conventional() && !(f.Unit == "ns/op" && conventional[f.Pkg+" "+f.Benchmark]) {
			out = append(out, f)
		}
	}
	return out
}
