package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// TestSCCRoleBinding: with Options.SCCClusterRole (the OpenShift install's
// --scc-cluster-role) each group's vrrpd ServiceAccount is bound to that
// ClusterRole; a new role name replaces the binding (its roleRef cannot
// change in place), and an operator started without it removes the binding.
func TestSCCRoleBinding(t *testing.T) {
	ns := newNamespace(t, "scc")
	g := newGroup(t, ns, "g", nil)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "g-vrrpd-scc"}
	boundTo := func(role string) func() error {
		return func() error {
			var rb rbacv1.RoleBinding
			if err := k8s.Get(ctx, key, &rb); err != nil {
				return err
			}
			if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != role || rb.RoleRef.APIGroup != rbacv1.GroupName {
				return fmt.Errorf("roleRef %+v, want ClusterRole %s", rb.RoleRef, role)
			}
			if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind || rb.Subjects[0].Name != "g-vrrpd" || rb.Subjects[0].Namespace != ns {
				return fmt.Errorf("subjects %+v, want the group's ServiceAccount", rb.Subjects)
			}
			if len(rb.OwnerReferences) != 1 || rb.OwnerReferences[0].UID != g.UID {
				return fmt.Errorf("owners %+v, want the group", rb.OwnerReferences)
			}
			return nil
		}
	}

	m := startManagerWith(t, testConfig, Options{VrrpdImage: testImage, SCCClusterRole: "vrrp-operator-vrrpd-scc"}, ns)
	eventually(t, 20*time.Second, boundTo("vrrp-operator-vrrpd-scc"))
	m.stop()

	m = startManagerWith(t, testConfig, Options{VrrpdImage: testImage, SCCClusterRole: "other-scc"}, ns)
	eventually(t, 20*time.Second, boundTo("other-scc"))
	m.stop()

	startManagerWith(t, testConfig, Options{VrrpdImage: testImage}, ns)
	eventually(t, 20*time.Second, func() error {
		err := k8s.Get(ctx, key, &rbacv1.RoleBinding{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("binding still there (err %v)", err)
	})
	// The group's own RoleBinding (to its Role) is untouched.
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g-vrrpd"}, &rbacv1.RoleBinding{}); err != nil {
		t.Fatalf("the group's RoleBinding: %v", err)
	}
}
