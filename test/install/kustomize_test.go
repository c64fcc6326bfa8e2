package install

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kustomizations finds every kustomization.yaml under deploy/ and returns the directories
// of Kustomizations and of Components.
func kustomizations(t testing.TB) (overlays, components []string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k struct{ Kind string }
		if err := yaml.Unmarshal(b, &k); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		switch k.Kind {
		case "Kustomization", "":
			overlays = append(overlays, dir)
		case "Component":
			components = append(components, dir)
		default:
			t.Fatalf("%s: kind %q", p, k.Kind)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return overlays, components
}

// withComponent renders the install plus a component, the way the component's comment
// tells users to: a kustomization of their own naming both.
func withComponent(t testing.TB, component string) []byte {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes other kustomizations by relative path only.
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"resources:\n- " + rel("deploy/operator") + "\n" +
		"components:\n- " + rel(component) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return kustomize(t, dir)
}

// TestEveryKustomizationApplies renders each kustomization under deploy/ (a component
// on top of the install) and applies the result to the API server with a server-side dry
// run.
func TestEveryKustomizationApplies(t *testing.T) {
	overlays, components := kustomizations(t)
	for _, want := range []string{"deploy/operator", "deploy/openshift", "deploy/crds", "deploy/cluster"} {
		if !slices.Contains(overlays, want) {
			t.Errorf("no kustomization in %s (found %v)", want, overlays)
		}
	}
	for _, dir := range overlays {
		// deploy/monitoring goes into the install's namespace without declaring it (the
		// component adds it to the install, which does); deploy/operator's takeover Role
		// into the groups' namespace, which deploy/cluster declares (the README's first
		// step).
		extra := []string{"keepalived-operator"}
		if dir == "deploy/monitoring" {
			extra = append(extra, "vrrp-operator")
		}
		t.Run(dir, func(t *testing.T) { dryRunApply(t, kustomize(t, dir), extra...) })
	}
	for _, dir := range components {
		t.Run(dir, func(t *testing.T) { dryRunApply(t, withComponent(t, dir), "keepalived-operator") })
	}
}

// TestInstallContents: deploy/cluster holds what outlives the operator, the CRD (exactly
// the generated one) and the namespace that holds groups, and nothing else; deploy/operator
// the operator, every object in namespace vrrp-operator but the operator's Role in the
// namespace that may hold groups (keepalived-operator), without the CRD or that namespace
// (so that `kubectl delete -k deploy/operator` leaves the groups), the ClusterRole exactly
// the generated one, and the parts naming each other consistently.
func TestInstallContents(t *testing.T) {
	cluster := decode(t, kustomize(t, "deploy/cluster"))
	var ckeys []string
	for k := range index(t, cluster) {
		ckeys = append(ckeys, k)
	}
	slices.Sort(ckeys)
	if want := []string{"CustomResourceDefinition /keepalivedgroups.redhatcop.redhat.io", "CustomResourceDefinition /keepalivedmasterships.redhatcop.redhat.io", "Namespace /keepalived-operator"}; !slices.Equal(ckeys, want) {
		t.Errorf("deploy/cluster: %v, want %v", ckeys, want)
	}
	objs := decode(t, kustomize(t, "deploy/operator"))
	var keys []string
	for k, u := range index(t, objs) {
		keys = append(keys, k)
		if ns := u.GetNamespace(); ns != "" && ns != "vrrp-operator" && ns != "keepalived-operator" {
			t.Errorf("%s: namespace %q, want vrrp-operator or keepalived-operator", k, ns)
		}
	}
	slices.Sort(keys)
	want := []string{
		"ClusterRole /vrrp-operator",
		"ClusterRoleBinding /vrrp-operator",
		"ConfigMap vrrp-operator/vrrp-operator-policy",
		"Deployment vrrp-operator/vrrp-operator",
		"Namespace /vrrp-operator",
		"PodDisruptionBudget vrrp-operator/vrrp-operator",
		"Role keepalived-operator/vrrp-operator-takeover",
		"RoleBinding keepalived-operator/vrrp-operator-takeover",
		"Service vrrp-operator/vrrp-operator-metrics",
		"ServiceAccount vrrp-operator/vrrp-operator",
		"ValidatingAdmissionPolicy /vrrp-operator",
		"ValidatingAdmissionPolicyBinding /vrrp-operator",
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("objects:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}

	// The operator's pods meet "restricted", so its namespace enforces it; vrrpd's need
	// "privileged" (host network, hostPath, NET_ADMIN), as pool.yaml says too.
	ns := find(t, objs, "Namespace", "vrrp-operator")
	if got := ns.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace vrrp-operator enforces %q, want restricted", got)
	}
	groups := find(t, cluster, "Namespace", "keepalived-operator")
	if got := groups.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("namespace keepalived-operator enforces %q, want privileged", got)
	}

	// The generated files, unchanged.
	crd := decode(t, readFile(t, "deploy/crds/redhatcop.redhat.io_keepalivedgroups.yaml"))
	if !reflect.DeepEqual(find(t, cluster, "CustomResourceDefinition", "keepalivedgroups.redhatcop.redhat.io").Object, crd[0].Object) {
		t.Error("the rendered CRD differs from deploy/crds")
	}
	ms := decode(t, readFile(t, "deploy/crds/redhatcop.redhat.io_keepalivedmasterships.yaml"))
	if !reflect.DeepEqual(find(t, cluster, "CustomResourceDefinition", "keepalivedmasterships.redhatcop.redhat.io").Object, ms[0].Object) {
		t.Error("the rendered KeepalivedMastership CRD differs from deploy/crds")
	}
	// The PodDisruptionBudget covers the operator's pods.
	pdb := find(t, objs, "PodDisruptionBudget", "vrrp-operator")
	podLabels := field(t, find(t, objs, "Deployment", "vrrp-operator"), "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range field(t, pdb, "spec", "selector", "matchLabels").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("PodDisruptionBudget selects %s=%v; the operator's pods have %v", k, v, podLabels)
		}
	}
	role := decode(t, readFile(t, "deploy/operator/rbac/role.yaml"))
	if !reflect.DeepEqual(find(t, objs, "ClusterRole", "vrrp-operator").Object, role[0].Object) {
		t.Error("the rendered ClusterRole differs from deploy/operator/rbac/role.yaml")
	}

	checkWiring(t, objs, "vrrp-operator")
	checkPolicy(t, objs, "vrrp-operator")
}

