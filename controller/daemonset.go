package controller

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
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
	// runDir is vrrpd's only writable path (its record of VIPs it added and
	// its cache of the group), in the container and, one directory per
	// group, on the node (hostRunDir).
	runDir = "/run/vrrpd"
	// hostRunDir holds each group's runDir on the node, as
	// <namespace>/<name>: a pod that replaces another (a crash, an
	// upgrade, an eviction) finds the record of the VIPs its predecessor
	// added and removes them. An emptyDir would die with the pod and leave
	// them on the interface. /run is a tmpfs: a reboot, which takes the
	// VIPs too, clears it.
	hostRunDir = "/run/vrrpd"
	// passwordDir is where the group's password Secret is mounted: one
	// file, passwordFile, holding the Secret's key. The kubelet reads the
	// Secret, not vrrpd, and rewrites the file when the Secret changes;
	// vrrpd reads it again on its own (groupsource.Options.PasswordFile).
	passwordDir  = "/etc/vrrpd/password"
	passwordFile = "password"
	// hostIPEnv carries the node's status.hostIP into vrrpd's
	// --metrics-host, so its endpoint listens on the node's address only,
	// not on every address the node has, the VIPs included.
	hostIPEnv = "HOST_IP"

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
// (VRRP and ARP sockets) and nothing else, the runtime's default seccomp
// profile, a read-only root filesystem with a hostPath for its state,
// tolerating every taint like the original so the VIPs can live on any
// selected node. A group with passwordAuth gets its Secret's key as a file:
// neither vrrpd nor the operator reads Secrets through the API.
//
// The update strategy rolls one node at a time (maxUnavailable 1) and never
// starts a second pod of the group on a node before the first is gone
// (maxSurge 0): the two would share the host's network, the VRIDs and the
// record of the VIPs (hostRunDir), two speakers of one router on one node.
// The pod template holds only what the group, the image and the operator's
// vrrpd settings decide, nothing about the operator process itself: an
// upgrade that changes the vrrpd image rolls every group, a restart (or an
// operator upgrade that keeps the image) changes nothing and rolls nothing.
func desiredDaemonSet(g *v1alpha1.KeepalivedGroup, image string, s vrrpdPodSettings) *appsv1ac.DaemonSetApplyConfiguration {
	labels := podLabels(g)
	args := []string{"--group", g.Namespace + "/" + g.Name, "--node", "$(NODE_NAME)", "--metrics-host", "$(" + hostIPEnv + ")"}
	mounts := []*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName("run").WithMountPath(runDir)}
	volumes := []*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("run").WithHostPath(corev1ac.HostPathVolumeSource().
		WithPath(groupRunDir(g)).WithType(corev1.HostPathDirectoryOrCreate))}
	if pa := g.Spec.PasswordAuth; pa != nil && pa.SecretRef.Name != "" {
		args = append(args, "--password-file", passwordDir+"/"+passwordFile)
		mounts = append(mounts, corev1ac.VolumeMount().WithName("password").WithMountPath(passwordDir).WithReadOnly(true))
		// Not optional: without its password a VRRPv2 group must not run
		// (it would answer its peers unauthenticated), and a pod that
		// waits for its Secret says why in its events. A mounted
		// directory, not a subPath, so the kubelet's updates reach it.
		volumes = append(volumes, corev1ac.Volume().WithName("password").WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(pa.SecretRef.Name).
			WithItems(corev1ac.KeyToPath().WithKey(cmp.Or(pa.SecretKey, "password")).WithPath(passwordFile)).
			WithDefaultMode(0o400).
			WithOptional(false)))
	}
	c := corev1ac.Container().
		WithName(containerName).
		WithImage(image).
		WithArgs(args...).
		WithEnv(
			corev1ac.EnvVar().WithName("NODE_NAME").WithValueFrom(
				corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("spec.nodeName"))),
			corev1ac.EnvVar().WithName(hostIPEnv).WithValueFrom(
				corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("status.hostIP")))).
		WithPorts(corev1ac.ContainerPort().WithName("metrics").WithContainerPort(metricsPort).WithProtocol(corev1.ProtocolTCP)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithPrivileged(false).
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)).
			WithCapabilities(corev1ac.Capabilities().
				WithDrop("ALL").
				WithAdd("NET_ADMIN", "NET_RAW"))).
		WithVolumeMounts(mounts...).
		// Both probes are exec probes of vrrpd's probe socket in the state
		// directory (cmd/vrrpd/probe.go), never an HTTP GET of :9650: that
		// port is on the node's address, which every host routing to the
		// node reaches, and a flood of connections there must not decide
		// whether vrrpd is restarted (every master of the node would
		// resign) or taken out of a rollout. Two groups' pods on one node
		// share the host's network, so a fixed loopback port would collide;
		// their state directories do not.
		WithLivenessProbe(corev1ac.Probe().
			// live, not health: a restart cures a stalled loop, but not an instance that
			// cannot start (which /healthz and keepalived_up report), and every restart makes
			// the node's masters resign.
			WithExec(corev1ac.ExecAction().WithCommand(probeCommand("live")...)).
			WithPeriodSeconds(10).WithTimeoutSeconds(3).WithFailureThreshold(3)).
		// ready: the group loaded, the sockets open and every instance out
		// of INIT (daemon.Ready); what rolling updates and the migration wait
		// for.
		WithReadinessProbe(corev1ac.Probe().
			WithExec(corev1ac.ExecAction().WithCommand(probeCommand("ready")...)).
			WithPeriodSeconds(5).WithTimeoutSeconds(3).WithFailureThreshold(2)).
		WithResources(resources(s.resources))
	if s.pullPolicy != "" {
		c.WithImagePullPolicy(s.pullPolicy)
	}

	pod := corev1ac.PodSpec().
		WithServiceAccountName(ownedName(g)).
		WithHostNetwork(true).
		WithDNSPolicy(corev1.DNSClusterFirstWithHostNet).
		WithTolerations(corev1ac.Toleration().WithOperator(corev1.TolerationOpExists)).
		WithContainers(c).
		WithVolumes(volumes...)
	for _, name := range s.pullSecrets {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(name))
	}
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
			WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().
				WithType(appsv1.RollingUpdateDaemonSetStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDaemonSet().
					WithMaxUnavailable(intstr.FromInt32(1)).
					WithMaxSurge(intstr.FromInt32(0)))).
			WithTemplate(tmpl))
}

