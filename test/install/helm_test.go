package install

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// helmLabels are the labels the chart adds to what deploy/operator has (release and
// chart bookkeeping); the comparison drops them everywhere, selectors included.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart", "app.kubernetes.io/version"}

// normalizeObject drops what the chart adds to kustomize's objects: Helm's bookkeeping
// labels everywhere (selectors included), and from an object's own labels also
// app.kubernetes.io/name, which the chart puts on every object and deploy/operator only
// where something selects by it (the metrics Service, whose labels checkServiceMonitor
// checks in both).
func normalizeObject(u *unstructured.Unstructured) any {
	c := u.DeepCopy()
	// What the chart keeps on `helm uninstall` (the CRD, the groups' namespaces, OpenShift's
	// SCC) deploy/ keeps by leaving it out of deploy/operator: checked by
	// TestREADMEInstallOverKeepalivedOperator and TestChartKeeps.
	if a := c.GetAnnotations(); a != nil {
		delete(a, keepAnnotation)
		if len(a) == 0 {
			unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
		} else {
			c.SetAnnotations(a)
		}
	}
	labels := c.GetLabels()
	delete(labels, "app.kubernetes.io/name")
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "labels")
	} else {
		c.SetLabels(labels)
	}
	return normalize(c.Object)
}

// normalize drops Helm's bookkeeping labels from every map of labels or selectors.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if slices.Contains(helmLabels, k) {
				continue
			}
			out[k] = normalize(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalize(x)
		}
		return out
	}
	return v
}

// compareRenderings: the same objects (kind, namespace, name) with the same content once
// Helm's labels are dropped, except for the kinds in skip.
func compareRenderings(t *testing.T, chart, kust []*unstructured.Unstructured, skip ...string) {
	t.Helper()
	c, k := index(t, chart), index(t, kust)
	for key, u := range k {
		if slices.Contains(skip, u.GetKind()) {
			continue
		}
		o, ok := c[key]
		if !ok {
			t.Errorf("the chart lacks %s", key)
			continue
		}
		if got, want := normalizeObject(o), normalizeObject(u); !reflect.DeepEqual(got, want) {
			t.Errorf("%s differs:\nchart:     %v\nkustomize: %v", key, got, want)
		}
	}
	for key := range c {
		if _, ok := k[key]; !ok {
			t.Errorf("the chart has %s, kustomize does not", key)
		}
	}
}

// keepAnnotation is Helm's: `helm uninstall` leaves an object that has it.
const keepAnnotation = "helm.sh/resource-policy"

// TestChartMatchesKustomize: with its default values the chart renders what deploy/cluster
// and deploy/operator do together, its switches what the OpenShift overlay and the
// ServiceMonitor component add. The one difference is the Namespace: Helm installs into a
// namespace it is given (--create-namespace) and a chart that also declared it would
// collide with it; NOTES.txt tells admins to label it.
func TestChartMatchesKustomize(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		kust func(t *testing.T) []byte
	}{
		{"default", nil, func(t *testing.T) []byte { return kustomize(t, "deploy/operator") }},
		{"openshift", []string{"--set", "openshift.enabled=true"}, func(t *testing.T) []byte { return kustomize(t, "deploy/openshift") }},
		{"servicemonitor", []string{"--set", "metrics.serviceMonitor.enabled=true"}, func(t *testing.T) []byte {
			return withComponent(t, "deploy/components/servicemonitor")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kust := append(kustomize(t, "deploy/cluster"), append([]byte("\n---\n"), tc.kust(t)...)...)
			compareRenderings(t, decode(t, mustHelmTemplate(t, tc.set...)), decode(t, kust), "Namespace")
		})
	}
}

// TestChartApplies: the chart's renderings, defaults and every switch, pass a server-side
// dry run in the release namespace.
func TestChartApplies(t *testing.T) {
	for name, set := range map[string][]string{
		"default":    nil,
		"openshift":  {"--set", "openshift.enabled=true", "--set", "metrics.serviceMonitor.enabled=true"},
		"minimal":    {"--set", "metrics.enabled=false", "--set", "leaderElection.enabled=false", "--set", "replicas=1"},
		"monitoring": {"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.dashboard.enabled=true"},
	} {
		t.Run(name, func(t *testing.T) { dryRunApply(t, mustHelmTemplate(t, set...), "vrrp-operator") })
	}
}

