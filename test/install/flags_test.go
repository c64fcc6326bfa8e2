package install

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pendingFlags are flags the manifests pass that the operator does not define yet (none
// now: --scc-cluster-role, which the OpenShift variants pass, is defined).
var pendingFlags []string

// TestManifestFlagsExist: every flag the Deployments of the kustomizations and the chart
// pass to the operator is one cmd/operator defines (an unknown flag stops it at start).
func TestManifestFlagsExist(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "operator")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "operator")).CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/operator: %v\n%s", err, out)
	}
	// -h prints the flags and exits non-zero.
	usage, _ := exec.Command(bin, "-h").CombinedOutput()
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(string(usage), -1) {
		defined[m[1]] = true
	}
	if !defined["vrrpd-image"] {
		t.Fatalf("could not read the operator's flags from -h:\n%s", usage)
	}

	renderings := map[string][]byte{
		"deploy/operator":  kustomize(t, "deploy/operator"),
		"deploy/openshift": kustomize(t, "deploy/openshift"),
		"chart":            mustHelmTemplate(t, "--set", "openshift.enabled=true"),
		"chart (minimal)":  mustHelmTemplate(t, "--set", "metrics.enabled=false", "--set", "leaderElection.enabled=false", "--set", "replicas=1"),
		"chart (PodMonitor labels)": mustHelmTemplate(t, "--set", "monitoring.podMonitor.labels.release=prom",
			"--set", "monitoring.podMonitor.labels.team=net"),
		"chart (PodMonitor namespace)": mustHelmTemplate(t, "--set", "monitoring.podMonitor.namespace=monitoring"),
	}
	for name, r := range renderings {
		for _, u := range decode(t, r) {
			if u.GetKind() != "Deployment" {
				continue
			}
			for _, a := range args(t, u) {
				flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				if !strings.HasPrefix(a, "-") || (!defined[flag] && !slices.Contains(pendingFlags, flag)) {
					t.Errorf("%s: %s passes %q, which the operator does not define", name, key(u), a)
				}
			}
		}
	}
	// monitoring.podMonitor.labels becomes one --podmonitor-labels, as the operator parses it.
	found := false
	for _, u := range decode(t, renderings["chart (PodMonitor labels)"]) {
		if u.GetKind() == "Deployment" && slices.Contains(args(t, u), "--podmonitor-labels=release=prom,team=net") {
			found = true
		}
	}
	if !found {
		t.Error("monitoring.podMonitor.labels: no --podmonitor-labels=release=prom,team=net in the chart's Deployment")
	}
	// monitoring.podMonitor.namespace becomes --podmonitor-namespace and the policy's
	// podMonitorNamespace alike (checkPolicy compares the two).
	pmObjs := decode(t, renderings["chart (PodMonitor namespace)"])
	if a := args(t, find(t, pmObjs, "Deployment", "vrrp-operator")); !slices.Contains(a, "--podmonitor-namespace=monitoring") {
		t.Errorf("monitoring.podMonitor.namespace: args %v lack --podmonitor-namespace=monitoring", a)
	}
	checkPolicy(t, pmObjs, "vrrp-operator")
	for _, f := range pendingFlags {
		if defined[f] {
			t.Logf("cmd/operator now defines --%s: remove it from pendingFlags", f)
		}
	}
}