// checkPolicy: the admission policy's parameters (the ConfigMap) are the operator's
// flags, the policy matches the Deployment's ServiceAccount and its binding names the
// ConfigMap; the takeover's rights (list Pods, get and delete ConfigMaps) are a Role in
// each namespace that may hold groups bound to that ServiceAccount (a ClusterRole for
// "*"), and the operator's ClusterRole has neither.
func checkPolicy(t *testing.T, objs []*unstructured.Unstructured, name string) {
	t.Helper()
	deploy := find(t, objs, "Deployment", name)
	ns := deploy.GetNamespace()
	sa := field(t, deploy, "spec", "template", "spec", "serviceAccountName").(string)
	flags := map[string]string{}
	for _, a := range args(t, deploy) {
		k, v, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		flags[k] = v
	}
	cm := find(t, objs, "ConfigMap", name+"-policy")
	if cm.GetNamespace() != ns {
		t.Errorf("ConfigMap %s in %q, the operator in %q", cm.GetName(), cm.GetNamespace(), ns)
	}
	data, _ := field(t, cm, "data").(map[string]any)
	for key, flag := range map[string]string{"groupNamespaces": "group-namespaces", "vrrpdImage": "vrrpd-image",
		"allowedVrrpdImages": "allowed-vrrpd-images", "sccClusterRole": "scc-cluster-role",
		"prometheusClusterRole": "prometheus-cluster-role", "podMonitorNamespace": "podmonitor-namespace"} {
		if data[key] != flags[flag] {
			t.Errorf("ConfigMap %s %s=%q, the operator's --%s=%q", cm.GetName(), key, data[key], flag, flags[flag])
		}
	}
	vap := find(t, objs, "ValidatingAdmissionPolicy", name)
	conds, _ := field(t, vap, "spec", "matchConditions").([]any)
	wantUser := fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", ns, sa)
	if len(conds) != 1 || conds[0].(map[string]any)["expression"] != wantUser {
		t.Errorf("policy matchConditions %v, want only %s", conds, wantUser)
	}
	b := find(t, objs, "ValidatingAdmissionPolicyBinding", name)
	if field(t, b, "spec", "policyName") != name || !reflect.DeepEqual(field(t, b, "spec", "paramRef"),
		map[string]any{"name": cm.GetName(), "namespace": ns, "parameterNotFoundAction": "Deny"}) ||
		!reflect.DeepEqual(field(t, b, "spec", "validationActions"), []any{"Deny"}) {
		t.Errorf("policy binding spec %v", b.Object["spec"])
	}

	takeover := []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"list"}},
		map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "delete"}},
	}
	subject := []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": ns}}
	for _, r := range field(t, find(t, objs, "ClusterRole", name), "rules").([]any) {
		for _, res := range r.(map[string]any)["resources"].([]any) {
			if res == "pods" || res == "configmaps" {
				t.Errorf("the operator's ClusterRole has a rule on %s: %v", res, r)
			}
		}
	}
	for _, gns := range strings.Split(flags["group-namespaces"], ",") {
		kind, bkind, rns := "Role", "RoleBinding", gns
		if gns == "*" {
			kind, bkind, rns = "ClusterRole", "ClusterRoleBinding", ""
		}
		var role, rb *unstructured.Unstructured
		for _, u := range objs {
			if u.GetName() == name+"-takeover" && u.GetNamespace() == rns {
				switch u.GetKind() {
				case kind:
					role = u
				case bkind:
					rb = u
				}
			}
		}
		if role == nil || rb == nil {
			t.Errorf("no %s and %s %s-takeover for group namespace %q", kind, bkind, name, gns)
			continue
		}
		if !reflect.DeepEqual(role.Object["rules"], takeover) {
			t.Errorf("%s %s rules %v, want %v", kind, key(role), role.Object["rules"], takeover)
		}
		if !reflect.DeepEqual(rb.Object["subjects"], subject) || field(t, rb, "roleRef", "name") != role.GetName() || field(t, rb, "roleRef", "kind") != kind {
			t.Errorf("%s %s binds %v to %v", bkind, key(rb), rb.Object["roleRef"], rb.Object["subjects"])
		}
	}
}

