package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// setPolicyPodMonitorNamespace sets the policy's podMonitorNamespace, as an admin who
// passes --podmonitor-namespace does, and puts it back after the test.
func setPolicyPodMonitorNamespace(t *testing.T, ns string) {
	t.Helper()
	set := func(v string) error {
		var cm corev1.ConfigMap
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: installNamespace, Name: policyConfigMap}, &cm); err != nil {
			return err
		}
		cm.Data["podMonitorNamespace"] = v
		return k8s.Update(context.Background(), &cm)
	}
	eventually(t, 10*time.Second, func() error { return set(ns) })
	t.Cleanup(func() { eventually(t, 10*time.Second, func() error { return set("") }) })
}

// sharedShaped is a PodMonitor as the operator writes one in the shared namespace mon for
// the group namespace groupNS (placePodMonitor's shape).
func sharedShaped(mon, name string, selects ...string) *unstructured.Unstructured {
	pm := newPodMonitor(mon, name, map[string]string{"metrics": "keepalived"}, nil)
	if len(selects) > 0 {
		_ = unstructured.SetNestedStringSlice(pm.Object, selects, "spec", "namespaceSelector", "matchNames")
	}
	return pm
}

// TestRedTeamPodMonitorNamespace: with the policy's podMonitorNamespace set (the
// operator's --podmonitor-namespace), the operator, as its ServiceAccount, writes its
// <namespace>.<group>-vrrpd PodMonitor there and deletes it with the group; but there it
// may write no PodMonitor of another name, none selecting a namespace other than the
// one its name gives or one that holds no groups, none selecting every namespace; nor
// that shape in a third namespace, nor a PodMonitor in a group namespace that selects
// another namespace; and it may delete none there that lacks its annotation.
func TestRedTeamPodMonitorNamespace(t *testing.T) {
	installOperator(t)
	installPodMonitorCRD(t)
	ctx := context.Background()
	groupNS, mon, third := newNamespace(t, "rt-pmg"), newNamespace(t, "rt-mon"), newNamespace(t, "rt-pm3")
	allowGroupNamespaces(t, groupNS)
	setPolicyPodMonitorNamespace(t, mon)
	cfg, op := impersonate(t, operatorUser)

	good := sharedShaped(mon, groupNS+".x-vrrpd", groupNS)
	eventually(t, 30*time.Second, func() error {
		if err := op.Create(ctx, good.DeepCopy(), client.DryRunAll); err != nil {
			return fmt.Errorf("the operator's shape in %s: %v", mon, err)
		}
		if err := op.Create(ctx, sharedShaped(mon, "other", groupNS), client.DryRunAll); !apierrors.IsForbidden(err) {
			return fmt.Errorf("policy not enforced yet: another name in %s: %v", mon, err)
		}
		return nil
	})
	anyNS := sharedShaped(mon, groupNS+".x-vrrpd", groupNS)
	_ = unstructured.SetNestedField(anyNS.Object, true, "spec", "namespaceSelector", "any")
	for what, pm := range map[string]*unstructured.Unstructured{
		"another name in the PodMonitor namespace":         sharedShaped(mon, "other", groupNS),
		"<x>-vrrpd without a namespace in its name there":  sharedShaped(mon, "other-vrrpd", groupNS),
		"the shape without a namespaceSelector":            sharedShaped(mon, groupNS+".x-vrrpd"),
		"the shape selecting kube-system":                  sharedShaped(mon, groupNS+".x-vrrpd", "kube-system"),
		"the shape selecting two namespaces":               sharedShaped(mon, groupNS+".x-vrrpd", groupNS, "kube-system"),
		"the shape for kube-system (holds no groups)":      sharedShaped(mon, "kube-system.x-vrrpd", "kube-system"),
		"the shape selecting every namespace":              anyNS,
		"the shape in a third namespace":                   sharedShaped(third, groupNS+".x-vrrpd", groupNS),
		"a group namespace's PodMonitor selecting another": sharedShaped(groupNS, "x-vrrpd", "kube-system"),
		"the shape in kube-system":                         sharedShaped("kube-system", groupNS+".x-vrrpd", groupNS),
	} {
		refused(t, "create "+what+" ("+pm.GetNamespace()+"/"+pm.GetName()+")", op.Create(ctx, pm, client.DryRunAll))
	}
	// Deletes there: only of what carries the operator's annotation.
	for _, name := range []string{"admins", groupNS + ".admins-vrrpd"} {
		pm := sharedShaped(mon, name, groupNS)
		if err := k8s.Create(ctx, pm); err != nil {
			t.Fatal(err)
		}
		refused(t, "delete "+mon+"/"+name+" (no keepalivedgroup-ref annotation)", op.Delete(ctx, pm))
	}

	// The operator itself, as its ServiceAccount with the install's flags and
	// --podmonitor-namespace: its PodMonitor is admitted, and so is its deletion.
	opts := installOptions(t, groupNS)
	opts.PodMonitorNamespace = mon
	opts.KindRecheck = -1
	startManagerWith(t, cfg, opts, groupNS)
	newGroup(t, groupNS, "g", nil)
	name := groupNS + ".g-vrrpd"
	eventually(t, 30*time.Second, func() error {
		_, err := getPodMonitor(mon, name)
		return err
	})
	if err := k8s.Delete(ctx, getGroup(t, groupNS, "g")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := getPodMonitor(mon, name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("PodMonitor %s/%s still there after its group's deletion (%v)", mon, name, err)
		}
		return nil
	})
}
