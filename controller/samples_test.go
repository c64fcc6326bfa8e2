package controller

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// readObjects reads every document of a multi-document YAML file, as it is
// (unstructured, so nothing is normalised by Go types on the way).
func readObjects(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// applyFile creates every object of a file.
func applyFile(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	objs := readObjects(t, path)
	for _, u := range objs {
		if err := k8s.Create(context.Background(), u); err != nil {
			t.Fatalf("%s: create %s %s/%s: %v", path, u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return objs
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

func ensureNamespace(t testing.TB, name string) {
	t.Helper()
	needAPIServer(t)
	err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestSampleManifestsApply: the original operator's sample groups and
// Services apply unchanged to this project's CRD.
func TestSampleManifestsApply(t *testing.T) {
	ensureNamespace(t, "keepalived-operator")
	ensureNamespace(t, "demo")
	// Start from nothing, so the test can run more than once per API server.
	for _, f := range []string{fixture.Operator("groups.yaml"), fixture.Operator("services.yaml")} {
		for _, u := range readObjects(t, f) {
			if err := k8s.Delete(context.Background(), u); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	groups := applyFile(t, fixture.Operator("groups.yaml"))
	services := applyFile(t, fixture.Operator("services.yaml"))
	if len(groups) != 3 || len(services) != 2 {
		t.Fatalf("applied %d group-file objects and %d services, want 3 and 2", len(groups), len(services))
	}
}

// TestSampleManifestsBehave: with the operator running as the install runs
// it (its ServiceAccount, RBAC, admission policy and flags), the original's
// samples, in the namespace the README recommends, do what they did there: the spreadvips Service gets one instance
// per external IP with router IDs past the blacklist (1, 2) (the samples say nothing of
// routerSharing, so these are shared routers, one per VIP: its two VIPs rank different
// nodes first, and no other Service of that class is in the group), its verbatim
// keyword is carried, the keepalived image is replaced by vrrpd (and the
// condition says so), and the LoadBalancer Service of a group without a
// pool waits for an address (no instance, no error).
func TestSampleManifestsBehave(t *testing.T) {
	ensureNamespace(t, "keepalived-operator")
	ensureNamespace(t, "demo")
	// TestSampleManifestsApply may have created them already.
	ctx := context.Background()
	var g v1alpha1.KeepalivedGroup
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: "keepalived-operator", Name: "keepalivedgroup-router"}, &g); apierrors.IsNotFound(err) {
		applyFile(t, fixture.Operator("groups.yaml"))
		applyFile(t, fixture.Operator("services.yaml"))
	}
	newNodes(t, "sample-lb", 3, map[string]string{"node-role.kubernetes.io/loadbalancer": ""})
	newNodes(t, "sample-worker", 2, map[string]string{"node-role.kubernetes.io/worker": ""})
	// The operator as the install runs it: its ServiceAccount, RBAC, admission policy
	// and flags, whose default --group-namespaces is the namespace the original's
	// manifests use.
	installOperator(t)
	opts := installOptions(t)
	cfg, op := impersonate(t, operatorUser)
	waitPolicyActive(t, op, "keepalived-operator", opts.VrrpdImage)
	startManagerWith(t, cfg, opts, "keepalived-operator", "demo")

	eventually(t, 20*time.Second, func() error {
		g := getGroup(t, "keepalived-operator", "keepalivedgroup-router")
		ids := g.Status.RouterIDs
		a, b := ids["demo/ingress/192.168.131.129"], ids["demo/ingress/192.168.131.130"]
		if len(ids) != 2 || min(a, b) != 3 || max(a, b) != 4 {
			return fmt.Errorf("routerIDs %v, want the two VIPs on 3 and 4", ids)
		}
		for _, in := range g.Status.Instances {
			if !strings.HasPrefix(in.Key, "@") || len(in.VIPs) != 1 || ids["demo/ingress/"+in.VIPs[0]] != in.VRID {
				return fmt.Errorf("instance %s (VRID %d) %v, want a shared router per VIP", in.Key, in.VRID, in.VIPs)
			}
		}
		if len(g.Status.Nodes) != 3 || g.Status.Nodes[0].Name != "sample-lb-0" {
			return fmt.Errorf("nodes %v, want sample-lb-0..2", g.Status.Nodes)
		}
		in := g.Status.Instances
		if len(in) != 2 || in[0].Settings.Verbatim["track_src_ip"] != "" || len(in[0].Settings.Verbatim) != 1 {
			return fmt.Errorf("instances %+v", in)
		}
		// spreadvips: the two VIPs have different masters.
		m0, m1 := masterOf(t, g, in[0]), masterOf(t, g, in[1])
		if m0 == m1 {
			return fmt.Errorf("both VIPs mastered by %s", m0)
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionImageSubstituted)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, opts.VrrpdImage) {
			return fmt.Errorf("ImageSubstituted condition %+v", c)
		}
		if ev := groupEvents(t, "keepalived-operator", "keepalivedgroup-router", v1alpha1.ReasonKeepalivedImage); len(ev) != 1 {
			return fmt.Errorf("%d KeepalivedImage events on the group, want 1", len(ev))
		}
		return nil
	})
	eventually(t, 20*time.Second, func() error {
		g := getGroup(t, "keepalived-operator", "keepalivedgroup-workers")
		if len(g.Status.Instances) != 0 || len(g.Status.Nodes) != 2 || len(g.Status.Nodes[0].Addresses) != 1 {
			return fmt.Errorf("workers status %+v", g.Status)
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v", c)
		}
		var ds appsv1.DaemonSet
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: "keepalived-operator", Name: "keepalivedgroup-workers-vrrpd"}, &ds); err != nil {
			return err
		}
		if got := ds.Spec.Template.Spec.Containers[0].Image; got != opts.VrrpdImage {
			return fmt.Errorf("DaemonSet image %q", got)
		}
		return nil
	})
}

// masterOf decodes an instance's priorities and returns its top node.
func masterOf(t testing.TB, g *v1alpha1.KeepalivedGroup, in v1alpha1.Instance) string {
	t.Helper()
	prios, err := v1alpha1.DecodePriorities(in.Priorities, len(g.Status.Nodes))
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for i, p := range prios {
		if p > prios[best] {
			best = i
		}
	}
	return g.Status.Nodes[best].Name
}
