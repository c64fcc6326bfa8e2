package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestEventsRBACAcrossNamespaces: a group's vrrpd may create Events and get its own
// Services in exactly the namespaces that hold Services of the group (the group's own and
// another one), nothing more; when the other namespace's Service leaves the group, the
// right there goes too.
func TestEventsRBACAcrossNamespaces(t *testing.T) {
	ns := newNamespace(t, "evrbac")
	ns2 := newNamespace(t, "evrbac-svc")
	ns3 := newNamespace(t, "evrbac-none")
	sel := map[string]string{"evrbac-test": ns}
	newNodes(t, ns, 1, sel)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = sel })
	newService(t, ns, "local", ns+"/g", withExternalIPs("10.99.0.91"))
	remote := newService(t, ns2, "remote", ns+"/g", withExternalIPs("10.99.0.92"))
	newService(t, ns2, "bystander", "", nil)
	startManager(t, ns, ns2, ns3)

	sa := "system:serviceaccount:" + ns + ":g-vrrpd"
	can := func(namespace, group, resource, verb, name string) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Group: group, Resource: resource, Verb: verb, Name: name,
			},
		}}
		if err := k8s.Create(context.Background(), sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	}
	type check struct {
		ns, group, resource, verb, name string
		want                            bool
	}
	expect := func(checks []check) error {
		for _, c := range checks {
			got, err := can(c.ns, c.group, c.resource, c.verb, c.name)
			if err != nil {
				return err
			}
			if got != c.want {
				return fmt.Errorf("%s %s %s/%s %q in %s: allowed %v, want %v", sa, c.verb, c.group, c.resource, c.name, c.ns, got, c.want)
			}
		}
		return nil
	}
	eventually(t, 20*time.Second, func() error {
		return expect([]check{
			{ns, "events.k8s.io", "events", "create", "", true},
			{ns2, "events.k8s.io", "events", "create", "", true},
			{ns, "", "services", "get", "local", true},
			{ns2, "", "services", "get", "remote", true},
			// Nothing else.
			{ns3, "events.k8s.io", "events", "create", "", false},
			{ns2, "", "services", "get", "bystander", false},
			{ns2, "", "services", "list", "", false},
			{ns2, "events.k8s.io", "events", "patch", "x", false},
			{ns2, "", "events", "create", "", false},
		})
	})
	// The pair in the group's namespace is owned by the group; the other cannot be.
	var local, other rbacv1.Role
	name := ns + ".g-vrrpd-events"
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &local); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns2, Name: name}, &other); err != nil {
		t.Fatal(err)
	}
	if len(local.OwnerReferences) != 1 || len(other.OwnerReferences) != 0 {
		t.Errorf("owner references: %v in the group's namespace, %v in the other", local.OwnerReferences, other.OwnerReferences)
	}

	// The remote Service leaves the group: its namespace's Role and RoleBinding go.
	delete(remote.Annotations, v1alpha1.AnnotationGroup)
	if err := k8s.Update(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns2, Name: name}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("RoleBinding in %s: %v", ns2, err)
		}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns2, Name: name}, &rbacv1.Role{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Role in %s: %v", ns2, err)
		}
		return expect([]check{
			{ns2, "events.k8s.io", "events", "create", "", false},
			{ns, "events.k8s.io", "events", "create", "", true},
		})
	})
}
