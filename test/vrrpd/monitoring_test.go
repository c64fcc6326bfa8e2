package vrrpd_test

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// TestCountersAtAdvertRateAndMonitoringQueries scrapes the master and the backup of a
// running pair (100 ms adverts) once a second for several seconds: the master's
// keepalived_vrrp_advert_sent and the backup's keepalived_vrrp_advert_rcvd grow at the
// advertisement rate between every two scrapes, the other direction stays still, and
// keepalived_up is 1. Then every query of deploy/monitoring (the dashboard's and the
// alerts') parses as PromQL and names only metrics that this real scrape has.
func TestCountersAtAdvertRateAndMonitoringQueries(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	master := startVrrpd(t, h1, writeConf(t, "h1.conf", dualConf(150)), "")
	backup := startVrrpd(t, h2, writeConf(t, "h2.conf", dualConf(100)), "")
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h1, h1, h2)
	waitSoleHolder(t, 3*time.Second, 0, vip6, h1, h1, h2)

	type sample struct {
		at             time.Time
		master, backup map[string]float64
	}
	take := func() sample {
		return sample{time.Now(), master.scrape(t), backup.scrape(t)}
	}
	const rounds, every = 5, time.Second
	samples := []sample{take()}
	for range rounds {
		time.Sleep(every)
		samples = append(samples, take())
	}
	for _, vi := range []string{`name="VI_4"`, `name="VI_6"`} {
		for i := 1; i < len(samples); i++ {
			a, b := samples[i-1], samples[i]
			secs := b.at.Sub(a.at).Seconds()
			sent := (metric(b.master, "keepalived_vrrp_advert_sent", vi) - metric(a.master, "keepalived_vrrp_advert_sent", vi)) / secs
			rcvd := (metric(b.backup, "keepalived_vrrp_advert_rcvd", vi) - metric(a.backup, "keepalived_vrrp_advert_rcvd", vi)) / secs
			// 10 adverts a second; each side publishes its counters at most 500 ms late,
			// so one second between scrapes sees between 5 and 15.
			if sent < 5 || sent > 15 {
				t.Errorf("%s scrape %d: master advert_sent grew %.1f/s, want about 10/s", vi, i, sent)
			}
			if rcvd < 5 || rcvd > 15 {
				t.Errorf("%s scrape %d: backup advert_rcvd grew %.1f/s, want about 10/s", vi, i, rcvd)
			}
		}
		first, last := samples[0], samples[len(samples)-1]
		secs := last.at.Sub(first.at).Seconds()
		sent := (metric(last.master, "keepalived_vrrp_advert_sent", vi) - metric(first.master, "keepalived_vrrp_advert_sent", vi)) / secs
		rcvd := (metric(last.backup, "keepalived_vrrp_advert_rcvd", vi) - metric(first.backup, "keepalived_vrrp_advert_rcvd", vi)) / secs
		t.Logf("%s over %.1f s: master sent %.2f/s, backup received %.2f/s", vi, secs, sent, rcvd)
		if sent < 8.5 || sent > 11 || rcvd < 8.5 || rcvd > 11 {
			t.Errorf("%s over %.1f s: master sent %.2f/s, backup received %.2f/s; want 10/s", vi, secs, sent, rcvd)
		}
		if d := metric(last.backup, "keepalived_vrrp_advert_sent", vi) - metric(first.backup, "keepalived_vrrp_advert_sent", vi); d != 0 {
			t.Errorf("%s: the backup sent %v adverts", vi, d)
		}
		if d := metric(last.master, "keepalived_vrrp_advert_rcvd", vi) - metric(first.master, "keepalived_vrrp_advert_rcvd", vi); d != 0 {
			t.Errorf("%s: the master received %v adverts", vi, d)
		}
	}
	for _, s := range samples {
		if metric(s.master, "keepalived_up") != 1 || metric(s.backup, "keepalived_up") != 1 {
			t.Fatalf("keepalived_up: master %v, backup %v; want 1", metric(s.master, "keepalived_up"), metric(s.backup, "keepalived_up"))
		}
	}
	if metric(samples[0].master, "vrrpd_vip_master", `vip="10.99.0.100"`) != 1 || metric(samples[0].backup, "vrrpd_vip_master", `vip="10.99.0.100"`) != 0 {
		t.Error("vrrpd_vip_master does not say the master holds 10.99.0.100")
	}
	if metric(samples[0].master, "vrrpd_build_info", `goversion="`+runtime.Version()+`"`) != 1 {
		t.Error("vrrpd_build_info missing")
	}

	// Every metric the monitoring queries exists in this scrape.
	scraped := map[string]bool{}
	for _, s := range []map[string]float64{samples[0].master, samples[0].backup} {
		for k := range s {
			name, _, _ := strings.Cut(k, "{")
			scraped[name] = true
		}
	}
	queries := monitoringQueries(t)
	for _, q := range queries {
		for _, name := range metricNames(t, q) {
			// up is Prometheus's own; the operator's families are checked against its
			// registry (controller TestOperatorMetricsInRules).
			if name == "up" || strings.HasPrefix(name, "vrrp_operator_") {
				continue
			}
			// Present only while another host answers for a VIP: a healthy pair has
			// none. TestVIPConflictSplit checks it against its own scrape.
			if name == "vrrpd_vip_conflict" {
				continue
			}
			if !scraped[name] {
				t.Errorf("%s: metric %s is not in vrrpd's /metrics", q.where, name)
			}
		}
	}
	t.Logf("%d monitoring queries checked against the scrape", len(queries))
}

