package controller

import (
	"maps"
	"testing"
)

// TestParsePodMonitorLabels: --podmonitor-labels is k=v pairs, each key and value a valid
// label's, the operator's own labels refused; "" is none.
func TestParsePodMonitorLabels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"", nil},
		{"release=kube-prometheus-stack", map[string]string{"release": "kube-prometheus-stack"}},
		{"release=prom, team=net,example.com/tier=infra", map[string]string{"release": "prom", "team": "net", "example.com/tier": "infra"}},
	} {
		got, err := ParsePodMonitorLabels(tc.in)
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"release", "release=a b", "release!=x", "-bad=x", "metrics=other", "redhatcop.redhat.io/keepalivedgroup=g", "a=1,a=2"} {
		if got, err := ParsePodMonitorLabels(bad); err == nil {
			t.Errorf("%q: accepted as %v", bad, got)
		}
	}
}
