package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestDaemonSetAndRBAC checks what the operator runs for a group: vrrpd
// with only NET_ADMIN and NET_RAW, not privileged, RuntimeDefault seccomp,
// read-only root, its VIP record on a hostPath per group, the password
// Secret as a volume, its metrics on the node's address, requests and a
// memory limit, the group's selector, tolerations, priority class and
// annotations; RBAC that reaches only the group itself; all of it owned by
// the group. envtest runs no garbage collector, so cleanup on group deletion
// is proven by the controller ownerReferences the collector acts on.
// A deleted DaemonSet is put back.
func TestDaemonSetAndRBAC(t *testing.T) {
	ns := newNamespace(t, "ds")
	g := newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = map[string]string{"role": "lb"}
		g.Spec.DaemonsetPodPriorityClassName = "system-node-critical"
		g.Spec.DaemonsetPodAnnotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/keepalived": "unconfined"}
		g.Spec.PasswordAuth = &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "vrrp-pw"}}
	})
	// The admin allows the repository of the custom image the spec change
	// below names (--allowed-vrrpd-images).
	startManagerWith(t, testConfig, Options{VrrpdImage: testImage, AllowedImages: []string{"example.com/vrrpd"}}, ns)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "g-vrrpd"}

	var ds appsv1.DaemonSet
	eventually(t, 20*time.Second, func() error { return k8s.Get(ctx, key, &ds) })
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork || pod.ServiceAccountName != "g-vrrpd" || pod.PriorityClassName != "system-node-critical" {
		t.Errorf("pod spec: hostNetwork %v, serviceAccount %q, priorityClass %q", pod.HostNetwork, pod.ServiceAccountName, pod.PriorityClassName)
	}
	if !reflect.DeepEqual(pod.NodeSelector, map[string]string{"role": "lb"}) {
		t.Errorf("nodeSelector %v", pod.NodeSelector)
	}
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Operator != corev1.TolerationOpExists || pod.Tolerations[0].Key != "" {
		t.Errorf("tolerations %v, want one that tolerates everything", pod.Tolerations)
	}
	if ds.Spec.Template.Annotations["container.apparmor.security.beta.kubernetes.io/keepalived"] != "unconfined" {
		t.Errorf("pod annotations %v", ds.Spec.Template.Annotations)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	wantArgs := []string{"--group", ns + "/g", "--node", "$(NODE_NAME)", "--metrics-host", "$(HOST_IP)", "--password-file", "/etc/vrrpd/password/password"}
	if c.Image != testImage || !slices.Equal(c.Args, wantArgs) {
		t.Errorf("image %q args %v", c.Image, c.Args)
	}
	// The node's name, and its address for the metrics listener.
	if len(c.Env) != 2 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" ||
		c.Env[1].Name != "HOST_IP" || c.Env[1].ValueFrom == nil || c.Env[1].ValueFrom.FieldRef.FieldPath != "status.hostIP" {
		t.Errorf("env %v", c.Env)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9650 {
		t.Errorf("ports %v", c.Ports)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("securityContext %+v", sc)
	} else if !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities %+v", sc.Capabilities)
	}
	// The VIP record on the node, one directory per group; the password
	// Secret's key as a file the kubelet keeps up to date.
	wantMounts := []corev1.VolumeMount{
		{Name: "run", MountPath: "/run/vrrpd"},
		{Name: "password", MountPath: "/etc/vrrpd/password", ReadOnly: true},
	}
	wantVolumes := []corev1.Volume{
		{Name: "run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: "/run/vrrpd/" + ns + "/g", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
		{Name: "password", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "vrrp-pw", Items: []corev1.KeyToPath{{Key: "password", Path: "password"}},
			DefaultMode: ptr.To[int32](0o400), Optional: ptr.To(false)}}},
	}
	if !reflect.DeepEqual(c.VolumeMounts, wantMounts) || !reflect.DeepEqual(pod.Volumes, wantVolumes) {
		t.Errorf("volumes %+v mounts %+v", pod.Volumes, c.VolumeMounts)
	}
	// Both probes ask the probe socket in the state directory, never :9650,
	// which remote hosts reach.
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
	}{{"live", c.LivenessProbe}, {"ready", c.ReadinessProbe}} {
		want := []string{"/vrrpd", "probe", p.what, "--state-dir", "/run/vrrpd"}
		if p.probe == nil || p.probe.Exec == nil || !slices.Equal(p.probe.Exec.Command, want) || p.probe.HTTPGet != nil || p.probe.TimeoutSeconds < 2 {
			t.Errorf("%s probe %+v, want exec %v", p.what, p.probe, want)
		}
	}
	// Requests and a memory limit; no CPU limit.
	def := DefaultVrrpdResources()
	if !c.Resources.Requests.Cpu().Equal(*def.Requests.Cpu()) || !c.Resources.Requests.Memory().Equal(*def.Requests.Memory()) ||
		!c.Resources.Limits.Memory().Equal(*def.Limits.Memory()) || !c.Resources.Limits.Cpu().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}

	// vrrpd's Role reads the group and writes its KeepalivedMastership's status, and
	// nothing else: no Secret.
	var role rbacv1.Role
	if err := k8s.Get(ctx, key, &role); err != nil {
		t.Fatal(err)
	}
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"redhatcop.redhat.io"}, Resources: []string{"keepalivedgroups"}, ResourceNames: []string{"g"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"redhatcop.redhat.io"}, Resources: []string{"keepalivedmasterships"}, ResourceNames: []string{"g"}, Verbs: []string{"watch"}},
		{APIGroups: []string{"redhatcop.redhat.io"}, Resources: []string{"keepalivedmasterships/status"}, ResourceNames: []string{"g"}, Verbs: []string{"get", "update"}},
	}
	if !reflect.DeepEqual(role.Rules, wantRules) {
		t.Errorf("role rules %+v", role.Rules)
	}
	var rb rbacv1.RoleBinding
	if err := k8s.Get(ctx, key, &rb); err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.Name != "g-vrrpd" || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "g-vrrpd" || rb.Subjects[0].Namespace != ns {
		t.Errorf("rolebinding %+v", rb)
	}
	var sa corev1.ServiceAccount
	if err := k8s.Get(ctx, key, &sa); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{&ds, &role, &rb, &sa} {
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != g.UID || refs[0].Kind != "KeepalivedGroup" || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%T ownerReferences %+v", o, refs)
		}
	}

	// A spec change reaches the DaemonSet. The operator may write the group's status
	// between our read and our update: read again on a conflict.
	eventually(t, 10*time.Second, func() error {
		g = getGroup(t, ns, "g")
		g.Spec.NodeSelector = map[string]string{"role": "edge"}
		g.Spec.Image = "example.com/vrrpd:custom"
		g.Spec.PasswordAuth = nil
		return k8s.Update(ctx, g)
	})
	eventually(t, 20*time.Second, func() error {
		if err := k8s.Get(ctx, key, &ds); err != nil {
			return err
		}
		p := ds.Spec.Template.Spec
		if p.NodeSelector["role"] != "edge" || p.Containers[0].Image != "example.com/vrrpd:custom" {
			return fmt.Errorf("DaemonSet not updated: %v %s", p.NodeSelector, p.Containers[0].Image)
		}
		// Without passwordAuth, no Secret volume and no --password-file.
		if len(p.Volumes) != 1 || len(p.Containers[0].VolumeMounts) != 1 || slices.Contains(p.Containers[0].Args, "--password-file") {
			return fmt.Errorf("password volume left: %v %v", p.Volumes, p.Containers[0].Args)
		}
		return nil
	})

	// Drift: a deleted DaemonSet comes back.
	if err := k8s.Delete(ctx, &ds); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		var again appsv1.DaemonSet
		if err := k8s.Get(ctx, key, &again); err != nil {
			return err
		}
		if again.UID == ds.UID {
			return fmt.Errorf("old DaemonSet still there")
		}
		return nil
	})
}

