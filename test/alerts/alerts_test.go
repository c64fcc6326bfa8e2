package alerts

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"sigs.k8s.io/yaml"
)

// rule is one alerting rule of the PrometheusRule.
type rule struct {
	Alert, Expr, For string
	Labels           map[string]string
	Annotations      map[string]string
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile("../../deploy/monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Kind string
		Spec struct{ Groups []struct{ Rules []rule } }
	}
	if err := yaml.Unmarshal(b, &pr); err != nil || pr.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml: %v (kind %q)", err, pr.Kind)
	}
	var out []rule
	for _, g := range pr.Spec.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// alertCase is one scenario for an alert: series in promql's load notation (one sample a
// minute from time 0; "_" is no sample), evaluated every minute up to at, as a Prometheus
// with a 1m evaluation interval would, and the alerts that must be firing then, each
// given by labels it must carry (none: the alert must not fire).
type alertCase struct {
	name   string
	series string
	at     time.Duration
	firing []map[string]string
}

// Labels a vrrpd series has when scraped through the operator's PodMonitor.
const (
	pod1 = `job="ns/g-vrrpd", namespace="ns", keepalivedgroup="g", instance="10.99.0.1:9650", node="n1", pod="g-vrrpd-a"`
	pod2 = `job="ns/g-vrrpd", namespace="ns", keepalivedgroup="g", instance="10.99.0.2:9650", node="n2", pod="g-vrrpd-b"`
	pod3 = `job="ns/g-vrrpd", namespace="ns", keepalivedgroup="g", instance="10.99.0.3:9650", node="n3", pod="g-vrrpd-c"`
	vi1  = `name="VI_1", intf="eth0", vrid="51"`
	// An operator series, scraped through its ServiceMonitor with honorLabels.
	op = `job="vrrp-operator-metrics", instance="10.0.0.9:8080", pod="vrrp-operator-x", namespace="ns", keepalivedgroup="g"`
)

var group = map[string]string{"namespace": "ns", "keepalivedgroup": "g"}