// vrrpdPodSettings are the operator's settings of every group's vrrpd pods
// (Options.VrrpdResources, VrrpdImagePullPolicy, VrrpdImagePullSecrets).
type vrrpdPodSettings struct {
	resources   corev1.ResourceRequirements
	pullPolicy  corev1.PullPolicy
	pullSecrets []string
}

// resources copies res: the apply configuration keeps the maps it is given,
// and Apply decodes the API server's answer into them, so passing the
// operator's one ResourceRequirements would let two group workers write
// and read it at once (and leave the server's spelling of each quantity in
// the operator's options).
func resources(res corev1.ResourceRequirements) *corev1ac.ResourceRequirementsApplyConfiguration {
	rr := corev1ac.ResourceRequirements()
	if len(res.Requests) > 0 {
		rr.WithRequests(res.Requests.DeepCopy())
	}
	if len(res.Limits) > 0 {
		rr.WithLimits(res.Limits.DeepCopy())
	}
	return rr
}

// probeCommand is the exec probe asking vrrpd's probe socket for check
// (live or ready): the image's /vrrpd, its state directory.
func probeCommand(check string) []string {
	return []string{"/vrrpd", "probe", check, "--state-dir", runDir}
}

// groupRunDir is the group's state directory on the node. Namespace and
// name are separate path elements: neither may contain a slash, so two
// groups never share one (a "-" join would let namespace a-b's group c
// meet namespace a's group b-c).
func groupRunDir(g *v1alpha1.KeepalivedGroup) string {
	return hostRunDir + "/" + g.Namespace + "/" + g.Name
}

