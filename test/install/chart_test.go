package install

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// helm runs the pinned Helm with arguments from the module root.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	h := helmCommand(t)
	return run(t, nil, nil, h[0], append(append([]string{}, h[1:]...), args...)...)
}

// TestChartLintStrict: `helm lint --strict` (warnings are errors, and a template reading
// a value the chart does not define fails) passes with the defaults and with every switch.
func TestChartLintStrict(t *testing.T) {
	for name, set := range map[string][]string{
		"default":    nil,
		"openshift":  {"--set", "openshift.enabled=true", "--set", "metrics.serviceMonitor.enabled=true"},
		"monitoring": {"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.dashboard.enabled=true"},
		"minimal": {"--set", "metrics.enabled=false", "--set", "leaderElection.enabled=false", "--set", "replicas=1",
			"--set", "crds.enabled=false", "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=existing"},
		"everything": {"--set", "podAnnotations.a=b", "--set", "podLabels.c=d", "--set", "priorityClassName=system-cluster-critical",
			"--set", "extraArgs={--group-workers=4}", "--set", "logLevel=2", "--set", "logFormat=text",
			"--set", "vrrpdResources.requests.cpu=100m", "--set", "podDisruptionBudget.minAvailable=1"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", chartDir}, set...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestChartSchema: values.schema.json admits the defaults (and the values the other tests
// use), and refuses values that break it, each with the schema's own message: a misspelt
// key, wrong types, out-of-range numbers, both PDB bounds.
func TestChartSchema(t *testing.T) {
	if _, err := helmTemplate(t); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for name, set := range map[string][]string{
		"misspelt key":                    {"--set", "replica=2"},
		"misspelt nested key":             {"--set", "serviceAccount.crate=false"},
		"replicas not a number":           {"--set-string", "replicas=two"},
		"negative replicas":               {"--set", "replicas=-1"},
		"crds.keep not a boolean":         {"--set-string", "crds.keep=yes"},
		"log format":                      {"--set", "logFormat=xml"},
		"log level":                       {"--set", "logLevel=-1"},
		"extra arg not a flag":            {"--set", "extraArgs={group-workers=4}"},
		"port out of range":               {"--set", "metrics.port=70000"},
		"pull policy":                     {"--set", "image.pullPolicy=Sometimes"},
		"both PDB bounds":                 {"--set", "podDisruptionBudget.minAvailable=1", "--set", "podDisruptionBudget.maxUnavailable=1"},
		"PDB bound not a percentage":      {"--set-string", "podDisruptionBudget.maxUnavailable=half"},
		"vrrpd CPU limit (no flag)":       {"--set", "vrrpdResources.limits.cpu=1"},
		"vrrpd memory not a quantity":     {"--set-string", "vrrpdResources.requests.memory=lots"},
		"group namespace not a name":      {"--set", "policy.groupNamespaces={Not_A_Namespace}"},
		"pod label not a string":          {"--set-json", `podLabels={"a":{"b":"c"}}`},
		"PodMonitor namespace not a name": {"--set", "monitoring.podMonitor.namespace=Not_A_Namespace"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := helmTemplate(t, set...)
			if err == nil {
				t.Fatalf("helm template %v rendered:\n%.300s", set, out)
			}
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
				t.Errorf("helm template %v: %v, want the schema's refusal", set, err)
			}
		})
	}
}

// TestChartREADMEListsEveryValue: the chart's README has a row for every value of
// values.yaml (its leaves; maps that are empty by default, like podLabels, are leaves),
// and no row for a value that does not exist.
func TestChartREADMEListsEveryValue(t *testing.T) {
	var values map[string]any
	if err := yaml.Unmarshal(readFile(t, chartDir+"/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	var leaves []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(prefix+k+".", sub)
				continue
			}
			leaves = append(leaves, prefix+k)
		}
	}
	walk("", values)
	sort.Strings(leaves)
	readme := string(readFile(t, chartDir+"/README.md"))
	var rows []string
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "| `") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			rows = append(rows, name)
		}
	}
	// A row covers a value it names, or one inside it (`resources` covers
	// resources.requests.cpu), or one of the map it is inside of (`podDisruptionBudget.
	// minAvailable`, an option values.yaml only shows in a comment, is a key of
	// podDisruptionBudget).
	related := func(r, l string) bool {
		return r == l || strings.HasPrefix(l, r+".") || strings.HasPrefix(r, l+".")
	}
	for _, l := range leaves {
		if !slices.ContainsFunc(rows, func(r string) bool { return related(r, l) }) {
			t.Errorf("the chart's README has no row for %s", l)
		}
	}
	for _, r := range rows {
		parent := r[:max(strings.LastIndex(r, "."), 0)]
		if !slices.ContainsFunc(leaves, func(l string) bool {
			return related(r, l) || (parent != "" && strings.HasPrefix(l, parent+"."))
		}) {
			t.Errorf("the chart's README has a row for %s, which values.yaml lacks", r)
		}
	}
	if len(rows) < len(leaves)/2 {
		t.Errorf("the chart's README has %d rows for %d values", len(rows), len(leaves))
	}
}