// TestMonitoringQueriesParse parses every query of deploy/monitoring as PromQL (fast,
// no lab): a dashboard or rule that Prometheus would reject fails here first.
func TestMonitoringQueriesParse(t *testing.T) {
	qs := monitoringQueries(t)
	if len(qs) < 10 {
		t.Fatalf("only %d queries found in deploy/monitoring", len(qs))
	}
	alerts := map[string]bool{}
	for _, q := range qs {
		metricNames(t, q)
		if name, ok := strings.CutPrefix(q.where, "alert "); ok {
			alerts[name] = true
		}
	}
	for _, want := range []string{"VRRPNoMaster", "VRRPSplitBrain", "VRRPVIPConflict", "VRRPFlapping", "KeepalivedDown", "VRRPMalformedPackets", "VRRPAdvertSendErrors",
		"VRRPDTargetDown", "VRRPDTargetsMissing", "VRRPGroupDegraded", "VRRPAddressPoolNearlyExhausted"} {
		if !alerts[want] {
			t.Errorf("no alert %s in deploy/monitoring/prometheusrule.yaml", want)
		}
	}
}

type query struct{ where, expr string }

// monitoringQueries reads every PromQL expression of the dashboard (panel targets and
// template variables) and of the PrometheusRule.
func monitoringQueries(t *testing.T) []query {
	t.Helper()
	dir := filepath.Join("..", "..", "deploy", "monitoring")
	b, err := os.ReadFile(filepath.Join(dir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID, Title string
		Panels     []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("dashboard.json: uid %q, title %q: Grafana needs both to import it", dash.UID, dash.Title)
	}
	var qs []query
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)["query"].(string)
		// label_values(selector, label) is Grafana's, not PromQL: its selector is.
		sel, ok := strings.CutPrefix(q, "label_values(")
		if i := strings.LastIndex(sel, ","); ok && i > 0 {
			qs = append(qs, query{"variable " + v.Name, sel[:i]})
		} else {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
		}
	}
	for _, want := range []string{"namespace", "group", "datasource"} {
		if !vars[want] {
			t.Errorf("dashboard has no %s variable", want)
		}
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			qs = append(qs, query{"panel " + p.Title, tg.Expr})
		}
	}
	b, err = os.ReadFile(filepath.Join(dir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string
		Spec struct {
			Groups []struct {
				Rules []struct{ Alert, Expr, For string }
			}
		}
	}
	if err := yaml.Unmarshal(b, &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml: %v (kind %q)", err, rule.Kind)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{"alert " + r.Alert, r.Expr})
		}
	}
	return qs
}

// grafanaVars replaces the dashboard's variables with values a query may hold.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$namespace", "ns", "$group", "g")

