package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// leftOutRetry is how soon a group whose left-out Services could not all be
// told (the paced backlog was full) reconciles again to tell the rest.
const leftOutRetry = 5 * time.Second

// reportLeftOut sends a Warning Event on each Service that newly lost out,
// once per episode (and again if the reason changes): RouterIDsExhausted
// when its instance or shared router got no router ID, GroupStatusFull when
// it was left out for the status' size (fitStatus). It reports whether some
// could not be told yet.
//
// The Events go at the held Events' pace (heldEvents.pace, 100 a second),
// not all at once: the members of one shared router left out, or the
// newest thousand Services of a full group, would otherwise be thousands of
// Event writes in one reconcile, which crowd out the status writes and
// overflow the recorder's queue, which drops what does not fit. A Service
// whose Event the backlog has no room for is not marked told, so a later
// reconcile (leftOutRetry) tells it.
func (r *GroupReconciler) reportLeftOut(g *v1alpha1.KeepalivedGroup, services []corev1.Service, p plan) (untold bool) {
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	now := make(map[types.NamespacedName]string, len(p.leftOutServices)+len(p.statusFull))
	for _, s := range p.leftOutServices {
		now[s] = ReasonRouterIDsExhausted
	}
	for _, s := range p.statusFull {
		now[s] = ReasonGroupStatusFull
	}
	r.mu.Lock()
	prev := r.leftOut[key]
	r.mu.Unlock()
	told := make(map[types.NamespacedName]string, len(now))
	for i := range services {
		svc := &services[i]
		ref := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		reason, ok := now[ref]
		if !ok {
			continue
		}
		if prev[ref] == reason || r.Recorder == nil || r.tellLeftOut(svc, g, key, reason) {
			told[ref] = reason
		} else {
			untold = true
		}
	}
	r.mu.Lock()
	r.leftOut[key] = told
	r.mu.Unlock()
	return untold
}

// tellLeftOut sends (or paces) one left-out Event; false when the paced
// backlog is full.
func (r *GroupReconciler) tellLeftOut(svc *corev1.Service, g *v1alpha1.KeepalivedGroup, key types.NamespacedName, reason string) bool {
	note := "group %s has no free router ID for this Service: all 255 are in use or reserved"
	if reason == ReasonGroupStatusFull {
		note = "group %s's status is full: this Service, among its newest, gets no VIP until the group has room (fewer Services) or it moves to another group"
	}
	if r.held == nil {
		r.Recorder.Eventf(serviceRef(svc), groupRef(g), corev1.EventTypeWarning, reason, actionAssignRouterID, note, key)
		return true
	}
	return r.held.pace(svc, g, corev1.EventTypeWarning, reason, actionAssignRouterID, note, key)
}
