package controller

// OpenShift's platform Prometheus (the ServiceAccount prometheus-k8s in
// openshift-monitoring) scrapes a namespace only if it may read the pods,
// Services and endpoints there. keepalived-operator gave it that with a Role
// and RoleBinding "<group>-prometheus-k8s" per group, which the takeover
// deletes with the rest of the original's objects (migration.go): without a
// replacement the platform Prometheus loses vrrpd's metrics at the handover.
//
// With Options.PrometheusClusterRole (the OpenShift install's
// --prometheus-cluster-role) the operator binds that ClusterRole, which the
// install makes (get, list and watch of pods, services and endpoints, nothing
// else), to prometheus-k8s in each group's namespace: RoleBinding
// "<group>-vrrpd-prometheus", owned by the group. A RoleBinding grants in its
// own namespace only, so Prometheus reads the group namespaces and nothing
// more. The binding exists from the group's first reconcile, before the
// handover deletes the original's, so scraping has no gap.
//
// Kubernetes lets the operator create the binding only if it holds the
// ClusterRole's rights itself, or `bind` on it. The install gives it `bind`
// on that one ClusterRole by name: holding the rights would mean reading
// every pod of the cluster (their environments included), which the operator
// needs nowhere else. The admission policy admits the binding only with that
// roleRef, prometheus-k8s as its one subject and the group namespaces.

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

const (
	// PlatformPrometheusNamespace and PlatformPrometheusServiceAccount name
	// OpenShift's platform Prometheus, the subject keepalived-operator bound.
	PlatformPrometheusNamespace      = "openshift-monitoring"
	PlatformPrometheusServiceAccount = "prometheus-k8s"
)

func prometheusBindingName(g *v1alpha1.KeepalivedGroup) string { return ownedName(g) + "-prometheus" }

// desiredPrometheusBinding binds clusterRole to the platform Prometheus in the
// group's namespace.
func desiredPrometheusBinding(g *v1alpha1.KeepalivedGroup, clusterRole string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(prometheusBindingName(g), g.Namespace).
		WithLabels(podLabels(g)).
		WithOwnerReferences(ownerRef(g)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(clusterRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).
			WithName(PlatformPrometheusServiceAccount).WithNamespace(PlatformPrometheusNamespace))
}

// applyPrometheusBinding keeps the group's platform Prometheus RoleBinding as
// Options.PrometheusClusterRole says.
func (r *GroupReconciler) applyPrometheusBinding(ctx context.Context, g *v1alpha1.KeepalivedGroup) error {
	return r.keepClusterRoleBinding(ctx, g, "PrometheusRoleBinding", prometheusBindingName(g), r.PrometheusClusterRole,
		func() *rbacv1ac.RoleBindingApplyConfiguration {
			return desiredPrometheusBinding(g, r.PrometheusClusterRole)
		})
}

// keepClusterRoleBinding keeps the group's RoleBinding name to the
// ClusterRole clusterRole: applied when clusterRole is set, deleted when not
// (the operator was reinstalled without the switch that names it). A
// RoleBinding's roleRef cannot change, so a binding to another ClusterRole is
// deleted and made again. kind keys the applied-object memo.
func (r *GroupReconciler) keepClusterRoleBinding(ctx context.Context, g *v1alpha1.KeepalivedGroup, kind, name, clusterRole string,
	desired func() *rbacv1ac.RoleBindingApplyConfiguration) error {
	key := types.NamespacedName{Namespace: g.Namespace, Name: name}
	var cur rbacv1.RoleBinding
	err := r.Client.Get(ctx, key, &cur)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case clusterRole == "" || cur.RoleRef.Kind != "ClusterRole" || cur.RoleRef.Name != clusterRole:
		if err := r.Client.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		r.mu.Lock()
		delete(r.applied, g.Namespace+"/"+g.Name+"/"+kind)
		r.mu.Unlock()
	}
	if clusterRole == "" {
		return nil
	}
	return r.applyIfChanged(ctx, g, kind, desired(), func() bool {
		return r.Client.Get(ctx, key, &rbacv1.RoleBinding{}) == nil
	})
}
