package metrics_test

import (
	"bufio"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
)

// readmeFamily is one metric as the README's table documents it.
type readmeFamily struct {
	typ    dto.MetricType
	labels []string // sorted
	line   int
}

// readmeMetrics parses the metric tables of README.md: rows "| `name`, `name2` | type |
// labels | meaning |" under a header whose first cell is "metric".
func readmeMetrics(t *testing.T) map[string]readmeFamily {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := regexp.MustCompile("`([a-z_]+)`")
	types := map[string]dto.MetricType{"counter": dto.MetricType_COUNTER, "gauge": dto.MetricType_GAUGE,
		"summary": dto.MetricType_SUMMARY, "histogram": dto.MetricType_HISTOGRAM}
	out := map[string]readmeFamily{}
	inTable := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "metric" {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(cells[0], "---") {
			continue
		}
		if len(cells) < 3 {
			t.Fatalf("README.md:%d: a metric row needs name, type and labels", n)
		}
		typ, ok := types[cells[1]]
		if !ok {
			t.Fatalf("README.md:%d: type %q", n, cells[1])
		}
		var labels []string
		for _, l := range strings.Split(cells[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		for _, m := range names.FindAllStringSubmatch(cells[0], -1) {
			if _, dup := out[m[1]]; dup {
				t.Errorf("README.md:%d: %s documented twice", n, m[1])
			}
			out[m[1]] = readmeFamily{typ: typ, labels: labels, line: n}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("README.md: found %d documented metrics; has the table moved?", len(out))
	}
	return out
}

// fullSnapshot has something in every family.
func fullSnapshot() metrics.Snapshot {
	s := sampleSnapshot()
	tr := trackerSnapshot()
	tr.Instances[0].Name, tr.Instances[0].VRID = "VI_T", 60
	s.Instances = append(s.Instances, tr.Instances...)
	s.SyncGroups = tr.SyncGroups
	s.Scripts = []metrics.Script{{Name: "chk", Status: "GOOD", Runs: 3, Failures: 1, Timeouts: 1}}
	s.Conflicts = []metrics.VIPConflict{{Instance: "VI_1", Interface: "eth0", VRID: 51, VIP: netip.MustParseAddr("10.0.0.1"), MAC: "52:54:00:12:34:56"}}
	return s
}

// TestMetricsMatchREADME: the README's metric tables are the contract. Every family a
// running handler serves (but client_golang's go_* and process_*) is documented with its
// type and labels, and every documented family is served.
func TestMetricsMatchREADME(t *testing.T) {
	doc := readmeMetrics(t)
	srv := newServer(t, metrics.SourceFunc(fullSnapshot), metrics.Options{Program: "vrrpd"})
	// Prometheus' own Accept header, OpenMetrics first.
	resp, body := get(t, srv.URL+metrics.MetricsPath,
		"Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("Content-Type %q: want the classic text format", ct)
	}
	// Nor protobuf, which a scraper with native histograms asks for first: the text
	// format is pinned (promhttp.HandlerOpts.AcceptedFormats).
	if resp, _ := get(t, srv.URL+metrics.MetricsPath, "Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,*/*;q=0.1"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Errorf("asked for protobuf first: Content-Type %q, want the classic text format", resp.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var runtime int
	for name, mf := range mfs {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			runtime++
			continue
		}
		d, ok := doc[name]
		if !ok {
			t.Errorf("%s (%v) is served but not in README.md's metric tables", name, mf.GetType())
			continue
		}
		if mf.GetType() != d.typ {
			t.Errorf("%s is a %v; README.md:%d says %v", name, mf.GetType(), d.line, d.typ)
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, d.labels) {
				t.Errorf("%s has labels %v; README.md:%d says %v", name, got, d.line, d.labels)
				break
			}
		}
	}
	for name, d := range doc {
		if mfs[name] == nil {
			t.Errorf("README.md:%d documents %s, which /metrics does not serve", d.line, name)
		}
	}
	if runtime < 20 {
		t.Errorf("%d go_* and process_* families, want client_golang's collectors", runtime)
	}
}