// checkWiring: the Deployment runs as the bound ServiceAccount, the metrics Service
// selects its pods and reaches the port the operator's flag opens, leader election uses
// the install's namespace.
func checkWiring(t *testing.T, objs []*unstructured.Unstructured, name string) {
	t.Helper()
	deploy := find(t, objs, "Deployment", name)
	ns := deploy.GetNamespace()
	sa := field(t, deploy, "spec", "template", "spec", "serviceAccountName").(string)
	find(t, objs, "ServiceAccount", sa)
	binding := find(t, objs, "ClusterRoleBinding", name)
	subjects, _ := field(t, binding, "subjects").([]any)
	if len(subjects) != 1 || !reflect.DeepEqual(subjects[0], map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": ns}) {
		t.Errorf("ClusterRoleBinding subjects %v, want ServiceAccount %s/%s", subjects, ns, sa)
	}
	if ref := field(t, binding, "roleRef", "name"); ref != name {
		t.Errorf("ClusterRoleBinding binds %v, want ClusterRole %s", ref, name)
	}

	a := args(t, deploy)
	if slices.Contains(a, "--leader-elect") && !slices.Contains(a, "--leader-election-namespace="+ns) {
		t.Errorf("args %v: leader election outside namespace %s", a, ns)
	}
	var metricsPort int64
	ports, _ := container(t, deploy)["ports"].([]any)
	for _, p := range ports {
		if pm, _ := p.(map[string]any); pm["name"] == "metrics" {
			metricsPort, _ = pm["containerPort"].(int64)
		}
	}
	if !slices.ContainsFunc(a, func(s string) bool { return s == "--metrics-bind-address=:"+strconv.FormatInt(metricsPort, 10) }) {
		t.Errorf("args %v do not open the metrics port %d", a, metricsPort)
	}

	svc := find(t, objs, "Service", name+"-metrics")
	podLabels := field(t, deploy, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range field(t, svc, "spec", "selector").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("metrics Service selects %s=%v; the operator's pods have %v", k, v, podLabels)
		}
	}
	sp := field(t, svc, "spec", "ports").([]any)[0].(map[string]any)
	if sp["targetPort"] != "metrics" || sp["name"] != "metrics" {
		t.Errorf("metrics Service port %v, want name and targetPort metrics", sp)
	}
}

