package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vrrp-operator/vrrp-operator/internal/version"
)

// TestVersion: --version prints the version and starts nothing (no kubeconfig here).
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	old := stdout
	stdout = &out
	t.Cleanup(func() { stdout = old })
	t.Setenv("KUBECONFIG", "/nonexistent")
	if err := run(context.Background(), []string{"--version"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != version.String("operator")+"\n" || !strings.Contains(got, " dev ") {
		t.Errorf("--version printed %q", got)
	}
}

// TestBuildInfoMetric: vrrp_operator_build_info is in the registry controller-runtime's
// metrics endpoint serves, once however often run starts.
func TestBuildInfoMetric(t *testing.T) {
	for range 2 {
		if err := registerBuildInfo(); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vrrp_operator_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] != version.Version || labels["goversion"] != runtime.Version() || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Errorf("vrrp_operator_build_info %v = %v", labels, mf.GetMetric()[0].GetGauge().GetValue())
		}
		return
	}
	t.Error("vrrp_operator_build_info not in controller-runtime's registry")
}
