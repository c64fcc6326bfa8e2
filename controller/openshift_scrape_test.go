package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// platformPrometheus is OpenShift's platform Prometheus as the API server authenticates
// its ServiceAccount token.
var platformPrometheus = struct {
	user   string
	groups []string
}{
	user:   "system:serviceaccount:" + PlatformPrometheusNamespace + ":" + PlatformPrometheusServiceAccount,
	groups: []string{"system:authenticated", "system:serviceaccounts", "system:serviceaccounts:" + PlatformPrometheusNamespace},
}

// installOpenShift adds what deploy/components/openshift adds to the install that
// installOperator applied, read from the component itself: its resources (but the SCC,
// a kind envtest does not serve), the rules its patches add to the operator's ClusterRole
// and the values they give the policy's ConfigMap. It returns the operator's flags the
// component adds, and undoes its changes to the shared install when the test ends, so
// the other tests keep the plain install.
func installOpenShift(t *testing.T) map[string]string {
	t.Helper()
	installOperator(t)
	ctx := context.Background()
	dir := filepath.Join("..", "deploy", "components", "openshift")
	var k struct {
		Resources []string
		Patches   []struct {
			Target struct{ Kind, Name string }
			Patch  string
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	apply := func(u *unstructured.Unstructured) {
		t.Helper()
		if err := k8s.Patch(ctx, u, client.Apply, client.FieldOwner("redteam-install"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, r := range k.Resources {
		for _, u := range readObjects(t, filepath.Join(dir, r)) {
			if u.GetKind() == "SecurityContextConstraints" {
				continue
			}
			apply(u)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
		}
	}

	baseRole := readObjects(t, filepath.Join("..", "deploy", "operator", "rbac", "role.yaml"))[0]
	role := baseRole.DeepCopy()
	flags := map[string]string{}
	params := map[string]string{}
	for _, p := range k.Patches {
		var ops []struct {
			Op, Path string
			Value    any
		}
		if err := yaml.Unmarshal([]byte(p.Patch), &ops); err != nil {
			t.Fatalf("patch of %s %s: %v", p.Target.Kind, p.Target.Name, err)
		}
		for _, op := range ops {
			switch {
			case p.Target.Kind == "ClusterRole" && p.Target.Name == role.GetName() && op.Op == "add" && op.Path == "/rules/-":
				rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
				if err := unstructured.SetNestedSlice(role.Object, append(rules, op.Value), "rules"); err != nil {
					t.Fatal(err)
				}
			case p.Target.Kind == "Deployment" && op.Op == "add" && op.Path == "/spec/template/spec/containers/0/args/-":
				name, value, _ := strings.Cut(strings.TrimLeft(fmt.Sprint(op.Value), "-"), "=")
				flags[name] = value
			case p.Target.Kind == "ConfigMap" && p.Target.Name == policyConfigMap && op.Op == "replace" && strings.HasPrefix(op.Path, "/data/"):
				params[strings.TrimPrefix(op.Path, "/data/")] = fmt.Sprint(op.Value)
			default:
				t.Fatalf("the OpenShift component's patch %s %s on %s %s: this test does not know how to apply it",
					op.Op, op.Path, p.Target.Kind, p.Target.Name)
			}
		}
	}
	apply(role)
	t.Cleanup(func() { apply(baseRole.DeepCopy()) })
	setParams := func(kv map[string]string) {
		eventually(t, 10*time.Second, func() error {
			var cm corev1.ConfigMap
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: installNamespace, Name: policyConfigMap}, &cm); err != nil {
				return err
			}
			for key, v := range kv {
				cm.Data[key] = v
			}
			return k8s.Update(ctx, &cm)
		})
	}
	setParams(params)
	t.Cleanup(func() {
		cleared := map[string]string{}
		for key := range params {
			cleared[key] = ""
		}
		setParams(cleared)
	})
	return flags
}

// canScrape asks the API server (SubjectAccessReview, the authorizer the API server itself
// uses) whether the platform Prometheus may do what a PodMonitor's service discovery does
// in ns: get, list and watch pods, Services and endpoints. It returns what it may not.
func canScrape(t testing.TB, ns string) []string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	var denied []string
	for _, res := range []string{"pods", "services", "endpoints"} {
		for _, verb := range []string{"get", "list", "watch"} {
			if !allowed(t, cs, ns, verb, res) {
				denied = append(denied, verb+" "+res)
			}
		}
	}
	return denied
}

func allowed(t testing.TB, cs *kubernetes.Clientset, ns, verb, resource string) bool {
	t.Helper()
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: platformPrometheus.user, Groups: platformPrometheus.groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// checkPlatformScrape: the platform Prometheus may read pods, Services and endpoints in the
// group namespace ns, by the operator's RoleBinding; it lists the pods there as itself
// (impersonation); and it may not read Secrets there, nor pods in another namespace.
func checkPlatformScrape(t *testing.T, ns, elsewhere string) {
	t.Helper()
	if denied := canScrape(t, ns); len(denied) > 0 {
		t.Errorf("the platform Prometheus may not %v in group namespace %s", denied, ns)
	}
	cfg := rest.CopyConfig(testConfig)
	cfg.Impersonate.UserName, cfg.Impersonate.Groups = platformPrometheus.user, platformPrometheus.groups
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing pods in %s as the platform Prometheus: %v", ns, err)
	}
	if _, err := cs.CoreV1().Endpoints(ns).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing endpoints in %s as the platform Prometheus: %v", ns, err)
	}
	admin, err := kubernetes.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if allowed(t, admin, ns, "list", "secrets") {
		t.Errorf("the platform Prometheus may list Secrets in %s", ns)
	}
	if allowed(t, admin, elsewhere, "list", "pods") {
		t.Errorf("the platform Prometheus may list pods in %s, which holds no group", elsewhere)
	}
}

// checkPrometheusBinding: the group's RoleBinding for the platform Prometheus is the
// install's ClusterRole bound to prometheus-k8s alone, owned by the group.
func checkPrometheusBinding(ns, group, clusterRole string) error {
	var rb rbacv1.RoleBinding
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: group + "-vrrpd-prometheus"}, &rb); err != nil {
		return err
	}
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != clusterRole {
		return fmt.Errorf("roleRef %+v, want ClusterRole %s", rb.RoleRef, clusterRole)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind ||
		rb.Subjects[0].Name != PlatformPrometheusServiceAccount || rb.Subjects[0].Namespace != PlatformPrometheusNamespace {
		return fmt.Errorf("subjects %+v, want only %s/%s", rb.Subjects, PlatformPrometheusNamespace, PlatformPrometheusServiceAccount)
	}
	if len(rb.OwnerReferences) != 1 || rb.OwnerReferences[0].Kind != "KeepalivedGroup" || rb.OwnerReferences[0].Name != group {
		return fmt.Errorf("owners %+v, want the group", rb.OwnerReferences)
	}
	return nil
}