// metricNames parses q and returns the metric names it selects: a selector's name, or
// each alternative of a __name__ regular expression written as a|b|c of plain names.
func metricNames(t *testing.T, q query) []string {
	t.Helper()
	expr, err := parser.ParseExpr(grafanaVars.Replace(q.expr))
	if err != nil {
		t.Errorf("%s: %v\n%s", q.where, err, q.expr)
		return nil
	}
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		found := false
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName {
				continue
			}
			switch m.Type {
			case labels.MatchEqual:
				names = append(names, m.Value)
				found = true
			case labels.MatchRegexp:
				for _, alt := range strings.Split(m.Value, "|") {
					if !model.IsValidLegacyMetricName(alt) {
						t.Errorf("%s: __name__ regexp %q: write plain names joined by |, so they can be checked", q.where, m.Value)
					}
					names = append(names, alt)
				}
				found = true
			}
		}
		if !found {
			t.Errorf("%s: a selector without a metric name: %s", q.where, vs)
		}
		return nil
	})
	slices.Sort(names)
	return slices.Compact(names)
}

// TestOtherVRIDsAreNotMalformed runs vrrpd (VRID 51) beside the real keepalived running
// two other virtual routers on the same wire (VRID 60, VRRPv3 at 100 ms, and VRID 61,
// VRRPv2 at 1 s): a shared segment, as with OpenShift's own on-prem keepalived. Over 5 s
// vrrpd_malformed_dropped_total does not move (it did, by 46, when other VRIDs were
// counted there, and VRRPMalformedPackets fired), vrrpd_other_vrid_total grows by their
// adverts, and vrrpd's own instance stays MASTER, hearing none of them.
func TestOtherVRIDsAreNotMalformed(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	other4 := netip.MustParsePrefix("10.99.0.101/24")
	other2 := netip.MustParsePrefix("10.99.0.102/24")
	v := startVrrpd(t, h1, writeConf(t, "h1.conf", oneInstanceConf(false, 100)), "")
	startKeepalived(t, h2, writeConf(t, "keepalived.conf", "global_defs {\n  vrrp_version 3\n}\n"+
		vrrpInstance("VI_60", 60, 100, "0.1", "", other4.String())+
		vrrpInstance("VI_61", 61, 100, "1", "version 2\n", other2.String())))
	waitSoleHolder(t, 5*time.Second, 0, vip4, h1, h1, h2)
	waitSoleHolder(t, 10*time.Second, 0, other4, h2, h1, h2)
	waitSoleHolder(t, 10*time.Second, 0, other2, h2, h1, h2)

	sock := []string{`intf="eth0"`, `family="inet"`}
	before := v.scrape(t)
	const window = 5 * time.Second
	start := time.Now()
	time.Sleep(window)
	// Counters reach /metrics within 500 ms; wait that too, so the window's packets are in.
	time.Sleep(600 * time.Millisecond)
	after := v.scrape(t)
	secs := time.Since(start).Seconds()

	malformed := metric(after, "vrrpd_malformed_dropped_total", sock...) - metric(before, "vrrpd_malformed_dropped_total", sock...)
	other := metric(after, "vrrpd_other_vrid_total", sock...) - metric(before, "vrrpd_other_vrid_total", sock...)
	t.Logf("over %.1f s beside keepalived VRIDs 60 (v3, 100 ms) and 61 (v2, 1 s): malformed +%.0f (total %.0f), other VRIDs +%.0f (total %.0f)",
		secs, malformed, metric(after, "vrrpd_malformed_dropped_total", sock...), other, metric(after, "vrrpd_other_vrid_total", sock...))
	if malformed != 0 {
		t.Errorf("vrrpd_malformed_dropped_total grew by %.0f beside healthy routers of other VRIDs; want 0", malformed)
	}
	// About 10/s from VRID 60 and 1/s from VRID 61; half of that is plenty on a loaded machine.
	if min := window.Seconds() * 11 / 2; other < min {
		t.Errorf("vrrpd_other_vrid_total grew by %.0f in %.1f s; want at least %.0f (the other routers' adverts)", other, secs, min)
	}
	if st := v.instance(t, "VI_1"); st.State != "MASTER" || st.Counters["advert_rcvd"] != 0 {
		t.Errorf("VI_1: state %s, advert_rcvd %d; want MASTER and 0 (other VRIDs are not its adverts)", st.State, st.Counters["advert_rcvd"])
	}
	if st := v.mustStatus(t); len(st.Interfaces) != 1 || st.Interfaces[0].OtherVRID == 0 || st.Interfaces[0].Unattributed != 0 {
		t.Errorf("vrrpd status interfaces = %+v; want other_vrid counted and unattributed 0", st.Interfaces)
	}
}
