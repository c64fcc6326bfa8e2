package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/placement"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/oldoperator"
)

func TestShadowPriorities(t *testing.T) {
	for _, tc := range []struct{ in, want []uint8 }{
		{[]uint8{254, 253, 252}, []uint8{99, 91, 83}},
		{[]uint8{252, 254, 0, 253}, []uint8{83, 99, 0, 91}},
		{[]uint8{254}, []uint8{99}},
	} {
		if got := shadowPriorities(tc.in, false); !slices.Equal(got, tc.want) {
			t.Errorf("shadowPriorities(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	// Thirteen ranks fit above 1; the rest share 1, and nothing reaches 100.
	in := make([]uint8, 20)
	for i := range in {
		in[i] = uint8(254 - i)
	}
	got := shadowPriorities(in, false)
	if got[12] != 3 || got[13] != 1 || got[19] != 1 || slices.Max(got) != 99 {
		t.Errorf("shadowPriorities(20 nodes) = %v", got)
	}
}

// A health-checked instance's shadow leaves vrrpd's check weight room to keep the
// failing nodes apart and below the passing ones, up to 49 members.
func TestShadowPrioritiesHealthChecked(t *testing.T) {
	for n := 1; n <= 60; n++ {
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("node-%d", i)
		}
		in := placement.HealthChecked(placement.Priorities("ns/web", nodes))
		got := shadowPriorities(in, true)
		if n > 49 {
			// Past the band: the plain countdown, which ties at 1 (TestShadowPriorities).
			if _, ok := placement.CheckWeight(got); ok || !slices.Equal(got, shadowPriorities(in, false)) {
				t.Fatalf("%d nodes: %v, want the plain countdown and no check weight", n, got)
			}
			continue
		}
		if slices.Max(got) != shadowTop {
			t.Fatalf("%d nodes: %v, highest not %d", n, got, shadowTop)
		}
		for i := range got {
			for j := range got {
				if i != j && (got[i] == got[j] || (in[i] > in[j]) != (got[i] > got[j])) {
					t.Fatalf("%d nodes: %v -> %v: order changed or tie", n, in, got)
				}
			}
		}
		if _, ok := placement.CheckWeight(got); !ok {
			t.Fatalf("%d nodes: shadow %v: no check weight keeps the failing nodes apart", n, got)
		}
		if n <= 7 && !slices.Equal(got, shadowPriorities(in, false)) {
			t.Fatalf("%d nodes: %v, want the plain steps", n, got)
		}
	}
}

func TestShadowInstances(t *testing.T) {
	final := v1alpha1.InstanceSettings{Version: 3, AdvertInterval: metav1.Duration{Duration: 100 * time.Millisecond}, Preempt: true, V3ChecksumAsV2: true, Unicast: true,
		Verbatim: map[string]string{"garp_master_delay": "1"}}
	ins := []v1alpha1.Instance{
		{Key: "a/dual", VRID: 7, VIPs: []string{"10.99.0.100", "fd00:99::100"}, Settings: final, Priorities: v1alpha1.EncodePriorities([]uint8{254, 253})},
		{Key: "a/v6", VRID: 8, VIPs: []string{"fd00:99::101"}, Settings: final, Priorities: v1alpha1.EncodePriorities([]uint8{253, 254})},
	}
	got := shadowInstances(ins, 2, 2)
	if len(got) != 1 {
		t.Fatalf("VRRPv2 shadow: %d instances, want 1 (the IPv6-only one is not run): %+v", len(got), got)
	}
	s := got[0].Settings
	if got[0].VRID != 7 || !slices.Equal(got[0].VIPs, []string{"10.99.0.100"}) || s.Version != 2 || s.AdvertInterval.Duration != time.Second ||
		s.Preempt || s.V3ChecksumAsV2 || !s.HandoverOnly || !s.Unicast || s.Verbatim["garp_master_delay"] != "1" {
		t.Errorf("shadow instance %+v", got[0])
	}
	if p, _ := v1alpha1.DecodePriorities(got[0].Priorities, 2); !slices.Equal(p, []uint8{99, 91}) {
		t.Errorf("shadow priorities %v, want [99 91]", p)
	}
	if ins[0].Settings.HandoverOnly || len(ins[0].VIPs) != 2 {
		t.Errorf("shadowInstances changed its input: %+v", ins[0])
	}
	if got := shadowInstances(ins, 2, 3); len(got) != 2 || got[1].Settings.Version != 3 {
		t.Errorf("VRRPv3 shadow keeps IPv6 instances: %+v", got)
	}
}

func TestGroupSettingsVersion(t *testing.T) {
	pa := &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "pw"}}
	for _, tc := range []struct {
		version int32
		pa      *v1alpha1.PasswordAuth
		want    int32
	}{{0, nil, 3}, {0, pa, 2}, {2, pa, 2}, {2, nil, 2}, {3, nil, 3}} {
		g := &v1alpha1.KeepalivedGroup{Spec: v1alpha1.KeepalivedGroupSpec{VRRPVersion: tc.version, PasswordAuth: tc.pa}}
		if got := groupSettings(g).Version; got != tc.want {
			t.Errorf("vrrpVersion %d passwordAuth %v: version %d, want %d", tc.version, tc.pa != nil, got, tc.want)
		}
	}
}