// TestServiceMonitorComponent: the component's ServiceMonitor scrapes the metrics Service
// (its selector matches the Service's labels, its endpoint the Service's port), in the
// install's namespace.
func TestServiceMonitorComponent(t *testing.T) {
	objs := decode(t, withComponent(t, "deploy/components/servicemonitor"))
	checkServiceMonitor(t, objs, "vrrp-operator")
}

func checkServiceMonitor(t *testing.T, objs []*unstructured.Unstructured, name string) {
	t.Helper()
	sm := find(t, objs, "ServiceMonitor", name)
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %s", sm.GetAPIVersion())
	}
	svc := find(t, objs, "Service", name+"-metrics")
	if sm.GetNamespace() != svc.GetNamespace() {
		t.Errorf("ServiceMonitor in %q, Service in %q", sm.GetNamespace(), svc.GetNamespace())
	}
	for k, v := range field(t, sm, "spec", "selector", "matchLabels").(map[string]any) {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v; the Service has %v", k, v, svc.GetLabels())
		}
	}
	eps, _ := field(t, sm, "spec", "endpoints").([]any)
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v", eps)
	}
	ep := eps[0].(map[string]any)
	if ep["port"] != "metrics" || ep["path"] != "/metrics" || ep["scheme"] != "http" {
		t.Errorf("ServiceMonitor endpoint %v, want port metrics, path /metrics, http", ep)
	}
}

