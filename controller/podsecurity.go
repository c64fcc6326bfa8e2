package controller

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// ReasonPodSecurity (on a group, Warning): the group's namespace enforces a
// Pod Security level that refuses vrrpd's pods. The DaemonSet then exists
// but never gets a pod, and only its own FailedCreate events say why.
const ReasonPodSecurity = "PodSecurityRefuses"

// labelPodSecurityEnforce is Pod Security admission's namespace label.
const labelPodSecurityEnforce = "pod-security.kubernetes.io/enforce"

// podSecurityReports remembers, per group, the refusing level last reported,
// so the Event is sent once per change rather than on every reconcile.
type podSecurityReports struct {
	mu   sync.Mutex
	last map[types.NamespacedName]string
}

// checkPodSecurity warns when the group's namespace enforces baseline or
// restricted: vrrpd's pods need hostNetwork (which makes its metrics port
// a host port), a hostPath for the VIP record, and NET_ADMIN and NET_RAW,
// and only the privileged level allows those. A namespace without the label
// follows the cluster's default, which the operator cannot see: no Event.
// An unreadable namespace is not the group's problem and is skipped.
func (r *GroupReconciler) checkPodSecurity(ctx context.Context, g *v1alpha1.KeepalivedGroup) {
	var ns corev1.Namespace
	level := ""
	if err := r.Client.Get(ctx, types.NamespacedName{Name: g.Namespace}, &ns); err == nil {
		if l := ns.Labels[labelPodSecurityEnforce]; l == "baseline" || l == "restricted" {
			level = l
		}
	}
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	p := &r.podSecurity
	p.mu.Lock()
	if p.last == nil {
		p.last = map[types.NamespacedName]string{}
	}
	changed := p.last[key] != level
	p.last[key] = level
	p.mu.Unlock()
	if changed && level != "" {
		r.Recorder.Eventf(groupRef(g), nil, corev1.EventTypeWarning, ReasonPodSecurity, actionReconcile,
			"namespace %s enforces Pod Security level %q, which refuses vrrpd's pods (hostNetwork, a hostPath, NET_ADMIN and NET_RAW); label it %s=privileged",
			g.Namespace, level, labelPodSecurityEnforce)
	}
}

func (p *podSecurityReports) forget(group types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, group)
}