// TestMigrationFromKeepalivedOperator walks a group through the takeover
// against the API server, playing the DaemonSet controller, the garbage
// collector and the kubelets: found old objects -> shadow settings, old
// objects kept until vrrpd is ready -> deleted -> waits for the old pods ->
// settles -> the group's own settings.
//
// The group's manifest says nothing of routerSharing, so after the takeover it
// converts to shared routers by itself: nothing but the takeover's end brings the
// reconcile that starts the conversion (without its requeue the group stays per
// Service until a Service or Node changes).
func TestMigrationFromKeepalivedOperator(t *testing.T) {
	ns := testMigration(t, false, false)
	start := time.Now()
	eventually(t, 90*time.Second, func() error {
		g := getGroup(t, ns, "edge")
		vips := 0
		for _, in := range g.Status.Instances {
			if !strings.HasPrefix(in.Key, "@") {
				return fmt.Errorf("instance %s after the takeover, want shared routers only", in.Key)
			}
			vips += len(in.VIPs)
		}
		if vips != 2 || len(g.Status.RouterIDs) != 2 {
			return fmt.Errorf("%d VIPs in the instances, routerIDs %v", vips, g.Status.RouterIDs)
		}
		return nil
	})
	t.Logf("converted to shared routers %v after the takeover ended", time.Since(start).Round(time.Millisecond))
}

// TestMigrationUnderInstallPolicy: the same takeover with the operator as the
// install runs it (its ServiceAccount, ClusterRole, admission policy and
// flags) in a namespace the admin added as the migration guide says: to
// --group-namespaces and the policy's ConfigMap, with the install's takeover
// Role (list Pods, get and delete ConfigMaps) copied into it. The takeover
// needs nothing more.
func TestMigrationUnderInstallPolicy(t *testing.T) { testMigration(t, true, false) }

// TestMigrationOnOpenShiftKeepsPlatformScrape: the same takeover under the OpenShift
// install (deploy/components/openshift: --prometheus-cluster-role and the rights around
// it). keepalived-operator's "<group>-prometheus-k8s" Role and RoleBinding, which let
// OpenShift's platform Prometheus read the group's namespace, go with the old objects;
// the operator's own RoleBinding for it is there before they go, and after the takeover
// the API server's authorizer still lets prometheus-k8s get, list and watch the pods,
// Services and endpoints of the group's namespace, and nothing more.
func TestMigrationOnOpenShiftKeepsPlatformScrape(t *testing.T) { testMigration(t, true, true) }

