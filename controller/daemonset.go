package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

const (
	// containerName is "keepalived", not "vrrpd": pod annotations written for
	// the original operator name its container, for example
	// container.apparmor.security.beta.kubernetes.io/keepalived, and the API
	// server rejects annotations naming a container that does not exist.
	containerName = "keepalived"
	// metricsPort is vrrpd's Prometheus and health endpoint.
	metricsPort = 9650
	// runDir is vrrpd's only writable path (its record of VIPs it added).
	runDir = "/run/vrrpd"

	labelName  = "app.kubernetes.io/name"
	labelGroup = "redhatcop.redhat.io/keepalivedgroup"
	labelPart  = "app.kubernetes.io/component"
)

// ownedName names the DaemonSet, ServiceAccount, Role, RoleBinding and
// PodMonitor of a group.
func ownedName(g *v1alpha1.KeepalivedGroup) string { return g.Name + "-vrrpd" }

// labelValue fits a group name into a label value (63 characters): long
// names keep a prefix and get a hash suffix, so distinct groups keep
// distinct selectors.
func labelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return strings.TrimRight(s[:54], "-.") + "-" + hex.EncodeToString(sum[:4])
}

// podLabels select a group's vrrpd pods.
func podLabels(g *v1alpha1.KeepalivedGroup) map[string]string {
	return map[string]string{labelName: "vrrpd", labelGroup: labelValue(g.Name)}
}

func ownerRef(g *v1alpha1.KeepalivedGroup) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("KeepalivedGroup").
		WithName(g.Name).
		WithUID(g.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// desiredDaemonSet runs vrrpd on every member node: host network (VRRP and
// the VIPs live on the node's interfaces), NET_ADMIN (addresses) and NET_RAW
// (VRRP and ARP sockets) and nothing else, a read-only root filesystem with
// an emptyDir for its state, tolerating every taint like the original so
// the VIPs can live on any selected node.
func desiredDaemonSet(g *v1alpha1.KeepalivedGroup, image string) *appsv1ac.DaemonSetApplyConfiguration {
	labels := podLabels(g)
	c := corev1ac.Container().
		WithName(containerName).
		WithImage(image).
		WithArgs("--group", g.Namespace+"/"+g.Name, "--node", "$(NODE_NAME)").
		WithEnv(corev1ac.EnvVar().WithName("NODE_NAME").WithValueFrom(
			corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("spec.nodeName")))).
		WithPorts(corev1ac.ContainerPort().WithName("metrics").WithContainerPort(metricsPort).WithProtocol(corev1.ProtocolTCP)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithPrivileged(false).
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().
				WithDrop("ALL").
				WithAdd("NET_ADMIN", "NET_RAW"))).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("run").WithMountPath(runDir)).
		WithLivenessProbe(corev1ac.Probe().
			// /livez, not /healthz: a restart cures a stalled loop, but not an instance that
			// cannot start (which /healthz and keepalived_up report), and every restart makes
			// the node's masters resign.
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/livez").WithPort(intstr.FromString("metrics"))).
			WithPeriodSeconds(10).WithFailureThreshold(3)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("32Mi"),
		}))

	pod := corev1ac.PodSpec().
		WithServiceAccountName(ownedName(g)).
		WithHostNetwork(true).
		WithDNSPolicy(corev1.DNSClusterFirstWithHostNet).
		WithTolerations(corev1ac.Toleration().WithOperator(corev1.TolerationOpExists)).
		WithContainers(c).
		WithVolumes(corev1ac.Volume().WithName("run").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	if len(g.Spec.NodeSelector) > 0 {
		pod.WithNodeSelector(g.Spec.NodeSelector)
	}
	if g.Spec.DaemonsetPodPriorityClassName != "" {
		pod.WithPriorityClassName(g.Spec.DaemonsetPodPriorityClassName)
	}

	tmpl := corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(pod)
	if len(g.Spec.DaemonsetPodAnnotations) > 0 {
		tmpl.WithAnnotations(g.Spec.DaemonsetPodAnnotations)
	}
	return appsv1ac.DaemonSet(ownedName(g), g.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerRef(g)).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().WithType(appsv1.RollingUpdateDaemonSetStrategyType)).
			WithTemplate(tmpl))
}

