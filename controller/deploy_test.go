package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestOperatorRBACIsEnough installs deploy/operator's namespaces, ClusterRole,
// ServiceAccount, bindings and admission policy (installOperator), lets the
// test's namespace hold groups (as an admin would: the policy's ConfigMap and
// --group-namespaces), then runs the operator impersonating that
// ServiceAccount with the install's flags: it must do all its work (status,
// DaemonSet, vrrpd's Role, address allocation, events) with exactly those
// rights and within the policy, which include no
// Secret: a group with passwordAuth gets its Secret as a volume of the
// DaemonSet's pods, and vrrpd's Role has no Secret either.
// The Deployment manifest is checked by a server-side dry run.
func TestOperatorRBACIsEnough(t *testing.T) {
	needAPIServer(t)
	dir := filepath.Join("..", "deploy", "operator")
	installOperator(t)
	dryRun(t, filepath.Join(dir, "deployment.yaml"))

	ns := newNamespace(t, "rbac")
	allowGroupNamespaces(t, ns)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.PasswordAuth = &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "pw"}}
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.240-10.99.0.243"}}
	})
	newService(t, ns, "web", ns+"/g", asLoadBalancer)
	newService(t, ns, "bad", "nogroup", withExternalIPs("10.99.0.9"))

	// The API server does enforce RBAC: a ServiceAccount without the
	// binding may not even list Services.
	nobody := rest.CopyConfig(testConfig)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:vrrp-operator:nobody"}
	nc, err := client.New(nobody, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.List(context.Background(), &corev1.ServiceList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("unbound ServiceAccount listing Services: %v, want Forbidden", err)
	}

	cfg, _ := impersonate(t, operatorUser)
	// The deployed ClusterRole grants nothing on Secrets, and the API
	// server agrees: the operator's ServiceAccount may not read one.
	for _, r := range readObjects(t, filepath.Join(dir, "rbac/role.yaml"))[0].Object["rules"].([]any) {
		for _, res := range r.(map[string]any)["resources"].([]any) {
			if res == "secrets" {
				t.Errorf("deploy/operator's ClusterRole has a rule on secrets: %v", r)
			}
		}
	}
	opc, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := opc.List(context.Background(), &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("the operator listing Secrets: %v, want Forbidden", err)
	}
	startManagerWith(t, cfg, installOptions(t, ns), ns)
	eventually(t, 30*time.Second, func() error {
		g := getGroup(t, ns, "g")
		if len(g.Status.Instances) != 1 || g.Status.Instances[0].VIPs[0] != "10.99.0.240" {
			return fmt.Errorf("status %+v", g.Status)
		}
		for _, c := range g.Status.Conditions {
			if c.Type == v1alpha1.ConditionReady && c.Status != "True" {
				return fmt.Errorf("Ready: %s", c.Message)
			}
		}
		if len(serviceEvents(t, ns, ReasonIPAllocated)["web"]) != 1 || len(serviceEvents(t, ns, ReasonInvalidAnnotation)["bad"]) != 1 {
			return fmt.Errorf("events missing")
		}
		return nil
	})
	// What it made for the password: a Secret volume in the DaemonSet, and
	// a vrrpd Role without Secrets.
	key := types.NamespacedName{Namespace: ns, Name: "g-vrrpd"}
	var ds appsv1.DaemonSet
	eventually(t, 20*time.Second, func() error { return k8s.Get(context.Background(), key, &ds) })
	vols := ds.Spec.Template.Spec.Volumes
	if !slices.ContainsFunc(vols, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "pw" }) {
		t.Errorf("DaemonSet volumes %+v lack Secret pw", vols)
	}
	var role rbacv1.Role
	if err := k8s.Get(context.Background(), key, &role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "secrets") {
			t.Errorf("vrrpd's Role has a rule on secrets: %+v", r)
		}
	}
}

// applyFileIfAbsent creates each object of a file unless it exists.
func applyFileIfAbsent(t testing.TB, path string) {
	t.Helper()
	for _, u := range readObjects(t, path) {
		if err := k8s.Create(context.Background(), u); err != nil && !isAlreadyExists(err) {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

func dryRun(t testing.TB, path string) {
	t.Helper()
	for _, u := range readObjects(t, path) {
		if err := k8s.Create(context.Background(), u, client.DryRunAll); err != nil && !isAlreadyExists(err) {
			t.Fatalf("%s: %v", path, err)
		}
	}
}
