package install

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestMonitoringChartMatchesKustomize: the chart's PrometheusRule and dashboard
// ConfigMap (monitoring.* values) carry what deploy/monitoring does, under the release's
// names, and the dashboard is a JSON document with its uid.
func TestMonitoringChartMatchesKustomize(t *testing.T) {
	kust := decode(t, withComponent(t, "deploy/components/monitoring"))
	chart := decode(t, mustHelmTemplate(t, "--set", "monitoring.prometheusRule.enabled=true",
		"--set", "monitoring.dashboard.enabled=true", "--set", "monitoring.prometheusRule.labels.release=prom"))
	for _, c := range []struct{ kind, name string }{
		{"PrometheusRule", "vrrp-operator-vrrpd"},
		{"ConfigMap", "vrrp-operator-vrrpd-dashboard"},
	} {
		k, h := find(t, kust, c.kind, c.name), find(t, chart, c.kind, c.name)
		part := "spec"
		if c.kind == "ConfigMap" {
			part = "data"
			if k.GetLabels()["grafana_dashboard"] != "1" || h.GetLabels()["grafana_dashboard"] != "1" {
				t.Errorf("dashboard ConfigMap labels: kustomize %v, chart %v", k.GetLabels(), h.GetLabels())
			}
			var d struct{ UID, Title string }
			if err := json.Unmarshal([]byte(field(t, h, "data", "vrrpd.json").(string)), &d); err != nil || d.UID == "" || d.Title == "" {
				t.Errorf("dashboard in the chart's ConfigMap: %v, uid %q title %q", err, d.UID, d.Title)
			}
		}
		if !reflect.DeepEqual(field(t, k, part), field(t, h, part)) {
			t.Errorf("%s %s: the chart's %s differs from deploy/monitoring's", c.kind, c.name, part)
		}
		if k.GetNamespace() != "vrrp-operator" || h.GetNamespace() != "vrrp-operator" {
			t.Errorf("%s namespaces: kustomize %q, chart %q", c.kind, k.GetNamespace(), h.GetNamespace())
		}
	}
	if got := find(t, chart, "PrometheusRule", "vrrp-operator-vrrpd").GetLabels()["release"]; got != "prom" {
		t.Errorf("monitoring.prometheusRule.labels not applied: release=%q", got)
	}
	// Off by default: the default install needs no Prometheus operator.
	for _, u := range decode(t, mustHelmTemplate(t)) {
		if u.GetKind() == "PrometheusRule" || u.GetLabels()["grafana_dashboard"] != "" {
			t.Errorf("default values render %s", key(u))
		}
	}
}