// TestChartValues: each value reaches the object it is for.
func TestChartValues(t *testing.T) {
	objs := decode(t, mustHelmTemplate(t,
		"--set", "image.repository=registry.example/op", "--set", "image.tag=v1.2.3", "--set", "image.pullPolicy=IfNotPresent",
		"--set", "vrrpd.image.repository=registry.example/vrrpd",
		"--set", "resources.requests.cpu=100m", "--set", "resources.limits.memory=1Gi",
		"--set", "metrics.port=9090", "--set", "healthProbePort=9091",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.labels.release=prom",
		"--set", "metrics.serviceMonitor.interval=10s",
	))
	deploy := find(t, objs, "Deployment", "vrrp-operator")
	c := container(t, deploy)
	if c["image"] != "registry.example/op:v1.2.3" || c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("image %v, pull policy %v", c["image"], c["imagePullPolicy"])
	}
	a := args(t, deploy)
	for _, want := range []string{"--vrrpd-image=registry.example/vrrpd:v1.2.3", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091", "--leader-elect"} {
		if !slices.Contains(a, want) {
			t.Errorf("args %v lack %s", a, want)
		}
	}
	res := c["resources"].(map[string]any)
	if res["requests"].(map[string]any)["cpu"] != "100m" || res["limits"].(map[string]any)["memory"] != "1Gi" {
		t.Errorf("resources %v", res)
	}
	checkWiring(t, objs, "vrrp-operator")
	checkServiceMonitor(t, objs, "vrrp-operator")
	sm := find(t, objs, "ServiceMonitor", "vrrp-operator")
	if sm.GetLabels()["release"] != "prom" || field(t, sm, "spec", "endpoints").([]any)[0].(map[string]any)["interval"] != "10s" {
		t.Errorf("ServiceMonitor labels %v, endpoints %v", sm.GetLabels(), field(t, sm, "spec", "endpoints"))
	}

	// Without metrics and leader election: no Service, the endpoint closed, one replica.
	objs = decode(t, mustHelmTemplate(t, "--set", "metrics.enabled=false", "--set", "leaderElection.enabled=false", "--set", "replicas=1"))
	for _, u := range objs {
		if u.GetKind() == "Service" || u.GetKind() == "ServiceMonitor" {
			t.Errorf("metrics disabled, yet %s", key(u))
		}
	}
	deploy = find(t, objs, "Deployment", "vrrp-operator")
	a = args(t, deploy)
	if !slices.Contains(a, "--metrics-bind-address=0") || slices.Contains(a, "--leader-elect") {
		t.Errorf("args %v: want --metrics-bind-address=0 and no --leader-elect", a)
	}
	if n := field(t, deploy, "spec", "replicas"); n != int64(1) {
		t.Errorf("replicas %v", n)
	}

	// Another release name names every object, the SCC and its ClusterRole included.
	h := helmCommand(t)
	out, err := run(t, nil, nil, h[0], append(h[1:], "template", "lb", chartDir, "--namespace", "lb-system", "--set", "openshift.enabled=true")...)
	if err != nil {
		t.Fatal(err)
	}
	objs = decode(t, out)
	checkWiring(t, objs, "lb-vrrp-operator")
	checkOpenShift(t, objs, "lb-vrrp-operator")
	checkPolicy(t, objs, "lb-vrrp-operator")

	// The policy values: two group namespaces get a Role each (and are created, or not),
	// "*" a ClusterRole; the allow-list and segment namespaces reach the flags.
	objs = decode(t, mustHelmTemplate(t, "--set", "policy.groupNamespaces={lb-a,lb-b}", "--set", "policy.createGroupNamespaces=false",
		"--set", "policy.allowedVrrpdImages={registry.example/vrrpd,mirror.example/}", "--set", "policy.segmentNamespaces={lb-a}"))
	checkPolicy(t, objs, "vrrp-operator")
	a = args(t, find(t, objs, "Deployment", "vrrp-operator"))
	for _, want := range []string{"--group-namespaces=lb-a,lb-b", "--allowed-vrrpd-images=registry.example/vrrpd,mirror.example/", "--segment-namespaces=lb-a"} {
		if !slices.Contains(a, want) {
			t.Errorf("args %v lack %s", a, want)
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			t.Errorf("createGroupNamespaces=false, yet %s", key(u))
		}
	}
	objs = decode(t, mustHelmTemplate(t, "--set", "policy.groupNamespaces={*}"))
	checkPolicy(t, objs, "vrrp-operator")
}

// TestChartRefusesContradictions: values that would break the operator fail the rendering
// with a message instead of installing something that cannot work.
func TestChartRefusesContradictions(t *testing.T) {
	for name, tc := range map[string]struct {
		set  []string
		want string
	}{
		"two replicas without leader election": {[]string{"--set", "leaderElection.enabled=false"}, "needs leaderElection.enabled"},
		"ServiceMonitor without metrics":       {[]string{"--set", "metrics.enabled=false", "--set", "metrics.serviceMonitor.enabled=true"}, "needs metrics.enabled"},
		"no group namespace":                   {[]string{"--set", "policy.groupNamespaces=null"}, "policy.groupNamespaces is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := helmTemplate(t, tc.set...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template %v: %v, want an error saying %q", tc.set, err, tc.want)
			}
		})
	}
}

// TestChartCopiesInSync: the chart's CRDs (files/crds) and its ClusterRole rules are copies
// that `make manifests` refreshes from the generated files; they must be byte for byte the
// same.
func TestChartCopiesInSync(t *testing.T) {
	gen, err := filepath.Glob(filepath.Join(root, "deploy", "crds", "*_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	copies, err := filepath.Glob(filepath.Join(root, chartDir, "files", "crds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(gen) == 0 || len(gen) != len(copies) {
		t.Fatalf("deploy/crds has %d CRDs, the chart %d files: run make manifests", len(gen), len(copies))
	}
	pairs := map[string]string{
		filepath.Join("deploy", "operator", "rbac", "role.yaml"):               filepath.Join(chartDir, "files", "role.yaml"),
		filepath.Join("deploy", "operator", "policy", "admission_policy.yaml"): filepath.Join(chartDir, "files", "admission_policy.yaml"),
		filepath.Join("deploy", "monitoring", "prometheusrule.yaml"):           filepath.Join(chartDir, "files", "prometheusrule.yaml"),
		filepath.Join("deploy", "monitoring", "dashboard.json"):                filepath.Join(chartDir, "files", "dashboard.json"),
	}
	for _, g := range gen {
		rel, _ := filepath.Rel(root, g)
		pairs[rel] = filepath.Join(chartDir, "files", "crds", filepath.Base(g))
	}
	for src, dst := range pairs {
		a, b := readFile(t, src), readFile(t, dst)
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: run make manifests", dst, src)
		}
	}
	// The CRD is a template (templates/crds.yaml); one under crds/ too would be installed
	// first and never upgraded, and the template's would then collide with it.
	if _, err := os.Stat(filepath.Join(root, chartDir, "crds")); err == nil {
		t.Error("the chart has a crds/ directory: its CRDs belong in files/crds/, which templates/crds.yaml renders")
	}
}
