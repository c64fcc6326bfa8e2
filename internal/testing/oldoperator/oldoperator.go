// Package oldoperator plays the Red Hat keepalived-operator for the tests of the takeover
// from it: the objects it keeps for a KeepalivedGroup (DaemonSet, ConfigMap, Prometheus Role
// and RoleBinding, and the DaemonSet's pods, as a kubelet would report them) and the
// keepalived.conf its template renders for the group, which real keepalived processes run in
// the lab. Written from the template's behaviour (config/templates/keepalived-template.yaml
// of github.com/redhat-cop/keepalived-operator), not from its code.
package oldoperator

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// PodLabel is the label keepalived-operator puts on its pods, with the group's name.
const PodLabel = "keepalivedGroup"

// ownerRef makes g the controller of an object, as keepalived-operator's
// CreateOrUpdateResource does.
func ownerRef(g *v1alpha1.KeepalivedGroup) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "KeepalivedGroup", Name: g.Name, UID: g.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
}

// Objects are the objects keepalived-operator keeps for g (which must exist: its UID is
// used) with conf as its ConfigMap's keepalived.conf: DaemonSet and ConfigMap named after
// the group, Role and RoleBinding "<group>-prometheus-k8s".
func Objects(g *v1alpha1.KeepalivedGroup, conf string) []client.Object {
	sel := map[string]string{PodLabel: g.Name}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: g.Namespace, Name: name, OwnerReferences: ownerRef(g)}
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: meta(g.Name),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					HostNetwork:  true,
					NodeSelector: g.Spec.NodeSelector,
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:    "keepalived",
						Image:   "quay.io/redhat-cop/keepalived:v2.2.4",
						Command: []string{"/bin/bash"},
						Args:    []string{"-c", "exec /usr/sbin/keepalived --log-console --log-detail --dont-fork --config-id=${POD_NAME} --use-file=/etc/keepalived.d/keepalived.conf"},
						// The pod's name selects the spread instances' "@<pod>" lines.
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
						SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: g.Name}}}}},
				},
			},
		},
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta(g.Name), Data: map[string]string{"keepalived.conf": conf}}
	cm.Labels = sel
	prom := g.Name + "-prometheus-k8s"
	role := &rbacv1.Role{ObjectMeta: meta(prom), Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"endpoints", "pods", "services"}, Verbs: []string{"get", "list", "watch"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta(prom),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: prom},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus-k8s", Namespace: "openshift-monitoring"}}}
	return []client.Object{ds, cm, role, rb}
}

// Pod is the old DaemonSet's pod on node, as the DaemonSet controller makes it (owned by
// the DaemonSet ds, which must exist).
func Pod(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ds.Namespace, Name: ds.Name + "-" + node, Labels: ds.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName:    node,
			HostNetwork: true,
			Containers:  []corev1.Container{{Name: "keepalived", Image: ds.Spec.Template.Spec.Containers[0].Image}},
		},
	}
}

// Service is what the template reads of one Service annotated for the group.
type Service struct {
	// Key is "namespace/name", the vrrp_instance's name and the status.routerIDs key (with
	// Spread, each address's instance is "namespace/name/address").
	Key string
	// VIPs are status.loadBalancer.ingress and spec.externalIPs, merged. (The original
	// merges them into a set, whose order is a map's; a spread Service's owners follow it.)
	VIPs []netip.Addr
	// Verbatim is the verbatimconfig annotation's keywords.
	Verbatim map[string]string
	// Spread is the spreadvips annotation set to "true": one instance per address, owned
	// (state MASTER, priority 200) by the pod at the address's index modulo the pods.
	Spread bool
	// HealthCheckNodePort is spec.healthCheckNodePort of an externalTrafficPolicy: Local
	// Service (0 for any other): the template's vrrp_script, named after the Service,
	// asks kube-proxy on 127.0.0.1 whether the node has a local endpoint, and each of the
	// Service's instances tracks it without a weight, so a node without one is in FAULT.
	HealthCheckNodePort int32
}

