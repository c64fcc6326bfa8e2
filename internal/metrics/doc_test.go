package metrics_test

import (
	"go/parser"
	"go/token"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
)

// docFamilies are the metric names in the indented list of the package comment
// (doc.go): every word there that starts with keepalived_ or vrrpd_, by its line.
func docFamilies(t *testing.T) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package comment")
	}
	name := regexp.MustCompile(`\b(keepalived|vrrpd)_[a-z0-9_]*[a-z0-9]\b`)
	out := map[string]int{}
	for _, c := range f.Doc.List {
		text, ok := strings.CutPrefix(c.Text, "//\t")
		if !ok { // the list is the comment's indented block: code lines of a doc comment
			continue
		}
		for _, m := range name.FindAllString(text, -1) {
			out[m] = fset.Position(c.Pos()).Line
		}
	}
	if len(out) < 20 {
		t.Fatalf("doc.go: found %d metric names in the package comment's indented list; has it moved?", len(out))
	}
	return out
}

// TestMetricsMatchDocGo: the package comment names every family a running handler
// serves (but client_golang's go_* and process_*) by its full name, and names none that it
// does not serve, so that the list a reader of the code finds first cannot drift from
// the collector any more than README.md's tables can (TestMetricsMatchREADME).
func TestMetricsMatchDocGo(t *testing.T) {
	doc := docFamilies(t)
	srv := newServer(t, metrics.SourceFunc(fullSnapshot), metrics.Options{Program: "vrrpd"})
	resp, body := get(t, srv.URL+metrics.MetricsPath)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	text := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := text.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	served := 0
	for name := range mfs {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		served++
		if _, ok := doc[name]; !ok {
			t.Errorf("%s is served but not named in doc.go's list", name)
		}
	}
	for name, line := range doc {
		if mfs[name] == nil {
			t.Errorf("doc.go:%d names %s, which /metrics does not serve", line, name)
		}
	}
	if served < 20 {
		t.Errorf("%d families served: is fullSnapshot still full?", served)
	}
}
