package install

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// vrrpdPod has the security-relevant shape of the pods of a group's DaemonSet (see
// controller/daemonset.go): host network, uid 0, every capability dropped but NET_ADMIN and
// NET_RAW, no privilege, the runtime's seccomp profile, a hostPath for the VIP record and
// the password Secret as a volume. Baseline forbids host namespaces (hostNetwork), host
// ports (hostNetwork makes 9650 one), hostPath volumes and adding capabilities outside its
// short list (neither NET_ADMIN nor NET_RAW is in it): only "privileged" admits the pod.
func vrrpdPod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "vrrpd", Namespace: ns},
		Spec: corev1.PodSpec{
			HostNetwork: true,
			Containers: []corev1.Container{{
				Name:  "keepalived",
				Image: "ghcr.io/vrrp-operator/vrrpd:latest",
				Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9650}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "run", MountPath: "/run/vrrpd"},
					{Name: "password", MountPath: "/etc/vrrpd/password", ReadOnly: true},
				},
				SecurityContext: &corev1.SecurityContext{
					Privileged:               ptr.To(false),
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					Capabilities: &corev1.Capabilities{
						Drop: []corev1.Capability{"ALL"},
						Add:  []corev1.Capability{"NET_ADMIN", "NET_RAW"},
					},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: "/run/vrrpd/" + ns + "/lan", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
				{Name: "password", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "vrrp-password", Items: []corev1.KeyToPath{{Key: "password", Path: "password"}}}}},
			},
		},
	}
}

// TestPodSecurityLabels: the API server's Pod Security admission, with the namespaces as
// the install and the samples label them, admits the operator's pods in vrrp-operator,
// refuses vrrpd's there, and admits vrrpd's in the groups' namespace.
func TestPodSecurityLabels(t *testing.T) {
	testenv.Require(t, env)
	install := decode(t, kustomize(t, "deploy/operator"))
	samples := decode(t, readFile(t, "deploy/operator/samples/pool.yaml"))
	for _, u := range append(install, samples...) {
		if u.GetKind() == "Namespace" {
			ensureNamespace(t, u.GetName(), u.GetLabels())
		}
	}
	groupNS := find(t, samples, "KeepalivedGroup", "lan").GetNamespace()

	// The operator's pod, as its Deployment's template makes it.
	deploy := find(t, install, "Deployment", "vrrp-operator")
	var tmpl corev1.PodTemplateSpec
	raw := field(t, deploy, "spec", "template").(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	op := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: deploy.GetNamespace(), Labels: tmpl.Labels}, Spec: tmpl.Spec}
	// The ServiceAccount exists only after a real install; admission wants it.
	op.Spec.ServiceAccountName = ""

	ctx := context.Background()
	create := func(p *corev1.Pod) error { return env.Client.Create(ctx, p.DeepCopy(), client.DryRunAll) }
	if err := create(op); err != nil {
		t.Errorf("the operator's pod in %s: %v", op.Namespace, err)
	}
	if err := create(vrrpdPod(deploy.GetNamespace())); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("vrrpd's pod in the operator's namespace: %v, want refused by PodSecurity (restricted)", err)
	}
	if err := create(vrrpdPod(groupNS)); err != nil {
		t.Errorf("vrrpd's pod in the groups' namespace %s: %v", groupNS, err)
	}
	// baseline is not enough: the groups' namespace needs privileged.
	ensureNamespace(t, "vrrpd-baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	if err := create(vrrpdPod("vrrpd-baseline")); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("vrrpd's pod in a baseline namespace: %v, want refused by PodSecurity", err)
	}
}
