//go:build vrrpd_nokube

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestNoKubeRefusesKubernetesMode: a vrrpd built without Kubernetes mode says so for
// --group, and exits as for a bad command line.
func TestNoKubeRefusesKubernetesMode(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"--group", "ns/g", "--node", "n1", "--metrics-address", ""}, &stdout, &stderr)
	if code != exitConfig || !strings.Contains(stderr.String(), "without Kubernetes mode") {
		t.Errorf("exit %d, stderr %q; want %d and the reason", code, stderr.String(), exitConfig)
	}
}