// TestOpenShiftOverlay: deploy/openshift is the install plus exactly the SCC, the
// ClusterRole that may use it, `use` of it in the operator's ClusterRole (without which
// Kubernetes refuses the operator's RoleBindings to that ClusterRole) and the flag that
// names the ClusterRole to the operator; and the platform Prometheus's ClusterRole, `bind`
// of it in the operator's ClusterRole and the flag that names it.
func TestOpenShiftOverlay(t *testing.T) {
	base := index(t, decode(t, kustomize(t, "deploy/operator")))
	objs := decode(t, kustomize(t, "deploy/openshift"))
	over := index(t, objs)
	for k, u := range base {
		o, ok := over[k]
		if !ok {
			t.Errorf("the overlay lacks %s", k)
			continue
		}
		if k == "ClusterRole /vrrp-operator" || k == "Deployment vrrp-operator/vrrp-operator" || k == "ConfigMap vrrp-operator/vrrp-operator-policy" {
			continue // checked by checkOpenShift and checkPolicy
		}
		if !reflect.DeepEqual(u.Object, o.Object) {
			t.Errorf("the overlay changes %s", k)
		}
	}
	var added []string
	for k := range over {
		if _, ok := base[k]; !ok {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	if want := []string{"ClusterRole /vrrp-operator-prometheus-k8s", "ClusterRole /vrrp-operator-vrrpd-scc", "SecurityContextConstraints /vrrp-operator-vrrpd"}; !slices.Equal(added, want) {
		t.Errorf("the overlay adds %v, want %v", added, want)
	}
	baseRules := field(t, base["ClusterRole /vrrp-operator"], "rules").([]any)
	rules := field(t, over["ClusterRole /vrrp-operator"], "rules").([]any)
	if len(rules) != len(baseRules)+2 || !reflect.DeepEqual(rules[:len(baseRules)], baseRules) {
		t.Errorf("the overlay's operator ClusterRole is not the install's plus two rules")
	}
	baseArgs, overArgs := args(t, base["Deployment vrrp-operator/vrrp-operator"]), args(t, over["Deployment vrrp-operator/vrrp-operator"])
	if len(overArgs) != len(baseArgs)+2 || !slices.Equal(overArgs[:len(baseArgs)], baseArgs) {
		t.Errorf("the overlay's operator args %v are not the install's %v plus two", overArgs, baseArgs)
	}
	checkOpenShift(t, objs, "vrrp-operator")
	checkPolicy(t, objs, "vrrp-operator")
}

// checkOpenShift checks the SCC field by field and the RBAC around it.
func checkOpenShift(t *testing.T, objs []*unstructured.Unstructured, name string) {
	t.Helper()
	sccName := name + "-vrrpd"
	scc := find(t, objs, "SecurityContextConstraints", sccName)
	if scc.GetAPIVersion() != "security.openshift.io/v1" {
		t.Errorf("SCC apiVersion %s", scc.GetAPIVersion())
	}
	want := map[string]any{
		"allowHostNetwork": true,
		// hostNetwork makes every containerPort a hostPort (vrrpd's metrics port).
		"allowHostPorts": true,
		"allowHostPID":   false,
		"allowHostIPC":   false,
		// vrrpd's VIP record outlives its pod in /run/vrrpd/<namespace>/<group>.
		"allowHostDirVolumePlugin":        true,
		"allowPrivilegedContainer":        false,
		"allowPrivilegeEscalation":        false,
		"defaultAllowPrivilegeEscalation": false,
		"allowedCapabilities":             []any{"NET_ADMIN", "NET_RAW"},
		"defaultAddCapabilities":          []any{},
		"requiredDropCapabilities":        []any{"ALL"},
		"readOnlyRootFilesystem":          true,
		"runAsUser":                       map[string]any{"type": "RunAsAny"},
		"seLinuxContext":                  map[string]any{"type": "MustRunAs"},
		"fsGroup":                         map[string]any{"type": "MustRunAs"},
		"supplementalGroups":              map[string]any{"type": "RunAsAny"},
		"seccompProfiles":                 []any{"runtime/default"},
		"volumes":                         []any{"emptyDir", "hostPath", "projected", "configMap", "downwardAPI", "secret"},
		"users":                           []any{},
		"groups":                          []any{},
		"priority":                        nil,
	}
	got := map[string]any{}
	for k, v := range scc.Object {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			got[k] = v
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SCC fields:\n%v\nwant:\n%v", got, want)
	}

	useRule := map[string]any{
		"apiGroups":     []any{"security.openshift.io"},
		"resources":     []any{"securitycontextconstraints"},
		"resourceNames": []any{sccName},
		"verbs":         []any{"use"},
	}
	sccRole := find(t, objs, "ClusterRole", name+"-vrrpd-scc")
	if rules := field(t, sccRole, "rules").([]any); len(rules) != 1 || !reflect.DeepEqual(rules[0], useRule) {
		t.Errorf("ClusterRole %s rules %v, want only %v", sccRole.GetName(), rules, useRule)
	}
	rules := field(t, find(t, objs, "ClusterRole", name), "rules").([]any)
	if !slices.ContainsFunc(rules, func(r any) bool { return reflect.DeepEqual(r, useRule) }) {
		t.Errorf("the operator's ClusterRole lacks %v", useRule)
	}
	if a := args(t, find(t, objs, "Deployment", name)); !slices.Contains(a, "--scc-cluster-role="+sccRole.GetName()) {
		t.Errorf("operator args %v do not name ClusterRole %s", a, sccRole.GetName())
	}

	// The platform Prometheus's read of the group namespaces: pods, Services and endpoints,
	// nothing else; the operator may bind that one role and holds none of its rights.
	readRule := map[string]any{
		"apiGroups": []any{""},
		"resources": []any{"endpoints", "pods", "services"},
		"verbs":     []any{"get", "list", "watch"},
	}
	promRole := find(t, objs, "ClusterRole", name+"-prometheus-k8s")
	if rules := field(t, promRole, "rules").([]any); len(rules) != 1 || !reflect.DeepEqual(rules[0], readRule) {
		t.Errorf("ClusterRole %s rules %v, want only %v", promRole.GetName(), rules, readRule)
	}
	bindRule := map[string]any{
		"apiGroups":     []any{"rbac.authorization.k8s.io"},
		"resources":     []any{"clusterroles"},
		"resourceNames": []any{promRole.GetName()},
		"verbs":         []any{"bind"},
	}
	if !slices.ContainsFunc(rules, func(r any) bool { return reflect.DeepEqual(r, bindRule) }) {
		t.Errorf("the operator's ClusterRole lacks %v", bindRule)
	}
	if a := args(t, find(t, objs, "Deployment", name)); !slices.Contains(a, "--prometheus-cluster-role="+promRole.GetName()) {
		t.Errorf("operator args %v do not name ClusterRole %s", a, promRole.GetName())
	}
}

// TestCRDKustomizationListsEveryCRD: deploy/crds/kustomization.yaml is written by hand
// next to generated files; a new CRD must not be left out of the install.
func TestCRDKustomizationListsEveryCRD(t *testing.T) {
	var k struct{ Resources []string }
	if err := yaml.Unmarshal(readFile(t, "deploy/crds/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "deploy", "crds", "*_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	slices.Sort(k.Resources)
	if len(names) == 0 || !slices.Equal(names, k.Resources) {
		t.Errorf("deploy/crds has %v, its kustomization lists %v", names, k.Resources)
	}
}
