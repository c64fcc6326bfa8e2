package controller

// The PodMonitor of a group lives in the group's namespace, owned by the group, unless
// Options.PodMonitorNamespace (--podmonitor-namespace) names a namespace for all of them:
// a Prometheus that watches only its own namespace for PodMonitors. An owner reference
// cannot cross namespaces, so there the operator deletes a group's PodMonitor itself: on
// the reconcile of a group that is gone, and at start (sweepPodMonitors) for groups that
// went while it was down.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// annotationPodMonitorGroup names, as <namespace>/<name>, the group a PodMonitor in the
// shared namespace scrapes: the labels may carry hashed values (labelValue), this is
// exact.
const annotationPodMonitorGroup = "redhatcop.redhat.io/keepalivedgroup-ref"

// sharedPodMonitorName names a group's PodMonitor in the shared namespace:
// <namespace>.<group>-vrrpd. The dot cannot occur in a namespace, so two groups never
// share a name (with a dash, a/b-c and a-b/c would). A name longer than an object name may
// be (253) keeps a prefix of the group's name and gets a hash of namespace and name.
func sharedPodMonitorName(group types.NamespacedName) string {
	name := group.Namespace + "." + group.Name + "-vrrpd"
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(group.String()))
	keep := 253 - len(group.Namespace) - len(".-12345678-vrrpd")
	prefix := group.Name[:keep]
	for len(prefix) > 0 && (prefix[len(prefix)-1] == '-' || prefix[len(prefix)-1] == '.') {
		prefix = prefix[:len(prefix)-1]
	}
	return group.Namespace + "." + prefix + "-" + hex.EncodeToString(sum[:4]) + "-vrrpd"
}

// podMonitorKey is where the PodMonitor of group is written.
func (o Options) podMonitorKey(group types.NamespacedName) types.NamespacedName {
	if o.PodMonitorNamespace == "" {
		return types.NamespacedName{Namespace: group.Namespace, Name: group.Name + "-vrrpd"}
	}
	return types.NamespacedName{Namespace: o.PodMonitorNamespace, Name: sharedPodMonitorName(group)}
}

// placePodMonitor moves pm (desiredPodMonitor's, in the group's namespace) to the shared
// namespace: another name, no owner reference, labels and annotation naming the group,
// and a namespaceSelector for the group's namespace (a PodMonitor selects pods of its
// own namespace by default).
func placePodMonitor(pm *unstructured.Unstructured, g *v1alpha1.KeepalivedGroup, ns string) {
	if ns == "" {
		return
	}
	group := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	pm.SetNamespace(ns)
	pm.SetName(sharedPodMonitorName(group))
	pm.SetOwnerReferences(nil)
	labels := pm.GetLabels()
	labels[labelGroupNamespace] = labelValue(g.Namespace)
	pm.SetLabels(labels)
	pm.SetAnnotations(map[string]string{annotationPodMonitorGroup: group.String()})
	_ = unstructured.SetNestedStringSlice(pm.Object, []string{g.Namespace}, "spec", "namespaceSelector", "matchNames")
}

// deletePodMonitor deletes the PodMonitor at key, if there; gone is done.
func (r *GroupReconciler) deletePodMonitor(ctx context.Context, key types.NamespacedName) error {
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(podMonitorGVK)
	pm.SetNamespace(key.Namespace)
	pm.SetName(key.Name)
	if err := r.Client.Delete(ctx, pm); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// dropOldPodMonitor deletes the group's PodMonitor in its own namespace once the shared
// namespace holds it (the flag was set since). The way back, from the shared namespace,
// is sweepPodMonitors' at start: the flag changes only with a restart.
func (r *GroupReconciler) dropOldPodMonitor(ctx context.Context, g *v1alpha1.KeepalivedGroup) error {
	if r.PodMonitorNamespace == "" {
		return nil
	}
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(podMonitorGVK)
	key := types.NamespacedName{Namespace: g.Namespace, Name: ownedName(g)}
	if err := r.Reader.Get(ctx, key, pm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	// Only the one this group controls: an admin's own PodMonitor of that name stays.
	for _, ref := range pm.GetOwnerReferences() {
		if ref.UID == g.UID && ref.Controller != nil && *ref.Controller {
			return r.deletePodMonitor(ctx, key)
		}
	}
	return nil
}

// groupGone is the reconcile of a group that is gone or going: its PodMonitor in the
// shared namespace has no owner reference, so the operator deletes it.
func (r *GroupReconciler) groupGone(ctx context.Context, group types.NamespacedName) error {
	if r.PodMonitorNamespace == "" {
		return nil
	}
	if served, err := r.podMonitorServed(); !served {
		return err
	}
	return r.deletePodMonitor(ctx, r.podMonitorKey(group))
}

// sweepPodMonitors runs once at start (as leader): it deletes the PodMonitors the
// operator wrote in a shared namespace (those labelled with a group's namespace) whose
// group no longer exists, or that are not where the flag now puts them (it moved, or
// was unset). A delete the admission policy refuses (a namespace it no longer admits) is
// logged: the README says how to delete those by hand.
func (r *GroupReconciler) sweepPodMonitors(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("podmonitor-sweep")
	if served, err := r.podMonitorServed(); !served {
		return err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podMonitorGVK.GroupVersion().WithKind("PodMonitorList"))
	sel := client.HasLabels{labelGroupNamespace}
	if err := r.Reader.List(ctx, list, sel, client.MatchingLabels{"metrics": "keepalived"}); err != nil {
		return fmt.Errorf("listing PodMonitors: %w", err)
	}
	var errs []error
	for i := range list.Items {
		pm := &list.Items[i]
		key := types.NamespacedName{Namespace: pm.GetNamespace(), Name: pm.GetName()}
		ref := pm.GetAnnotations()[annotationPodMonitorGroup]
		ns, name, ok := strings.Cut(ref, "/")
		if !ok || ns == "" || name == "" {
			continue // not one of ours: without the annotation, nothing says whose it is
		}
		group := types.NamespacedName{Namespace: ns, Name: name}
		stale := r.PodMonitorNamespace == "" || r.podMonitorKey(group) != key
		if !stale {
			err := r.Reader.Get(ctx, group, &v1alpha1.KeepalivedGroup{})
			switch {
			case apierrors.IsNotFound(err):
				stale = true
			case err != nil:
				errs = append(errs, err)
				continue
			}
		}
		if !stale {
			continue
		}
		if err := r.deletePodMonitor(ctx, key); err != nil {
			log.Error(err, "deleting a stale PodMonitor", "podMonitor", key, "group", group)
			continue
		}
		log.Info("deleted a stale PodMonitor", "podMonitor", key, "group", group)
	}
	return errors.Join(errs...)
}
