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
						Name:            "keepalived",
						Image:           "quay.io/redhat-cop/keepalived:v2.2.4",
						Command:         []string{"/bin/bash"},
						Args:            []string{"-c", "exec /usr/sbin/keepalived --log-console --log-detail --dont-fork --config-id=${POD_NAME} --use-file=/etc/keepalived.d/keepalived.conf"},
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
	// Key is "namespace/name", the vrrp_instance's name and the status.routerIDs key.
	Key string
	// VIPs are status.loadBalancer.ingress and spec.externalIPs, merged.
	VIPs []netip.Addr
	// Verbatim is the verbatimconfig annotation's keywords.
	Verbatim map[string]string
}

// Conf renders keepalived.conf as keepalived-operator's template does for group g, its
// non-spreadvips Services, the password (empty: no authentication) and the host IPs of its
// pods (the unicast peers: the template lists every pod, the node's own included). The
// router IDs come from g.Status.RouterIDs; a Service without one is an error.
func Conf(g *v1alpha1.KeepalivedGroup, services []Service, password string, podIPs []netip.Addr) (string, error) {
	var b strings.Builder
	b.WriteString("global_defs {\n    router_id " + g.Name + "\n")
	for _, k := range sortedKeys(g.Spec.VerbatimConfig) {
		fmt.Fprintf(&b, "    %s %s\n", k, g.Spec.VerbatimConfig[k])
	}
	b.WriteString("}\n")
	svcs := slices.Clone(services)
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Key < svcs[j].Key })
	for _, s := range svcs {
		id, ok := g.Status.RouterIDs[s.Key]
		if !ok {
			return "", fmt.Errorf("service %s has no router ID in the group's status", s.Key)
		}
		fmt.Fprintf(&b, "vrrp_instance %s {\n    interface %s\n    virtual_router_id %d\n    virtual_ipaddress {\n", s.Key, g.Spec.Interface, id)
		for _, v := range s.VIPs {
			fmt.Fprintf(&b, "        %s\n", v)
		}
		b.WriteString("    }\n")
		if g.Spec.UnicastEnabled {
			b.WriteString("    unicast_peer {\n")
			for _, ip := range podIPs {
				fmt.Fprintf(&b, "        %s\n", ip)
			}
			b.WriteString("    }\n")
		}
		if password != "" {
			fmt.Fprintf(&b, "    authentication {\n        auth_type PASS\n        auth_pass %s\n    }\n", password)
		}
		for _, k := range sortedKeys(s.Verbatim) {
			fmt.Fprintf(&b, "    %s %s\n", k, s.Verbatim[k])
		}
		b.WriteString("}\n")
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