// TestPodMonitorOnlyWhenServed: no PodMonitor kind, no PodMonitor and no
// error; once the CRD is installed, the group gets one labelled
// metrics: keepalived and the admin's PodMonitorLabels, selecting its vrrpd
// pods' metrics port.
func TestPodMonitorOnlyWhenServed(t *testing.T) {
	ns := newNamespace(t, "pm")
	newGroup(t, ns, "g", nil)
	// Ask for the kind on every reconcile: the CRD comes later in this test.
	// With the admin's labels a kube-prometheus-stack selects (--podmonitor-labels).
	startManagerWith(t, testConfig, Options{VrrpdImage: testImage, KindRecheck: -1,
		PodMonitorLabels: map[string]string{"release": "kube-prometheus-stack"}}, ns)
	waitReadyNotDegraded(t, ns, "g")
	crdKey := types.NamespacedName{Name: "podmonitors.monitoring.coreos.com"}
	if err := k8s.Get(context.Background(), crdKey, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Fatalf("PodMonitor CRD unexpectedly present (%v): this test installs and removes it itself", err)
	}

	// Installed for this test and removed after, as other tests (and -count=N reruns) expect.
	installPodMonitorCRD(t)
	// Any change to the group reconciles it; a label is the least intrusive.
	g := getGroup(t, ns, "g")
	g.Labels = map[string]string{"touched": "yes"}
	if err := k8s.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		pm := &unstructured.Unstructured{}
		pm.SetGroupVersionKind(podMonitorGVK)
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "g-vrrpd"}, pm); err != nil {
			return err
		}
		if l := pm.GetLabels(); l["metrics"] != "keepalived" || l["release"] != "kube-prometheus-stack" || l[labelGroup] != "g" {
			return fmt.Errorf("labels %v", pm.GetLabels())
		}
		port, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
		if len(port) != 1 || port[0].(map[string]any)["port"] != "metrics" {
			return fmt.Errorf("podMetricsEndpoints %v", port)
		}
		// The group and node labels the dashboard and alerts use.
		if got := fmt.Sprint(port[0].(map[string]any)["relabelings"]); got != "[map[sourceLabels:[__meta_kubernetes_pod_label_redhatcop_redhat_io_keepalivedgroup] targetLabel:keepalivedgroup] map[sourceLabels:[__meta_kubernetes_pod_node_name] targetLabel:node]]" {
			return fmt.Errorf("relabelings %s", got)
		}
		if refs := pm.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != g.UID {
			return fmt.Errorf("ownerReferences %v", refs)
		}
		return nil
	})
}

