package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestOperatorRBACIsEnough installs deploy/operator's namespace, ClusterRole,
// ServiceAccount and binding, then runs the operator impersonating that
// ServiceAccount: it must do all its work (status, DaemonSet, a Role for a
// password Secret, address allocation, events) with exactly those rights.
// The Deployment manifest is checked by a server-side dry run.
func TestOperatorRBACIsEnough(t *testing.T) {
	needAPIServer(t)
	dir := filepath.Join("..", "deploy", "operator")
	for _, f := range []string{"namespace.yaml", "rbac/role.yaml", "rbac/service_account.yaml", "rbac/role_binding.yaml"} {
		applyFileIfAbsent(t, filepath.Join(dir, f))
	}
	dryRun(t, filepath.Join(dir, "deployment.yaml"))

	ns := newNamespace(t, "rbac")
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

	cfg := rest.CopyConfig(testConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:vrrp-operator:vrrp-operator"}
	startManagerAs(t, cfg, ns)
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