// DefaultVrrpdResources are what a vrrpd container requests and may use
// unless the operator's flags say otherwise (Options.VrrpdResources).
// Measured at the capacity load in Kubernetes mode, 255 instances at 100 ms
// advertisements over two nodes (test/e2e TestKubernetesModeCapacityMemory,
// docs/security-vrrpd.md): a peak RSS of 27-28 MiB and 0.58-0.70 CPU
// seconds in 20 s (29m-35m) per node; the requests add some 30% and 15%.
// The memory limit is over four times that peak, room for a burst (a
// relist, a large status, the garbage collector's lag, which GOMEMLIMIT
// does not bound here); an OOM kill is a failover. No CPU limit: a
// throttled vrrpd misses advertisements and its backups take over.
func DefaultVrrpdResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("40m"),
			corev1.ResourceMemory: resource.MustParse("36Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		},
	}
}

func desiredServiceAccount(g *v1alpha1.KeepalivedGroup) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(ownedName(g), g.Namespace).
		WithLabels(podLabels(g)).
		WithOwnerReferences(ownerRef(g))
}

// desiredRole lets vrrpd read its own group and nothing else: resourceNames
// limits list and watch to requests with a metadata.name field selector,
// which is how vrrpd watches. Its password comes from the pod's Secret
// volume, which the kubelet reads with the node's credentials. The other
// rules let it watch its own group's KeepalivedMastership and read and
// update its status (mastership.go), no other object's, and create none.
func desiredRole(g *v1alpha1.KeepalivedGroup) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(ownedName(g), g.Namespace).
		WithLabels(podLabels(g)).
		WithOwnerReferences(ownerRef(g)).
		WithRules(rbacv1ac.PolicyRule().
			WithAPIGroups(v1alpha1.GroupVersion.Group).
			WithResources("keepalivedgroups").
			WithResourceNames(g.Name).
			WithVerbs("get", "list", "watch"),
			rbacv1ac.PolicyRule().
				WithAPIGroups(v1alpha1.GroupVersion.Group).
				WithResources("keepalivedmasterships").
				WithResourceNames(g.Name).
				WithVerbs("watch"),
			rbacv1ac.PolicyRule().
				WithAPIGroups(v1alpha1.GroupVersion.Group).
				WithResources("keepalivedmasterships/status").
				WithResourceNames(g.Name).
				WithVerbs("get", "update"))
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
// extra are the admin's labels for the PodMonitor itself (Options.PodMonitorLabels);
// the operator's own keep their values.
func desiredPodMonitor(g *v1alpha1.KeepalivedGroup, extra map[string]string) *unstructured.Unstructured {
	labels := map[string]any{}
	for k, v := range podLabels(g) {
		labels[k] = v
	}
	own := map[string]any{}
	for k, v := range extra {
		own[k] = v
	}
	own["metrics"] = "keepalived"
	own[labelGroup] = labelValue(g.Name)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": podMonitorGVK.GroupVersion().String(),
		"kind":       podMonitorGVK.Kind,
		"metadata": map[string]any{
			"name":            ownedName(g),
			"namespace":       g.Namespace,
			"labels":          own,
			"ownerReferences": []any{groupOwnerRef(g)},
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

// ParsePodMonitorLabels reads --podmonitor-labels: "k=v,k2=v2" as a label selector
// of equalities is written (apimachinery's parser, which checks each key and value);
// "" is none. The operator's own PodMonitor labels cannot be set: a Prometheus that
// selects on them would lose the PodMonitors.
func ParsePodMonitorLabels(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	set, err := k8slabels.ConvertSelectorToLabelsMap(s)
	if err != nil {
		return nil, fmt.Errorf("--podmonitor-labels %q: %w", s, err)
	}
	if len(strings.Split(s, ",")) != len(set) {
		return nil, fmt.Errorf("--podmonitor-labels %q: a key given twice", s)
	}
	for _, k := range []string{"metrics", labelGroup} {
		if set.Has(k) {
			return nil, fmt.Errorf("--podmonitor-labels %q: %s is the operator's own label", s, k)
		}
	}
	return set, nil
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