// testMigration runs the takeover and returns the group's namespace.
func testMigration(t *testing.T, underPolicy, openshift bool) string {
	ctx := context.Background()
	ns := newNamespace(t, "migrate")
	nodes := newNodes(t, ns, 3, map[string]string{"migrate": ns})
	g := newGroup(t, ns, "edge", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = map[string]string{"migrate": ns}
		g.Spec.PasswordAuth = &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "pw"}}
	})
	objs := oldoperator.Objects(g, "global_defs {\n}\n")
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create old %T: %v", o, err)
		}
	}
	oldDS := objs[0].(*appsv1.DaemonSet)
	var pods []*corev1.Pod
	for _, n := range nodes {
		p := oldoperator.Pod(oldDS, n)
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	newService(t, ns, "web", ns+"/edge", withExternalIPs("10.99.0.100"))
	newService(t, ns, "db", ns+"/edge", withExternalIPs("10.99.0.101", "fd00:99::101"))

	dwell := time.Second
	promRole := ""
	if underPolicy {
		installOperator(t)
		if openshift {
			promRole = installOpenShift(t)["prometheus-cluster-role"]
			if promRole == "" {
				t.Fatal("the OpenShift component passes no --prometheus-cluster-role")
			}
			// keepalived-operator's Role is what lets the platform Prometheus in so far.
			eventually(t, 10*time.Second, func() error {
				if denied := canScrape(t, ns); len(denied) > 0 {
					return fmt.Errorf("before the takeover the platform Prometheus may not %v in %s", denied, ns)
				}
				return nil
			})
		}
		allowGroupNamespaces(t, ns)
		for _, u := range readObjects(t, filepath.Join("..", "deploy", "operator", "policy", "groups_namespace.yaml")) {
			if u.GetKind() == "Namespace" {
				continue
			}
			u.SetNamespace(ns)
			if err := k8s.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		opts := installOptions(t, ns)
		opts.MigrationDwell = dwell
		opts.PrometheusClusterRole = promRole
		cfg, op := impersonate(t, operatorUser)
		waitPolicyActive(t, op, ns, opts.VrrpdImage)
		startManagerWith(t, cfg, opts, ns)
	} else {
		startManagerWith(t, testConfig, Options{VrrpdImage: testImage, MigrationDwell: dwell}, ns)
	}

	// 1. Shadowing: the old pods' settings, below their priority.
	eventually(t, 10*time.Second, func() error {
		g := getGroup(t, ns, "edge")
		m := g.Status.Migration
		if m == nil || m.Phase != v1alpha1.MigrationShadowing || m.OldVersion != 2 {
			return fmt.Errorf("migration %+v, want Shadowing from VRRPv2", m)
		}
		if len(g.Status.Instances) != 2 {
			return fmt.Errorf("%d instances, want 2", len(g.Status.Instances))
		}
		return nil
	})
	g = getGroup(t, ns, "edge")
	for _, in := range g.Status.Instances {
		s := in.Settings
		if !s.HandoverOnly || s.Version != 2 || s.Preempt || s.AdvertInterval.Duration != time.Second || s.PasswordAuth == nil {
			t.Errorf("shadow instance %s settings %+v", in.Key, s)
		}
		p, err := v1alpha1.DecodePriorities(in.Priorities, 3)
		if err != nil || slices.Max(p) != 99 {
			t.Errorf("shadow instance %s priorities %v (%v), want below 100 with 99 first", in.Key, p, err)
		}
		if in.Key == ns+"/db" && !slices.Equal(in.VIPs, []string{"10.99.0.101"}) {
			t.Errorf("VRRPv2 shadow of %s carries %v, want its IPv4 VIP only", in.Key, in.VIPs)
		}
	}
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionMigrating); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonKeepalivedOperatorObjects {
		t.Errorf("Migrating condition %+v", c)
	}
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionPasswordAuthVRRPv2); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("PasswordAuthVRRPv2 condition %+v", c)
	}
	eventually(t, 5*time.Second, func() error {
		if n := len(groupEvents(t, ns, "edge", v1alpha1.ReasonKeepalivedOperatorObjects)); n != 1 {
			return fmt.Errorf("%d %s Events, want 1", n, v1alpha1.ReasonKeepalivedOperatorObjects)
		}
		return nil
	})

	if openshift {
		// The operator's binding is in place while the original's still is.
		eventually(t, 10*time.Second, func() error { return checkPrometheusBinding(ns, "edge", promRole) })
	}

	// vrrpd is not ready: the old pods stay, whatever the time.
	time.Sleep(2 * dwell)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(oldDS), &appsv1.DaemonSet{}); err != nil {
		t.Fatalf("the old DaemonSet went before vrrpd was ready: %v", err)
	}

	// 2. vrrpd's DaemonSet becomes ready (the DaemonSet controller's part): the
	// old objects go, the old pods are waited for.
	var ds appsv1.DaemonSet
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "edge-vrrpd"}, &ds); err != nil {
		t.Fatal(err)
	}
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}
	if err := k8s.Status().Update(ctx, &ds); err != nil {
		t.Fatal(err)
	}
	readyAt := time.Now()
	eventually(t, 10*time.Second, func() error {
		for _, o := range objs {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("old %T %s: %v, want gone", o, o.GetName(), err)
			}
		}
		return nil
	})
	if waited := time.Since(readyAt); waited < dwell {
		t.Errorf("old objects deleted %v after vrrpd was ready, before the dwell of %v", waited, dwell)
	}
	for _, name := range []string{"edge-vrrpd"} {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rbacv1.Role{}); err != nil {
			t.Errorf("the operator's own Role %s: %v", name, err)
		}
	}
	eventually(t, 5*time.Second, func() error {
		if m := getGroup(t, ns, "edge").Status.Migration; m == nil || m.Phase != v1alpha1.MigrationHandover {
			return fmt.Errorf("migration %+v, want Handover", m)
		}
		return nil
	})
	time.Sleep(2 * dwell)
	if m := getGroup(t, ns, "edge").Status.Migration; m == nil || m.Phase != v1alpha1.MigrationHandover {
		t.Fatalf("migration %+v with old pods left, want Handover", m)
	}

	// 3. The kubelets stop the old pods (and remove them: there is no kubelet
	// to finish a graceful deletion here): settling, then the group's own
	// settings.
	for _, p := range pods {
		if err := k8s.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, func() error {
		g := getGroup(t, ns, "edge")
		if g.Status.Migration != nil {
			return fmt.Errorf("migration %+v, want done", g.Status.Migration)
		}
		return nil
	})
	g = getGroup(t, ns, "edge")
	for _, in := range g.Status.Instances {
		s := in.Settings
		if s.HandoverOnly || s.Version != 2 || !s.Preempt {
			t.Errorf("instance %s after the takeover: %+v, want the group's own VRRPv2 settings", in.Key, s)
		}
		if p, _ := v1alpha1.DecodePriorities(in.Priorities, 3); slices.Max(p) != 254 {
			t.Errorf("instance %s priorities %v after the takeover, want the placement's", in.Key, p)
		}
	}
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionMigrating); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonMigrated {
		t.Errorf("Migrating condition %+v, want False/Migrated", c)
	}
	if openshift {
		if err := checkPrometheusBinding(ns, "edge", promRole); err != nil {
			t.Errorf("after the takeover: %v", err)
		}
		checkPlatformScrape(t, ns, newNamespace(t, "nogroup"))
	}
	for _, reason := range []string{v1alpha1.ReasonOldPodsStopping, v1alpha1.ReasonMigrated} {
		eventually(t, 5*time.Second, func() error {
			if n := len(groupEvents(t, ns, "edge", reason)); n != 1 {
				return fmt.Errorf("%d %s Events, want 1", n, reason)
			}
			return nil
		})
	}
	return ns
}

