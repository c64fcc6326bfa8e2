package main

import (
	"cmp"
	"fmt"
	"image/color"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
)

// The two daemons' colours, the same in every plot.
var colours = map[string]color.Color{
	benchreport.VRRPD:      color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	benchreport.Keepalived: color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// cpuMeasure is the CPU-against-instances convention: cpu-<series>-<n>-instances, in pct
// of one core (BenchmarkCapacity's cpu-100ms-ipv6-50-instances).
var cpuMeasure = regexp.MustCompile(`^cpu-([a-z0-9-]+)-([0-9]+)-instances$`)

// drawPlots writes one distribution plot per sampled measure and unit, and the
// CPU-against-instances plot when some benchmark reported it.
func drawPlots(out string, samples []benchreport.Samples, figs []benchreport.Figure) ([]benchreport.Plot, error) {
	var plots []benchreport.Plot
	type key struct{ measure, unit string }
	var order []key
	byKey := map[key][]benchreport.Samples{}
	for _, s := range samples {
		k := key{s.Measure, s.Unit}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], s)
	}
	for _, k := range order {
		file := k.measure + ".svg"
		if len(order) > 1 && slices.ContainsFunc(order, func(o key) bool { return o.measure == k.measure && o.unit != k.unit }) {
			file = k.measure + "-" + k.unit + ".svg"
		}
		title := fmt.Sprintf("%s: distribution (%s)", k.measure, k.unit)
		if err := drawECDF(filepath.Join(out, file), title, k.unit, byKey[k]); err != nil {
			return nil, err
		}
		plots = append(plots, benchreport.Plot{Title: title, File: file})
	}
	if ok, err := drawCPU(filepath.Join(out, "cpu-instances.svg"), figs); err != nil {
		return nil, err
	} else if ok {
		plots = append(plots, benchreport.Plot{Title: "CPU of both hosts against the number of instances", File: "cpu-instances.svg"})
	}
	return plots, nil
}

// drawECDF plots each side's samples as an empirical cumulative distribution: a step up
// of 1/n at every sample, which shows every sample of a small set and compares two sets
// of different sizes.
func drawECDF(path, title, unit string, sides []benchreport.Samples) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = unit
	p.X.Tick.Marker = plainTicks{}
	p.Y.Label.Text = "fraction of samples ≤ x"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	for _, s := range sides {
		if len(s.Values) == 0 {
			continue
		}
		v := slices.Clone(s.Values)
		slices.Sort(v)
		xys := make(plotter.XYs, 0, len(v)+1)
		xys = append(xys, plotter.XY{X: v[0], Y: 0})
		for i, x := range v {
			xys = append(xys, plotter.XY{X: x, Y: float64(i+1) / float64(len(v))})
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		l.Color = colours[s.Who]
		l.Width = vg.Points(1.5)
		pts.Color = colours[s.Who]
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2)
		p.Add(l, pts)
		p.Legend.Add(fmt.Sprintf("%s (%d)", s.Who, len(v)), l, pts)
	}
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}

// drawCPU plots the cpu-<series>-<n>-instances figures, one line per daemon and series;
// ok is false when there are none.
func drawCPU(path string, figs []benchreport.Figure) (bool, error) {
	type key struct{ who, series string }
	points := map[key]map[int]float64{}
	for _, f := range figs {
		m := cpuMeasure.FindStringSubmatch(f.Measure)
		if m == nil || f.Unit != "pct" {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		k := key{f.Who, m[1]}
		if points[k] == nil {
			points[k] = map[int]float64{}
		}
		points[k][n] = f.Value // the last run's, as the table's order of runs
	}
	if len(points) == 0 {
		return false, nil
	}
	keys := make([]key, 0, len(points))
	for k := range points {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(b.who, a.who), cmp.Compare(a.series, b.series)) // vrrpd first
	})
	p := plot.New()
	p.Title.Text = "CPU of both hosts against instances held without a transition"
	p.X.Label.Text = "instances"
	p.Y.Label.Text = "% of one core"
	p.X.Min, p.Y.Min = 0, 0
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	dashes := [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}
	seriesIndex := map[string]int{}
	for _, k := range keys {
		if _, ok := seriesIndex[k.series]; !ok {
			seriesIndex[k.series] = len(seriesIndex)
		}
		ns := make([]int, 0, len(points[k]))
		for n := range points[k] {
			ns = append(ns, n)
		}
		slices.Sort(ns)
		xys := make(plotter.XYs, len(ns))
		for i, n := range ns {
			xys[i] = plotter.XY{X: float64(n), Y: points[k][n]}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return false, err
		}
		l.Color, pts.Color = colours[k.who], colours[k.who]
		l.Width = vg.Points(1.5)
		l.Dashes = dashes[seriesIndex[k.series]%len(dashes)]
		pts.Shape = draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(k.who+" "+k.series, l, pts)
	}
	return true, p.Save(7*vg.Inch, 4*vg.Inch, path)
}

// plainTicks are gonum's default ticks labelled without trailing zeros ("25", not "25.00").
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if l := ticks[i].Label; strings.Contains(l, ".") && !strings.ContainsAny(l, "eE") {
			ticks[i].Label = strings.TrimRight(strings.TrimRight(l, "0"), ".")
		}
	}
	return ticks
}