// PodRef is what the template reads of one of the old DaemonSet's pods.
type PodRef struct {
	// Name is the pod's name, keepalived's --config-id in that pod: the "@name" lines of
	// a spread instance apply in the owner's pod only, the "@^name" lines in the others.
	Name string
	// HostIP is status.hostIP, a unicast peer.
	HostIP netip.Addr
}

// Conf renders keepalived.conf as keepalived-operator's template does for group g, its
// Services, the password (empty: no authentication) and its pods (the unicast peers: the
// template lists every pod, the node's own included; and the owners of spread addresses,
// in the order of the pods' names, as the original sorts them). The router IDs come from
// g.Status.RouterIDs; an instance without one is an error.
func Conf(g *v1alpha1.KeepalivedGroup, services []Service, password string, pods []PodRef) (string, error) {
	var b strings.Builder
	b.WriteString("global_defs {\n    router_id " + g.Name + "\n")
	for _, k := range sortedKeys(g.Spec.VerbatimConfig) {
		fmt.Fprintf(&b, "    %s %s\n", k, g.Spec.VerbatimConfig[k])
	}
	b.WriteString("}\n")
	svcs := slices.Clone(services)
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Key < svcs[j].Key })
	pods = slices.Clone(pods)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, s := range svcs {
		if s.HealthCheckNodePort != 0 {
			// The template's check as it renders it: keepalived's defaults for the rest
			// (interval 1s, no weight).
			fmt.Fprintf(&b, "vrrp_script %s {\n    script \"/usr/bin/curl --fail --max-time 1 http://127.0.0.1:%d/health\"\n    timeout 10\n    rise 3\n    fall 3\n}\n",
				s.Key, s.HealthCheckNodePort)
		}
	}
	instance := func(s Service, name string, vips []netip.Addr, owner string) error {
		id, ok := g.Status.RouterIDs[name]
		if !ok {
			return fmt.Errorf("instance %s has no router ID in the group's status", name)
		}
		fmt.Fprintf(&b, "vrrp_instance %s {\n", name)
		if owner != "" {
			fmt.Fprintf(&b, "    @%[1]s state MASTER\n    @^%[1]s state BACKUP\n    @%[1]s priority 200\n    @^%[1]s priority 100\n", owner)
		}
		fmt.Fprintf(&b, "    interface %s\n    virtual_router_id %d\n    virtual_ipaddress {\n", g.Spec.Interface, id)
		for _, v := range vips {
			fmt.Fprintf(&b, "        %s\n", v)
		}
		b.WriteString("    }\n")
		if g.Spec.UnicastEnabled {
			b.WriteString("    unicast_peer {\n")
			for _, p := range pods {
				if p.HostIP.IsValid() {
					fmt.Fprintf(&b, "        %s\n", p.HostIP)
				}
			}
			b.WriteString("    }\n")
		}
		if password != "" {
			fmt.Fprintf(&b, "    authentication {\n        auth_type PASS\n        auth_pass %s\n    }\n", password)
		}
		if s.HealthCheckNodePort != 0 {
			fmt.Fprintf(&b, "    track_script {\n        %s\n    }\n", s.Key)
		}
		for _, k := range sortedKeys(s.Verbatim) {
			fmt.Fprintf(&b, "    %s %s\n", k, s.Verbatim[k])
		}
		b.WriteString("}\n")
		return nil
	}
	for _, s := range svcs {
		// The template spreads only when there are pods to own the addresses.
		if s.Spread && len(pods) > 0 {
			for i, v := range s.VIPs {
				if err := instance(s, s.Key+"/"+v.String(), []netip.Addr{v}, pods[i%len(pods)].Name); err != nil {
					return "", err
				}
			}
			continue
		}
		if err := instance(s, s.Key, s.VIPs, ""); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