// cases holds each alert's scenarios: at least one that fires and one that does not.
var cases = map[string][]alertCase{
	"VRRPNoMaster": {
		{"both nodes BACKUP for 10m", `
keepalived_vrrp_state{` + pod1 + `, ` + vi1 + `} 1+0x10
keepalived_vrrp_state{` + pod2 + `, ` + vi1 + `} 1+0x10`, 10 * time.Minute,
			[]map[string]string{{"namespace": "ns", "keepalivedgroup": "g", "name": "VI_1", "vrid": "51", "severity": "critical"}}},
		{"one MASTER", `
keepalived_vrrp_state{` + pod1 + `, ` + vi1 + `} 2+0x10
keepalived_vrrp_state{` + pod2 + `, ` + vi1 + `} 1+0x10`, 10 * time.Minute, nil},
		{"no MASTER for 1m only (a failover): still pending", `
keepalived_vrrp_state{` + pod1 + `, ` + vi1 + `} 2+0x8 1 1
keepalived_vrrp_state{` + pod2 + `, ` + vi1 + `} 1+0x10`, 10 * time.Minute, nil},
	},
	"VRRPSplitBrain": {
		{"two MASTERs for 10m", `
keepalived_vrrp_state{` + pod1 + `, ` + vi1 + `} 2+0x10
keepalived_vrrp_state{` + pod2 + `, ` + vi1 + `} 2+0x10`, 10 * time.Minute,
			[]map[string]string{{"keepalivedgroup": "g", "name": "VI_1", "severity": "critical"}}},
		{"one MASTER", `
keepalived_vrrp_state{` + pod1 + `, ` + vi1 + `} 2+0x10
keepalived_vrrp_state{` + pod2 + `, ` + vi1 + `} 1+0x10`, 10 * time.Minute, nil},
	},
	"VRRPVIPConflict": {
		{"another MAC answers for 10m", `
vrrpd_vip_master{` + pod1 + `, ` + vi1 + `, vip="10.99.0.100"} 1+0x10
vrrpd_vip_conflict{` + pod1 + `, ` + vi1 + `, vip="10.99.0.100", mac="52:54:00:00:00:99"} _x4 1+0x6`, 10 * time.Minute,
			[]map[string]string{{"instance": "10.99.0.1:9650", "name": "VI_1", "vip": "10.99.0.100", "mac": "52:54:00:00:00:99", "severity": "critical"}}},
		// Both holders vrrpd, each seeing the other: two alerts, one per node.
		{"two vrrpd seeing each other", `
vrrpd_vip_conflict{` + pod1 + `, ` + vi1 + `, vip="10.99.0.100", mac="52:54:00:00:00:02"} 1+0x10
vrrpd_vip_conflict{` + pod2 + `, ` + vi1 + `, vip="10.99.0.100", mac="52:54:00:00:00:01"} 1+0x10`, 10 * time.Minute,
			[]map[string]string{{"node": "n1", "mac": "52:54:00:00:00:02"}, {"node": "n2", "mac": "52:54:00:00:00:01"}}},
		{"no conflict: only the master's VIP", `
vrrpd_vip_master{` + pod1 + `, ` + vi1 + `, vip="10.99.0.100"} 1+0x10
vrrpd_vip_master{` + pod2 + `, ` + vi1 + `, vip="10.99.0.100"} 0+0x10`, 10 * time.Minute, nil},
		{"a conflict in the last scrape only: pending", `
vrrpd_vip_master{` + pod1 + `, ` + vi1 + `, vip="10.99.0.100"} 1+0x10
vrrpd_vip_conflict{` + pod1 + `, ` + vi1 + `, vip="10.99.0.100", mac="52:54:00:00:00:99"} _x10 1`, 10 * time.Minute, nil},
	},
	"VRRPFlapping": {
		{"a transition a minute on each node", `
vrrpd_transitions_total{` + pod1 + `, ` + vi1 + `} 0+1x20
vrrpd_transitions_total{` + pod2 + `, ` + vi1 + `} 0+1x20`, 20 * time.Minute,
			[]map[string]string{{"keepalivedgroup": "g", "name": "VI_1", "severity": "warning"}}},
		{"one failover in 15m", `
vrrpd_transitions_total{` + pod1 + `, ` + vi1 + `} 2+0x10 3+0x10
vrrpd_transitions_total{` + pod2 + `, ` + vi1 + `} 2+0x10 3+0x10`, 20 * time.Minute, nil},
	},
	"KeepalivedDown": {
		{"unhealthy for 5m", `keepalived_up{` + pod1 + `} 1+0x5 0+0x5`, 10 * time.Minute,
			[]map[string]string{{"instance": "10.99.0.1:9650", "severity": "critical"}}},
		{"healthy", `keepalived_up{` + pod1 + `} 1+0x10`, 10 * time.Minute, nil},
		{"unhealthy for the last sample only: pending", `keepalived_up{` + pod1 + `} 1+0x9 0`, 10 * time.Minute, nil},
	},
	"VRRPAdvertSendErrors": {
		{"send errors", `vrrpd_advert_send_errors_total{` + pod1 + `, ` + vi1 + `} 0+1x20`, 20 * time.Minute,
			[]map[string]string{{"instance": "10.99.0.1:9650", "name": "VI_1", "severity": "warning"}}},
		{"no send errors", `vrrpd_advert_send_errors_total{` + pod1 + `, ` + vi1 + `} 0+0x20`, 20 * time.Minute, nil},
	},
	"VRRPMalformedPackets": {
		{"malformed packets", `vrrpd_malformed_dropped_total{` + pod1 + `, intf="eth0", family="inet"} 0+5x20`, 20 * time.Minute,
			[]map[string]string{{"instance": "10.99.0.1:9650", "intf": "eth0", "severity": "warning"}}},
		// The case: beside another router's VRID, only vrrpd_other_vrid_total grows.
		{"other VRIDs on the segment only", `
vrrpd_malformed_dropped_total{` + pod1 + `, intf="eth0", family="inet"} 0+0x20
vrrpd_other_vrid_total{` + pod1 + `, intf="eth0", family="inet"} 0+600x20`, 20 * time.Minute, nil},
	},
	"VRRPAdvertisementErrors": {
		{"authentication failures", `keepalived_vrrp_auth_failure{` + pod1 + `, ` + vi1 + `, state="BACKUP"} 0+1x20`, 20 * time.Minute,
			[]map[string]string{{"name": "VI_1", "instance": "10.99.0.1:9650", "severity": "warning"}}},
		{"checksum errors", `vrrpd_checksum_err{` + pod1 + `, ` + vi1 + `, state="BACKUP"} 0+1x20`, 20 * time.Minute,
			[]map[string]string{{"name": "VI_1"}}},
		{"no errors, adverts received", `
keepalived_vrrp_auth_failure{` + pod1 + `, ` + vi1 + `, state="BACKUP"} 3+0x20
keepalived_vrrp_advert_rcvd{` + pod1 + `, ` + vi1 + `, state="BACKUP"} 0+600x20`, 20 * time.Minute, nil},
	},
	"VRRPDTargetDown": {
		{"a vrrpd target failing for 10m", `
up{` + pod1 + `} 1+0x10
up{` + pod2 + `} 0+0x10`, 10 * time.Minute,
			[]map[string]string{{"keepalivedgroup": "g", "node": "n2", "severity": "warning"}}},
		{"every target up", `up{` + pod1 + `} 1+0x10`, 10 * time.Minute, nil},
		{"another job's target down", `up{job="node-exporter", instance="10.99.0.1:9100"} 0+0x10`, 10 * time.Minute, nil},
	},
	"VRRPDTargetsMissing": {
		{"3 nodes, 3 targets up", `
vrrp_operator_group_nodes{` + op + `} 3+0x15
up{` + pod1 + `} 1+0x15
up{` + pod2 + `} 1+0x15
up{` + pod3 + `} 1+0x15`, 15 * time.Minute, nil},
		{"3 nodes, one target gone", `
vrrp_operator_group_nodes{` + op + `} 3+0x15
up{` + pod1 + `} 1+0x15
up{` + pod2 + `} 1+0x15`, 15 * time.Minute,
			[]map[string]string{{"namespace": "ns", "keepalivedgroup": "g", "severity": "critical"}}},
		{"3 nodes, one target down", `
vrrp_operator_group_nodes{` + op + `} 3+0x15
up{` + pod1 + `} 1+0x15
up{` + pod2 + `} 1+0x15
up{` + pod3 + `} 0+0x15`, 15 * time.Minute, []map[string]string{group}},
		// Every vrrpd gone, or the PodMonitor not selected: VRRPNoMaster has nothing to see.
		{"no vrrpd target at all", `vrrp_operator_group_nodes{` + op + `} 2+0x15`, 15 * time.Minute, []map[string]string{group}},
		{"a group on no node", `vrrp_operator_group_nodes{` + op + `} 0+0x15`, 15 * time.Minute, nil},
		{"a target down for 5m only (a rolling update)", `
vrrp_operator_group_nodes{` + op + `} 2+0x15
up{` + pod1 + `} 1+0x15
up{` + pod2 + `} 1+0x5 0+0x5 1+0x5`, 15 * time.Minute, nil},
	},
	"VRRPGroupDegraded": {
		{"degraded for 10m", `vrrp_operator_group_degraded{` + op + `} 0+0x5 1+0x10`, 15 * time.Minute,
			[]map[string]string{{"namespace": "ns", "keepalivedgroup": "g", "severity": "warning"}}},
		{"not degraded", `vrrp_operator_group_degraded{` + op + `} 0+0x15`, 15 * time.Minute, nil},
	},
	"VRRPAddressPoolNearlyExhausted": {
		{"6 of 6 allocated", `
vrrp_operator_pool_size{` + op + `, family="IPv4"} 6+0x15
vrrp_operator_pool_allocated{` + op + `, family="IPv4"} 6+0x15`, 15 * time.Minute,
			[]map[string]string{{"namespace": "ns", "keepalivedgroup": "g", "family": "IPv4", "severity": "warning"}}},
		{"19 of 20 allocated", `
vrrp_operator_pool_size{` + op + `, family="IPv4"} 20+0x15
vrrp_operator_pool_allocated{` + op + `, family="IPv4"} 19+0x15`, 15 * time.Minute, []map[string]string{{"family": "IPv4"}}},
		{"5 of 6 allocated, and a /64 with one", `
vrrp_operator_pool_size{` + op + `, family="IPv4"} 6+0x15
vrrp_operator_pool_allocated{` + op + `, family="IPv4"} 5+0x15
vrrp_operator_pool_size{` + op + `, family="IPv6"} 18446744073709551616+0x15
vrrp_operator_pool_allocated{` + op + `, family="IPv6"} 1+0x15`, 15 * time.Minute, nil},
		{"full for 5m only", `
vrrp_operator_pool_size{` + op + `, family="IPv4"} 6+0x15
vrrp_operator_pool_allocated{` + op + `, family="IPv4"} 3+0x10 6+0x5`, 15 * time.Minute, nil},
	},
}

