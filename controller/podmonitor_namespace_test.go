package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// installPodMonitorCRD installs the PodMonitor CRD for one test and removes it after,
// as TestPodMonitorOnlyWhenServed expects the API server without it.
func installPodMonitorCRD(t *testing.T) {
	t.Helper()
	crdKey := types.NamespacedName{Name: "podmonitors.monitoring.coreos.com"}
	crds, err := envtest.InstallCRDs(testConfig, envtest.CRDInstallOptions{Paths: []string{filepath.Join("testdata", "podmonitor-crd.yaml")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(testConfig, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Error(err)
		}
		eventually(t, 30*time.Second, func() error {
			if err := k8s.Get(context.Background(), crdKey, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("PodMonitor CRD still there: %v", err)
			}
			return nil
		})
	})
}

func newPodMonitor(ns, name string, labels, annotations map[string]string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(podMonitorGVK)
	pm.SetNamespace(ns)
	pm.SetName(name)
	pm.SetLabels(labels)
	pm.SetAnnotations(annotations)
	pm.SetOwnerReferences(owners)
	_ = unstructured.SetNestedSlice(pm.Object, []any{map[string]any{"port": "metrics"}}, "spec", "podMetricsEndpoints")
	_ = unstructured.SetNestedStringMap(pm.Object, map[string]string{"x": "y"}, "spec", "selector", "matchLabels")
	return pm
}

func getPodMonitor(ns, name string) (*unstructured.Unstructured, error) {
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(podMonitorGVK)
	return pm, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pm)
}

// TestPodMonitorNamespace: with --podmonitor-namespace, a group's PodMonitor is written
// there as <namespace>.<group>-vrrpd, selecting the group's namespace, labelled and
// annotated with the group; the group's old one in its own namespace is deleted, a
// stale one of a group that is gone is swept at start (an admin's PodMonitor without the
// operator's annotation stays), and deleting the group deletes its PodMonitor.
func TestPodMonitorNamespace(t *testing.T) {
	ctx := context.Background()
	installPodMonitorCRD(t)
	mon, ns, other := newNamespace(t, "mon"), newNamespace(t, "pmns"), newNamespace(t, "pmgone")
	g := newGroup(t, ns, "g", nil)

	// Before the operator starts: the group's PodMonitor where the flag did not put it
	// (an earlier run without it), one in the monitoring namespace of a group deleted
	// while the operator was down, and the admin's own.
	old := newPodMonitor(ns, "g-vrrpd", map[string]string{"metrics": "keepalived"}, nil, metav1.OwnerReference{
		APIVersion: "redhatcop.redhat.io/v1alpha1", Kind: "KeepalivedGroup", Name: "g", UID: g.UID, Controller: ptr.To(true)})
	stale := newPodMonitor(mon, other+".gone-vrrpd",
		map[string]string{"metrics": "keepalived", labelGroupNamespace: other, labelGroup: "gone"},
		map[string]string{annotationPodMonitorGroup: other + "/gone"})
	admins := newPodMonitor(mon, "admins", map[string]string{"metrics": "keepalived", labelGroupNamespace: other}, nil)
	for _, pm := range []*unstructured.Unstructured{old, stale, admins} {
		if err := k8s.Create(ctx, pm); err != nil {
			t.Fatal(err)
		}
	}

	startManagerWith(t, testConfig, Options{VrrpdImage: testImage, KindRecheck: -1,
		PodMonitorNamespace: mon, PodMonitorLabels: map[string]string{"release": "prom"}}, ns)

	name := ns + ".g-vrrpd"
	eventually(t, 30*time.Second, func() error {
		pm, err := getPodMonitor(mon, name)
		if err != nil {
			return err
		}
		if l := pm.GetLabels(); l["metrics"] != "keepalived" || l["release"] != "prom" || l[labelGroup] != "g" || l[labelGroupNamespace] != ns {
			return fmt.Errorf("labels %v", l)
		}
		if a := pm.GetAnnotations()[annotationPodMonitorGroup]; a != ns+"/g" {
			return fmt.Errorf("annotation %q", a)
		}
		if got, _, _ := unstructured.NestedStringSlice(pm.Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(got, []string{ns}) {
			return fmt.Errorf("namespaceSelector.matchNames %v", got)
		}
		if sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels"); sel[labelGroup] != "g" {
			return fmt.Errorf("selector %v", sel)
		}
		if refs := pm.GetOwnerReferences(); len(refs) != 0 {
			return fmt.Errorf("ownerReferences %v across namespaces", refs)
		}
		for _, gone := range [][2]string{{ns, "g-vrrpd"}, {mon, other + ".gone-vrrpd"}} {
			if _, err := getPodMonitor(gone[0], gone[1]); !apierrors.IsNotFound(err) {
				return fmt.Errorf("PodMonitor %s/%s still there (%v)", gone[0], gone[1], err)
			}
		}
		return nil
	})
	if _, err := getPodMonitor(mon, "admins"); err != nil {
		t.Errorf("the admin's PodMonitor: %v", err)
	}

	if err := k8s.Delete(ctx, getGroup(t, ns, "g")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := getPodMonitor(mon, name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("PodMonitor %s/%s still there after its group's deletion (%v)", mon, name, err)
		}
		return nil
	})
}

// TestSharedPodMonitorName: <namespace>.<group>-vrrpd, distinct where a dash would
// collide, and within 253 characters (a hash) for the longest names.
func TestSharedPodMonitorName(t *testing.T) {
	a := sharedPodMonitorName(types.NamespacedName{Namespace: "a-b", Name: "c"})
	b := sharedPodMonitorName(types.NamespacedName{Namespace: "a", Name: "b-c"})
	if a != "a-b.c-vrrpd" || b != "a.b-c-vrrpd" {
		t.Errorf("names %q, %q", a, b)
	}
	ns := strings.Repeat("n", 63)
	long1 := sharedPodMonitorName(types.NamespacedName{Namespace: ns, Name: strings.Repeat("g", 253)})
	long2 := sharedPodMonitorName(types.NamespacedName{Namespace: ns, Name: strings.Repeat("g", 252) + "h"})
	if len(long1) > 253 || long1 == long2 || !strings.HasPrefix(long1, ns+".ggg") || !strings.HasSuffix(long1, "-vrrpd") {
		t.Errorf("long names %q (%d), %q", long1, len(long1), long2)
	}
}