// TestRedTeamOperatorCannotMisusePrometheusRole: with the OpenShift install, the operator
// may bind the platform Prometheus's ClusterRole, and only as the admission policy says:
// to prometheus-k8s, in a group namespace. Bound to another account (a tenant's
// ServiceAccount that would then read every pod of a group namespace), or in a namespace
// that holds no group, it is refused.
func TestRedTeamOperatorCannotMisusePrometheusRole(t *testing.T) {
	flags := installOpenShift(t)
	role := flags["prometheus-cluster-role"]
	if role == "" {
		t.Fatal("the OpenShift component passes no --prometheus-cluster-role")
	}
	ns := newNamespace(t, "promredteam")
	other := newNamespace(t, "promother")
	allowGroupNamespaces(t, ns)
	opts := installOptions(t, ns)
	_, op := impersonate(t, operatorUser)
	waitPolicyActive(t, op, ns, opts.VrrpdImage)
	ctx := context.Background()
	binding := func(ns string, subject rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-vrrpd-prometheus"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}
	}
	prom := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: PlatformPrometheusServiceAccount, Namespace: PlatformPrometheusNamespace}
	// What the operator does: admitted (dry run).
	eventually(t, 10*time.Second, func() error {
		if err := op.Create(ctx, binding(ns, prom), client.DryRunAll); err != nil {
			return fmt.Errorf("the operator's own binding for the platform Prometheus: %v", err)
		}
		return nil
	})
	refused(t, "bind "+role+" to a tenant's ServiceAccount", op.Create(ctx,
		binding(ns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: other}), client.DryRunAll))
	two := binding(ns, prom)
	two.Subjects = append(two.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: other})
	refused(t, "bind "+role+" to prometheus-k8s and another account", op.Create(ctx, two, client.DryRunAll))
	refused(t, "bind "+role+" in a namespace that holds no group", op.Create(ctx, binding(other, prom), client.DryRunAll))
	refused(t, "bind another ClusterRole (view) to prometheus-k8s", op.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-vrrpd-prometheus"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{prom},
	}, client.DryRunAll))
}