// TestNoMigrationWithoutOldObjects: a DaemonSet named like the group that
// keepalived-operator did not make (not controlled by the group) is left
// alone, and a group without old objects gets no Migrating condition.
func TestNoMigrationWithoutOldObjects(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "nomigrate")
	newNodes(t, ns, 1, map[string]string{"nomigrate": ns})
	newGroup(t, ns, "edge", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = map[string]string{"nomigrate": ns} })
	stranger := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{oldoperator.PodLabel: "edge"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{oldoperator.PodLabel: "edge"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
			},
		},
	}
	if err := k8s.Create(ctx, stranger); err != nil {
		t.Fatal(err)
	}
	newService(t, ns, "web", ns+"/edge", withExternalIPs("10.99.0.100"))
	startManagerWith(t, testConfig, Options{VrrpdImage: testImage, MigrationDwell: 100 * time.Millisecond}, ns)
	eventually(t, 10*time.Second, func() error {
		if g := getGroup(t, ns, "edge"); len(g.Status.Instances) != 1 {
			return fmt.Errorf("%d instances, want 1", len(g.Status.Instances))
		}
		return nil
	})
	g := getGroup(t, ns, "edge")
	if g.Status.Migration != nil || meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionMigrating) != nil ||
		meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionPasswordAuthVRRPv2) != nil {
		t.Errorf("migration %+v, conditions %+v", g.Status.Migration, g.Status.Conditions)
	}
	if s := g.Status.Instances[0].Settings; s.HandoverOnly || s.Version != 3 {
		t.Errorf("settings %+v, want the group's own VRRPv3", s)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(stranger), &appsv1.DaemonSet{}); err != nil {
		t.Errorf("a DaemonSet the group does not control was touched: %v", err)
	}
}