// TestChartNewValues: each of the cert-manager-style values reaches the object it is for.
func TestChartNewValues(t *testing.T) {
	objs := decode(t, mustHelmTemplate(t,
		"--set", "serviceAccount.name=lb-operator", "--set", "serviceAccount.annotations.role=x",
		"--set", "podAnnotations.checksum=abc", "--set", "podLabels.team=net",
		"--set", "priorityClassName=system-cluster-critical",
		"--set", "securityContext.runAsUser=65532", "--set", "containerSecurityContext.privileged=false",
		"--set", "logLevel=2", "--set", "logFormat=text", "--set", "extraArgs={--group-workers=4,--kube-api-qps=50}",
		"--set", "vrrpdResources.requests.cpu=100m", "--set", "vrrpdResources.requests.memory=48Mi",
		"--set", "vrrpdResources.limits.memory=256Mi", "--set", "podDisruptionBudget.minAvailable=1",
	))
	deploy := find(t, objs, "Deployment", "vrrp-operator")
	pod := field(t, deploy, "spec", "template").(map[string]any)
	podMeta := pod["metadata"].(map[string]any)
	podSpec := pod["spec"].(map[string]any)
	if podMeta["annotations"].(map[string]any)["checksum"] != "abc" || podMeta["labels"].(map[string]any)["team"] != "net" {
		t.Errorf("pod metadata %v", podMeta)
	}
	if podSpec["serviceAccountName"] != "lb-operator" || podSpec["priorityClassName"] != "system-cluster-critical" {
		t.Errorf("pod spec serviceAccountName %v, priorityClassName %v", podSpec["serviceAccountName"], podSpec["priorityClassName"])
	}
	if sc := podSpec["securityContext"].(map[string]any); sc["runAsUser"] != int64(65532) || sc["runAsNonRoot"] != true {
		t.Errorf("pod securityContext %v", sc)
	}
	if sc := container(t, deploy)["securityContext"].(map[string]any); sc["privileged"] != false || sc["readOnlyRootFilesystem"] != true {
		t.Errorf("container securityContext %v", sc)
	}
	a := args(t, deploy)
	for _, want := range []string{"-v=2", "--log-format=text", "--group-workers=4", "--kube-api-qps=50",
		"--vrrpd-cpu-request=100m", "--vrrpd-memory-request=48Mi", "--vrrpd-memory-limit=256Mi"} {
		if !slices.Contains(a, want) {
			t.Errorf("args %v lack %s", a, want)
		}
	}
	sa := find(t, objs, "ServiceAccount", "lb-operator")
	if sa.GetAnnotations()["role"] != "x" {
		t.Errorf("ServiceAccount annotations %v", sa.GetAnnotations())
	}
	checkWiring(t, objs, "vrrp-operator")
	checkPolicy(t, objs, "vrrp-operator")
	pdb := find(t, objs, "PodDisruptionBudget", "vrrp-operator")
	if spec := field(t, pdb, "spec").(map[string]any); spec["minAvailable"] != int64(1) || spec["maxUnavailable"] != nil {
		t.Errorf("PodDisruptionBudget spec %v, want minAvailable 1 only", spec)
	}

	// The defaults: no flag for what the operator defaults itself, a PDB of maxUnavailable 1.
	objs = decode(t, mustHelmTemplate(t))
	for _, arg := range args(t, find(t, objs, "Deployment", "vrrp-operator")) {
		for _, flag := range []string{"-v=", "--log-format", "--vrrpd-"} {
			if strings.HasPrefix(arg, flag) && !strings.HasPrefix(arg, "--vrrpd-image") {
				t.Errorf("default args have %s", arg)
			}
		}
	}
	if spec := field(t, find(t, objs, "PodDisruptionBudget", "vrrp-operator"), "spec").(map[string]any); spec["maxUnavailable"] != int64(1) {
		t.Errorf("default PodDisruptionBudget spec %v", spec)
	}

	// An existing ServiceAccount: none rendered, every binding names it; none named: refused.
	objs = decode(t, mustHelmTemplate(t, "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=existing"))
	for _, u := range objs {
		if u.GetKind() == "ServiceAccount" {
			t.Errorf("serviceAccount.create=false, yet %s", key(u))
		}
	}
	if sa := field(t, find(t, objs, "Deployment", "vrrp-operator"), "spec", "template", "spec", "serviceAccountName"); sa != "existing" {
		t.Errorf("serviceAccountName %v", sa)
	}
	checkPolicy(t, objs, "vrrp-operator")
	if _, err := helmTemplate(t, "--set", "serviceAccount.create=false"); err == nil || !strings.Contains(err.Error(), "serviceAccount.name") {
		t.Errorf("serviceAccount.create=false without a name: %v, want refused naming serviceAccount.name", err)
	}

	// One replica: no PodDisruptionBudget (it would block every drain or mean nothing).
	for _, u := range decode(t, mustHelmTemplate(t, "--set", "replicas=1", "--set", "leaderElection.enabled=false")) {
		if u.GetKind() == "PodDisruptionBudget" {
			t.Errorf("one replica, yet %s", key(u))
		}
	}
}