func desiredServiceAccount(g *v1alpha1.KeepalivedGroup) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(ownedName(g), g.Namespace).
		WithLabels(podLabels(g)).
		WithOwnerReferences(ownerRef(g))
}

// desiredRole lets vrrpd read its own group and nothing else, plus its
// password Secret when the group has one. resourceNames limits list and
// watch to requests with a metadata.name field selector, which is how vrrpd
// watches.
func desiredRole(g *v1alpha1.KeepalivedGroup) *rbacv1ac.RoleApplyConfiguration {
	rules := []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().
			WithAPIGroups(v1alpha1.GroupVersion.Group).
			WithResources("keepalivedgroups").
			WithResourceNames(g.Name).
			WithVerbs("get", "list", "watch"),
	}
	if pa := g.Spec.PasswordAuth; pa != nil && pa.SecretRef.Name != "" {
		rules = append(rules, rbacv1ac.PolicyRule().
			WithAPIGroups("").
			WithResources("secrets").
			WithResourceNames(pa.SecretRef.Name).
			WithVerbs("get", "list", "watch"))
	}
	return rbacv1ac.Role(ownedName(g), g.Namespace).
		WithLabels(podLabels(g)).
		WithOwnerReferences(ownerRef(g)).
		WithRules(rules...)
}

func desiredRoleBinding(g *v1alpha1.KeepalivedGroup) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(ownedName(g), g.Namespace).
		WithLabels(podLabels(g)).
		WithOwnerReferences(ownerRef(g)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(ownedName(g))).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(ownedName(g)).WithNamespace(g.Namespace))
}

// sccBindingName names the RoleBinding that lets a group's vrrpd use the
// OpenShift SCC.
func sccBindingName(g *v1alpha1.KeepalivedGroup) string { return ownedName(g) + "-scc" }

// desiredSCCBinding binds the group's vrrpd ServiceAccount to the ClusterRole
// that grants `use` of the SCC (Options.SCCClusterRole).
func desiredSCCBinding(g *v1alpha1.KeepalivedGroup, clusterRole string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(sccBindingName(g), g.Namespace).
		WithLabels(podLabels(g)).
		WithOwnerReferences(ownerRef(g)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(clusterRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(ownedName(g)).WithNamespace(g.Namespace))
}

// desiredPodMonitor scrapes vrrpd's metrics port for the Prometheus
// operator; the label metrics: keepalived is the one the original used.
// Every series gets the group (keepalivedgroup) and the node (node) it comes
// from, which the dashboard and alerts in deploy/monitoring group by.
func desiredPodMonitor(g *v1alpha1.KeepalivedGroup) *unstructured.Unstructured {
	labels := map[string]any{}
	for k, v := range podLabels(g) {
		labels[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": podMonitorGVK.GroupVersion().String(),
		"kind":       podMonitorGVK.Kind,
		"metadata": map[string]any{
			"name":      ownedName(g),
			"namespace": g.Namespace,
			"labels":    map[string]any{"metrics": "keepalived", labelGroup: labelValue(g.Name)},
			"ownerReferences": []any{map[string]any{
				"apiVersion":         v1alpha1.GroupVersion.String(),
				"kind":               "KeepalivedGroup",
				"name":               g.Name,
				"uid":                string(g.UID),
				"controller":         true,
				"blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"podMetricsEndpoints": []any{map[string]any{
				"port": "metrics",
				"relabelings": []any{
					map[string]any{"sourceLabels": []any{"__meta_kubernetes_pod_label_" + promLabel(labelGroup)}, "targetLabel": "keepalivedgroup"},
					map[string]any{"sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node"},
				},
			}},
		},
	}}
	return u
}

// promLabel is a Kubernetes label name as Prometheus' service discovery spells it in
// __meta_kubernetes_pod_label_<name>: every character outside [a-zA-Z0-9_] becomes _.
func promLabel(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, k)
}