// TestPodSecurityEvent: a group whose namespace enforces baseline (or
// restricted) gets one Warning Event naming the label that admits vrrpd's
// pods; it is not repeated on later reconciles, and a privileged namespace
// gets none.
func TestPodSecurityEvent(t *testing.T) {
	ctx := context.Background()
	labelled := func(prefix, level string) string {
		ns := newNamespace(t, prefix)
		var n corev1.Namespace
		if err := k8s.Get(ctx, types.NamespacedName{Name: ns}, &n); err != nil {
			t.Fatal(err)
		}
		n.Labels["pod-security.kubernetes.io/enforce"] = level
		if err := k8s.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	baseline, privileged := labelled("psa-base", "baseline"), labelled("psa-priv", "privileged")
	newGroup(t, baseline, "g", nil)
	newGroup(t, privileged, "g", nil)
	m := startManager(t, baseline, privileged)

	eventually(t, 20*time.Second, func() error {
		evs := groupEvents(t, baseline, "g", ReasonPodSecurity)
		if len(evs) != 1 {
			return fmt.Errorf("%d %s events", len(evs), ReasonPodSecurity)
		}
		if e := evs[0]; e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "pod-security.kubernetes.io/enforce=privileged") {
			return fmt.Errorf("event %s: %s", e.Type, e.Note)
		}
		return nil
	})
	// Later reconciles of both groups: still one Event, never repeated.
	for _, ns := range []string{baseline, privileged} {
		key := types.NamespacedName{Namespace: ns, Name: "g"}
		before := m.groups.Reconciles(key)
		// The operator may write the group's status between our read and our update
		// (two group workers): read again on a conflict.
		eventually(t, 10*time.Second, func() error {
			g := getGroup(t, ns, "g")
			g.Labels = map[string]string{"touched": "yes"}
			return k8s.Update(ctx, g)
		})
		eventually(t, 20*time.Second, func() error {
			if m.groups.Reconciles(key) <= before {
				return fmt.Errorf("no reconcile after the change")
			}
			return nil
		})
	}
	if evs := groupEvents(t, baseline, "g", ReasonPodSecurity); len(evs) != 1 || evs[0].Series != nil {
		t.Errorf("baseline: events %+v, want one, not repeated", evs)
	}
	if evs := groupEvents(t, privileged, "g", ReasonPodSecurity); len(evs) != 0 {
		t.Errorf("privileged: events %+v, want none", evs)
	}
}