// TestChartKeeps: what `helm uninstall` must leave carries helm.sh/resource-policy: keep
// (the CRD unless crds.keep=false, the groups' namespaces, OpenShift's SCC and its
// ClusterRole, the admission policy's parameters, whose deletion before the binding's would
// refuse everyone's writes), and nothing else does; crds.enabled=false renders no CRD.
func TestChartKeeps(t *testing.T) {
	kept := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, u := range objs {
			if u.GetAnnotations()[keepAnnotation] == "keep" {
				out = append(out, key(u))
			}
		}
		sort.Strings(out)
		return out
	}
	got := kept(decode(t, mustHelmTemplate(t, "--set", "openshift.enabled=true", "--set", "policy.groupNamespaces={lb-a,lb-b}")))
	want := []string{
		"ClusterRole /vrrp-operator-vrrpd-scc",
		"ConfigMap vrrp-operator/vrrp-operator-policy",
		"CustomResourceDefinition /" + crdName,
		"CustomResourceDefinition /keepalivedmasterships.redhatcop.redhat.io",
		"Namespace /lb-a",
		"Namespace /lb-b",
		"SecurityContextConstraints /vrrp-operator-vrrpd",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept on uninstall: %v, want %v", got, want)
	}
	got = kept(decode(t, mustHelmTemplate(t, "--set", "crds.keep=false")))
	if want := []string{"ConfigMap vrrp-operator/vrrp-operator-policy", "Namespace /" + groupsNS}; !reflect.DeepEqual(got, want) {
		t.Errorf("crds.keep=false: kept %v, want %v", got, want)
	}
	for _, u := range decode(t, mustHelmTemplate(t, "--set", "crds.enabled=false")) {
		if u.GetKind() == "CustomResourceDefinition" {
			t.Errorf("crds.enabled=false, yet %s", key(u))
		}
	}
}

// TestChartNotes: NOTES.txt names no file of this repository (Helm users install from a
// chart and have none), and says what uninstall leaves.
func TestChartNotes(t *testing.T) {
	// A client-side dry run still asks the cluster (the package's API server) for its version
	// and for existing objects: its CRD is there, hence --take-ownership as in the README.
	h := helmCommand(t)
	out, err := run(t, []string{"KUBECONFIG=" + kubeconfig(t)}, nil, h[0],
		append(append([]string{}, h[1:]...), "install", "vrrp-operator", chartDir, "--dry-run=client", "--take-ownership", "--namespace", "vrrp-operator")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	i := strings.Index(s, "NOTES:")
	if i < 0 {
		t.Fatalf("no NOTES in:\n%s", s)
	}
	notes := s[i:]
	for _, bad := range []string{"deploy/", "samples/", ".yaml"} {
		if strings.Contains(notes, bad) {
			t.Errorf("NOTES.txt mentions %q, a file Helm users do not have:\n%s", bad, notes)
		}
	}
	for _, want := range []string{"helm uninstall", "kubectl delete crd " + crdName, "keepalived-operator.redhat-cop.io/keepalivedgroup"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
	t.Log(notes)

	// Its example group is one the API server admits (the CRD's schema and CEL rules).
	i, j := strings.Index(notes, "  apiVersion: redhatcop.redhat.io/v1alpha1"), strings.Index(notes, "  ---")
	if i < 0 || j < i {
		t.Fatalf("NOTES.txt has no example KeepalivedGroup")
	}
	var example []string
	for _, line := range strings.Split(notes[i:j], "\n") {
		example = append(example, strings.TrimPrefix(line, "  "))
	}
	objs := decode(t, []byte(strings.Join(example, "\n")))
	if len(objs) != 1 || objs[0].GetKind() != "KeepalivedGroup" {
		t.Fatalf("NOTES.txt's example: %v", objs)
	}
	ensureNamespace(t, objs[0].GetNamespace(), nil)
	if err := env.Client.Create(context.Background(), objs[0], client.DryRunAll); err != nil {
		t.Errorf("NOTES.txt's example group: %v", err)
	}
}
