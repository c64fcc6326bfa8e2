package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// Each group has a KeepalivedMastership of its name (api/v1alpha1): which node is master
// of each instance now, and since when. The operator only creates it, owned by the group
// so that it goes with the group, and never writes its status: the group's vrrpd do, each
// when it becomes master (internal/groupsource, Mastership). vrrpd's Role lets it get and
// update the status of this one object (desiredRole), not create it: RBAC cannot limit a
// create to a name, and a vrrpd that could create objects could create them for other
// groups.

var mastershipGVK = v1alpha1.GroupVersion.WithKind("KeepalivedMastership")

// desiredMastership is g's KeepalivedMastership without status.
func desiredMastership(g *v1alpha1.KeepalivedGroup) *unstructured.Unstructured {
	labels := map[string]any{}
	for k, v := range podLabels(g) {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "KeepalivedMastership",
		"metadata": map[string]any{
			"name":            g.Name,
			"namespace":       g.Namespace,
			"labels":          labels,
			"ownerReferences": []any{groupOwnerRef(g)},
		},
	}}
}

// applyMastership creates g's KeepalivedMastership, or brings its metadata back. A
// cluster without its CRD (a Helm upgrade, which does not install new CRDs) gets none,
// and the group is not degraded for it: vrrpd then warns that it cannot publish who holds
// what, and serves the VIPs all the same. The answer "not served" stands for KindRecheck,
// as PodMonitor's (served): the CRD installed later is used at the next reconcile after.
func (r *GroupReconciler) applyMastership(ctx context.Context, g *v1alpha1.KeepalivedGroup) error {
	if served, err := r.served(mastershipGVK); err != nil {
		return err
	} else if !served {
		log.FromContext(ctx).V(1).Info("KeepalivedMastership is not served; none created")
		return nil
	}
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	return r.applyIfChanged(ctx, g, "KeepalivedMastership", client.ApplyConfigurationFromUnstructured(desiredMastership(g)), func() bool {
		return r.Client.Get(ctx, key, &v1alpha1.KeepalivedMastership{}) == nil
	})
}

// groupOwnerRef is g as the controlling owner of an object written as unstructured (the
// PodMonitor, the KeepalivedMastership), so the garbage collector deletes it with g.
func groupOwnerRef(g *v1alpha1.KeepalivedGroup) map[string]any {
	return map[string]any{
		"apiVersion":         v1alpha1.GroupVersion.String(),
		"kind":               "KeepalivedGroup",
		"name":               g.Name,
		"uid":                string(g.UID),
		"controller":         true,
		"blockOwnerDeletion": true,
	}
}
