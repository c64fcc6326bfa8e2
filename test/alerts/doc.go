// Package alerts tests the shipped PrometheusRule (deploy/monitoring/prometheusrule.yaml,
// which the chart carries byte for byte): every alert is evaluated with Prometheus's own
// rule evaluation (promql's engine, rules.AlertingRule, series in promql's test storage),
// over series that must fire it and series that must not, its `for` included, and its
// annotations are expanded as Alertmanager would receive them.
package alerts