// TestAlerts evaluates every alert of the PrometheusRule over its cases, and fails for an
// alert without a case that fires it and one that does not.
func TestAlerts(t *testing.T) {
	rs := loadRules(t)
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Alert] = true
		cs := cases[r.Alert]
		fires, quiet := false, false
		for _, c := range cs {
			if len(c.firing) > 0 {
				fires = true
			} else {
				quiet = true
			}
		}
		if !fires || !quiet {
			t.Errorf("alert %s: no case that fires it (%v) or none that does not (%v): add them to cases", r.Alert, fires, quiet)
		}
		for _, c := range cs {
			t.Run(r.Alert+"/"+c.name, func(t *testing.T) { runCase(t, r, c) })
		}
	}
	for name := range cases {
		if !seen[name] {
			t.Errorf("cases for %s, which deploy/monitoring/prometheusrule.yaml does not have", name)
		}
	}
}

// templateLog is the rule's logger: Prometheus logs, and does not return, a failure to
// expand an annotation's template, so the test fails on any log line.
type templateLog struct{ t *testing.T }

func (l templateLog) Log(kv ...any) error {
	l.t.Errorf("rule evaluation logged %v", kv)
	return nil
}

func runCase(t *testing.T, r rule, c alertCase) {
	storage := promql.LoadedStorage(t, "load 1m\n"+strings.TrimSpace(c.series))
	defer storage.Close()
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: 10 * time.Second})
	expr, err := parser.ParseExpr(r.Expr)
	if err != nil {
		t.Fatalf("expr: %v", err)
	}
	hold := time.Duration(0)
	if r.For != "" {
		d, err := model.ParseDuration(r.For)
		if err != nil {
			t.Fatalf("for %q: %v", r.For, err)
		}
		hold = time.Duration(d)
	}
	ar := rules.NewAlertingRule(r.Alert, expr, hold, 0, labels.FromMap(r.Labels), labels.FromMap(r.Annotations),
		labels.EmptyLabels(), "", false, templateLog{t})
	query := rules.EngineQueryFunc(engine, storage)
	ctx := context.Background()
	start := time.Unix(0, 0).UTC() // promql.LoadedStorage's first sample
	for at := time.Duration(0); at <= c.at; at += time.Minute {
		if _, err := ar.Eval(ctx, start.Add(at), query, nil, 0); err != nil {
			t.Fatalf("eval at %v: %v", at, err)
		}
	}
	var firing []*rules.Alert
	for _, a := range ar.ActiveAlerts() {
		if a.State == rules.StateFiring {
			firing = append(firing, a)
		}
	}
	var got []string
	for _, a := range firing {
		got = append(got, a.Labels.String())
		// What Alertmanager receives: the alert's name and every annotation expanded.
		if a.Labels.Get(labels.AlertName) != r.Alert {
			t.Errorf("alert %s has alertname %q", a.Labels, a.Labels.Get(labels.AlertName))
		}
		a.Annotations.Range(func(l labels.Label) {
			if strings.Contains(l.Value, "error expanding") || strings.Contains(l.Value, "<no value>") || l.Value == "" {
				t.Errorf("annotation %s: %q", l.Name, l.Value)
			}
		})
	}
	slices.Sort(got)
	if len(firing) != len(c.firing) {
		t.Fatalf("at %v: %d firing %v, want %d", c.at, len(firing), got, len(c.firing))
	}
	for _, want := range c.firing {
		if !slices.ContainsFunc(firing, func(a *rules.Alert) bool { return hasLabels(a.Labels, want) }) {
			t.Errorf("at %v: no firing alert with %v; firing %v", c.at, want, got)
		}
	}
	if len(firing) > 0 {
		t.Logf("firing %s; %s", got, fmt.Sprint(firing[0].Annotations.Get("summary")))
	}
}

func hasLabels(ls labels.Labels, want map[string]string) bool {
	for k, v := range want {
		if ls.Get(k) != v {
			return false
		}
	}
	return true
}
