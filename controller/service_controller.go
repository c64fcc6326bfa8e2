package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/ipam"
)

// ServiceReconciler checks a Service's keepalived annotations (an Event for
// each problem, nothing else disturbed) and allocates and releases its
// LoadBalancer addresses from its group's pool.
type ServiceReconciler struct {
	Client   client.Client
	Recorder recorder.EventRecorder

	alloc *allocator
	// grants is the GroupReconciler's grant ledger (grantrecord.go); nil:
	// the vetter goes by the groups' status alone.
	grants *grantLedger
	// pending: the LoadBalancer Services queued for an address, which
	// their groups' status writes wait for (pending.go). Nil: not tracked.
	pending *pendingAllocations
	// wake carries Services to retry when an address of their group frees.
	wake chan event.GenericEvent
	// held sends the IPAllocated Events of a bulk allocation after it
	// (heldevents.go). Nil: at once.
	held *heldEvents
	// groupNamespaces is Options.GroupNamespaces: a group elsewhere
	// serves no Service (nil: any namespace).
	groupNamespaces namespaceList
	// viewSync reports whether the operator's view of the Services is
	// complete (Setup: the Service informer has synced); nil: always.
	viewSync func() bool
}

// Reconcile handles one Service.
func (r *ServiceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.pending != nil {
		defer r.pending.done(req.NamespacedName)
	}
	var svc corev1.Service
	if err := r.Client.Get(ctx, req.NamespacedName, &svc); err != nil {
		// A deleted Service frees its addresses by being gone: the
		// allocator reads the cache. serviceWatch's DeleteFunc forgot what this
		// process remembered of it and woke its group's waiting Services.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	value, annotated := svc.Annotations[v1alpha1.AnnotationGroup]
	var group *v1alpha1.KeepalivedGroup
	if annotated && svc.DeletionTimestamp == nil {
		group = r.checkAnnotations(ctx, &svc, value)
	}
	v := newVetter(ctx, r.Client).withLedger(r.grants).withSynced(r.viewSynced()).withGroupNamespaces(r.groupNamespaces)
	admitted := true
	if group != nil && r.groupNamespaces != nil && !r.groupNamespaces.allows(group.Namespace) {
		// The operator runs nothing for such a group (policy.go), so
		// its pool hands out no address either: a group author outside
		// the admin's namespaces must not be able to hold addresses.
		r.event(&svc, group, corev1.EventTypeWarning, ReasonGroupNotAllowed, actionValidate,
			"KeepalivedGroup %s/%s is in a namespace that may not hold groups; no VIP", group.Namespace, group.Name)
		admitted = false
	}
	if group != nil && admitted {
		ns, err := v.namespace(svc.Namespace)
		if err != nil {
			return ctrl.Result{}, err
		}
		var why string
		if admitted, why = namespaceAllowed(group, svc.Namespace, ns); !admitted {
			r.event(&svc, group, corev1.EventTypeWarning, ReasonNamespaceNotAllowed, actionValidate, "%s; no VIP", why)
		}
	}

	// Release on a type change, when the group annotation goes, when the
	// group stops admitting the Service's namespace, when the Service moves
	// to another load-balancer class, and while it is being deleted (held
	// by someone's finalizer).
	if (svc.DeletionTimestamp != nil || !annotated || !admitted || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || !classIsOurs(&svc)) &&
		r.allocatedHere(&svc) {
		return ctrl.Result{}, r.release(ctx, &svc, value)
	}
	if group == nil || !admitted {
		return ctrl.Result{}, nil
	}
	retry := false
	if group.Spec.AddressPool != nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer && classIsOurs(&svc) {
		if v.unsynced {
			// Fail closed: until the view holds every Service, an address
			// may look free that another holds. The current one stays.
			retry = true
		} else if err := r.allocate(ctx, v, &svc, group); err != nil {
			return ctrl.Result{}, err
		}
	}
	deferred, err := r.reportVIPs(ctx, &svc, group)
	if err != nil || !(retry || deferred) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: viewRetry}, nil
}

// viewRetry is how soon a Service or group whose addresses the operator's
// view could not decide (not synced yet, an index behind the Service) is
// looked at again.
const viewRetry = time.Second

// viewSynced reports whether the operator's view of the Services is
// complete; nil viewSync means it always is.
func (r *ServiceReconciler) viewSynced() bool { return r.viewSync == nil || r.viewSync() }

// reportVIPs tells the Service, one Event per reason, which of its
// addresses it does not get as VIPs and why: the same decision the group's status is
// computed from (vetter.vips). It reads the Service again, so an address
// just allocated is judged as the group reconciler will see it.
//
// deferred: an address could not be decided yet (vetter.deferred).
func (r *ServiceReconciler) reportVIPs(ctx context.Context, svc *corev1.Service, g *v1alpha1.KeepalivedGroup) (deferred bool, err error) {
	var cur corev1.Service
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, &cur); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	v := newVetter(ctx, r.Client).withLedger(r.grants).withSynced(r.viewSynced()).withGroupNamespaces(r.groupNamespaces)
	_, refused, err := v.vips(&cur)
	if err != nil {
		return false, err
	}
	// One Event per reason: the events library folds Events of one
	// object, reason and action into one series whatever their notes, so
	// a second refusal for the same reason would only bump a count.
	var reasons []string
	notes := map[string][]string{}
	for _, f := range refused {
		if _, ok := notes[f.reason]; !ok {
			reasons = append(reasons, f.reason)
		}
		notes[f.reason] = append(notes[f.reason], f.msg)
	}
	for _, reason := range reasons {
		r.event(&cur, g, corev1.EventTypeWarning, reason, actionValidate, "%s", strings.Join(notes[reason], "; "))
	}
	return v.deferred, nil
}

// checkAnnotations reports every problem with the Service's annotations as
// an Event and returns its group when the group annotation is usable.
func (r *ServiceReconciler) checkAnnotations(ctx context.Context, svc *corev1.Service, value string) *v1alpha1.KeepalivedGroup {
	if v, ok := svc.Annotations[v1alpha1.AnnotationVerbatimConfig]; ok {
		_, problems := parseVerbatim(v)
		for _, p := range problems {
			r.event(svc, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, actionValidate, "%s", p)
		}
	}
	if v, ok := svc.Annotations[v1alpha1.AnnotationSpreadVIPs]; ok && v != "true" && v != "false" {
		r.event(svc, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, actionValidate,
			"%s %q: want \"true\" or \"false\"; taken as false", v1alpha1.AnnotationSpreadVIPs, v)
	}
	ref, err := parseGroupRef(value)
	if err != nil {
		r.event(svc, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, actionValidate, "%v", err)
		return nil
	}
	var g v1alpha1.KeepalivedGroup
	// Read-only: the cache's own object, not a copy. A group's status holds every
	// instance with its priorities (228 KiB at 250 Services and 500 Nodes), and copying it
	// for every Service reconcile was a tenth of the operator's CPU at that scale.
	if err := r.Client.Get(ctx, ref, &g, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.event(svc, nil, corev1.EventTypeWarning, ReasonGroupNotFound, actionValidate,
				"KeepalivedGroup %s named by %s does not exist", ref, v1alpha1.AnnotationGroup)
		}
		return nil
	}
	if groupSettings(&g).Version == 2 { // also passwordAuth without vrrpVersion
		vips, _ := serviceVIPs(svc)
		var v6 []string
		for _, a := range vips {
			if a.Is6() {
				v6 = append(v6, a.String())
			}
		}
		if len(v6) > 0 {
			r.event(svc, &g, corev1.EventTypeWarning, ReasonInvalidAnnotation, actionValidate,
				"group %s runs VRRPv2, which carries IPv4 only: %s not served", ref, strings.Join(v6, ", "))
		}
	}
	return &g
}

// requested returns the addresses the Service asks for: the loadbalancerips
// annotation, else the deprecated spec.loadBalancerIP.
func requested(svc *corev1.Service) (string, []netip.Addr, error) {
	if v, ok := svc.Annotations[v1alpha1.AnnotationLoadBalancerIPs]; ok {
		a, err := ipam.ParseRequested(v)
		if err != nil {
			return v1alpha1.AnnotationLoadBalancerIPs, nil, fmt.Errorf("%s %q: %w", v1alpha1.AnnotationLoadBalancerIPs, v, err)
		}
		return v1alpha1.AnnotationLoadBalancerIPs, a, nil
	}
	if v := svc.Spec.LoadBalancerIP; v != "" {
		a, err := ipam.ParseRequested(v)
		if err != nil {
			return "spec.loadBalancerIP", nil, fmt.Errorf("spec.loadBalancerIP %q: %w", v, err)
		}
		return "spec.loadBalancerIP", a, nil
	}
	return "", nil, nil
}

func ingressAddrs(svc *corev1.Service) []netip.Addr {
	var out []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// allocate gives the Service the addresses it asks for, or free ones of its group's
// pool, and writes them to its status.
func (r *ServiceReconciler) allocate(ctx context.Context, v *vetter, svc *corev1.Service, g *v1alpha1.KeepalivedGroup) error {
	req, err := r.request(v, svc, g)
	if req == nil {
		return err
	}
	if done, err := r.adoptFinalizer(ctx, svc); done || err != nil {
		return err
	}
	current := ingressAddrs(svc)
	chosen, undo, err := r.choose(v, svc, req, current)
	if undo == nil {
		return err
	}
	if err := r.writeIngress(ctx, svc, req.self, current, chosen, undo); err != nil {
		return err
	}
	r.reportAllocated(svc, req, chosen)
	return nil
}

// allocationRequest is what a Service asks of its group's pool, checked.
type allocationRequest struct {
	self, groupRef types.NamespacedName
	g              *v1alpha1.KeepalivedGroup
	facts          *groupFacts
	pool           *ipam.Pool
	// source names where want was asked (an annotation, spec.loadBalancerIP).
	source     string
	want       []netip.Addr
	autoAssign bool
	families   []ipam.Family
}

// request checks what the Service asks for against its group's pool and the tenancy
// rules: nil, after an Event for each problem, when nothing is to be allocated.
func (r *ServiceReconciler) request(v *vetter, svc *corev1.Service, g *v1alpha1.KeepalivedGroup) (*allocationRequest, error) {
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	groupRef := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	ap := g.Spec.AddressPool
	pool, err := ipam.Parse(rangesToStrings(ap.Addresses), rangesToStrings(ap.ExcludedAddresses))
	if err != nil {
		r.event(svc, g, corev1.EventTypeWarning, ReasonAllocationFailed, actionAllocate, "address pool of group %s: %v", groupRef, err)
		return nil, nil
	}
	source, want, err := requested(svc)
	if err != nil {
		r.event(svc, g, corev1.EventTypeWarning, ReasonInvalidAnnotation, actionAllocate, "%v", err)
		return nil, nil
	}
	facts, err := v.group(groupRef)
	if err != nil || facts.g == nil {
		return nil, err // the group is gone; its deletion reconciles the Service again
	}
	autoAssign := ap.AutoAssign == nil || *ap.AutoAssign
	if len(want) == 0 && !autoAssign {
		return nil, nil
	}
	families, err := pool.Families(familyStrings(svc.Spec.IPFamilies), policyString(svc.Spec.IPFamilyPolicy))
	if err != nil {
		r.event(svc, g, corev1.EventTypeWarning, ReasonAllocationFailed, actionAllocate, "group %s: %v", groupRef, err)
		return nil, nil
	}
	for _, a := range want {
		if !slices.Contains(families, ipam.FamilyOf(a)) {
			r.event(svc, g, corev1.EventTypeWarning, ReasonAllocationFailed, actionAllocate,
				"%s asks for %s but the Service gets only %v addresses", source, a, families)
			return nil, nil
		}
		if !pool.Contains(a) {
			r.event(svc, g, corev1.EventTypeWarning, ReasonAllocationFailed, actionAllocate,
				"%s asks for %s, which is not in the address pool of group %s (%s)", source, a, groupRef, pool)
			return nil, nil
		}
		if reason, msg := facts.addrProblem(a, fromPool); reason != "" {
			r.event(svc, g, corev1.EventTypeWarning, ReasonAllocationFailed, actionAllocate, "%s: %s", source, msg)
			return nil, nil
		}
	}
	return &allocationRequest{self: self, groupRef: groupRef, g: g, facts: facts, pool: pool,
		source: source, want: want, autoAssign: autoAssign, families: families}, nil
}

// unusable reports whether x could not be a VIP, so is never handed out: a CIDR entry's
// network or broadcast address, or a member node's own address.
func (req *allocationRequest) unusable(x netip.Addr) bool {
	_, own := req.facts.nodeOf(x)
	return own || req.pool.IsEdge(x)
}

// adoptFinalizer removes the finalizer earlier versions of the operator set (see
// allocatedHere); a finalizer nobody removes would hold the Service's deletion once the
// operator is uninstalled. First the addresses it marked become ours in managedFields
// (an apply of the same values: done, the reconcile that write brings goes on), then
// the finalizer goes.
func (r *ServiceReconciler) adoptFinalizer(ctx context.Context, svc *corev1.Service) (done bool, err error) {
	if !controllerutil.ContainsFinalizer(svc, serviceFinalizer) {
		return false, nil
	}
	if len(svc.Status.LoadBalancer.Ingress) > 0 && !ownsIngress(svc.ManagedFields) {
		return true, r.Client.Status().Apply(ctx, ingressApply(svc), client.FieldOwner(fieldOwner), client.ForceOwnership)
	}
	controllerutil.RemoveFinalizer(svc, serviceFinalizer)
	return false, r.Client.Update(ctx, svc, client.FieldOwner(fieldOwner))
}

// choose decides the Service's addresses under the allocator's lock and reserves the
// choice in memory, so that the write that follows goes without the lock (writes for
// different Services overlap) and then confirms or undoes the reservation (undo). A nil
// undo: nothing to write (the status shows the choice already, or nothing could be
// chosen, which an Event tells).
func (r *ServiceReconciler) choose(v *vetter, svc *corev1.Service, req *allocationRequest, current []netip.Addr) (chosen []netip.Addr, undo func(), err error) {
	a := r.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	chosen, failures, exhausted, err := r.pick(v, svc, req, current)
	if err != nil {
		return nil, nil, err
	}
	if len(failures) > 0 {
		r.event(svc, req.g, corev1.EventTypeWarning, ReasonAllocationFailed, actionAllocate, "%s", strings.Join(failures, "; "))
		if exhausted {
			a.wait(req.groupRef, req.self)
		}
		if svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
			chosen = nil
		}
		if len(chosen) == 0 {
			return nil, nil, nil
		}
	} else {
		a.stopWaiting(req.groupRef, req.self)
	}
	if sameIngress(svc, chosen) {
		return nil, nil, nil
	}
	return chosen, a.reserve(req.self, chosen), nil
}

// pick picks an address of each of the Service's families (under the allocator's
// lock): the one it asks for, else the one it has if still its own, else a free one.
// failures says why a family got none; exhausted, that the pool had no free address.
func (r *ServiceReconciler) pick(v *vetter, svc *corev1.Service, req *allocationRequest, current []netip.Addr) (chosen []netip.Addr, failures []string, exhausted bool, err error) {
	a, want := r.alloc, req.want
	for _, f := range req.families {
		var pick netip.Addr
		if i := slices.IndexFunc(want, func(x netip.Addr) bool { return ipam.FamilyOf(x) == f }); i >= 0 {
			pick = want[i]
		} else if len(want) > 0 && !req.autoAssign {
			continue
		} else if i := slices.IndexFunc(current, func(x netip.Addr) bool {
			return ipam.FamilyOf(x) == f && req.pool.Contains(x) && !req.unusable(x)
		}); i >= 0 {
			pick = current[i]
		}
		if pick.IsValid() {
			other, used, err := a.keeps(v, pick, svc, current)
			if err != nil {
				return nil, nil, false, err
			}
			if used {
				if slices.Contains(want, pick) {
					failures = append(failures, fmt.Sprintf("%s %s is already in use by Service %s", req.source, pick, other))
					continue
				}
				pick = netip.Addr{} // our old address was taken meanwhile: pick again
			}
		}
		if !pick.IsValid() {
			var lookupErr error
			next, ok := req.pool.Allocate(f, func(x netip.Addr) bool {
				// In use first: inUseBy answers from memory for the
				// addresses this process handed out.
				_, used, err := a.inUseBy(v, x, svc, false)
				if err != nil && lookupErr == nil {
					lookupErr = err
				}
				return used || err != nil || req.unusable(x)
			})
			if lookupErr != nil {
				return nil, nil, false, lookupErr
			}
			if !ok {
				failures = append(failures, fmt.Sprintf("no free %s address in the pool of group %s (%s)", f, req.groupRef, req.pool))
				exhausted = true
				continue
			}
			pick = next
		}
		chosen = append(chosen, pick)
	}
	return chosen, failures, exhausted, nil
}

// writeIngress writes the chosen addresses to the Service's status, then confirms the
// reservation (the allocator's record) or, when the write failed, undoes it.
func (r *ServiceReconciler) writeIngress(ctx context.Context, svc *corev1.Service, self types.NamespacedName, current, chosen []netip.Addr, undo func()) error {
	a := r.alloc
	svc.Status.LoadBalancer.Ingress = nil
	vip := corev1.LoadBalancerIPModeVIP
	for _, x := range chosen {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: x.String(), IPMode: &vip})
	}
	// Under our field manager: managedFields then records the ingress as
	// ours (allocatedHere), with no write of its own.
	err := r.Client.Status().Update(ctx, svc, client.FieldOwner(fieldOwner))
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		undo()
		return err
	}
	a.record(self, current, chosen)
	return nil
}

// reportAllocated sends IPAllocated, held back while a bulk allocation lasts
// (heldevents.go).
func (r *ServiceReconciler) reportAllocated(svc *corev1.Service, req *allocationRequest, chosen []netip.Addr) {
	strs := make([]string, len(chosen))
	for i, x := range chosen {
		strs[i] = x.String()
	}
	const note = "allocated %s from the address pool of group %s"
	if r.held != nil && r.Recorder != nil {
		r.held.eventf(svc, req.g, corev1.EventTypeNormal, ReasonIPAllocated, actionAllocate, note, strings.Join(strs, ", "), req.groupRef)
		return
	}
	r.event(svc, req.g, corev1.EventTypeNormal, ReasonIPAllocated, actionAllocate, note, strings.Join(strs, ", "), req.groupRef)
}

// sameIngress reports whether the Service already shows exactly these
// addresses, in this order, with ipMode VIP.
func sameIngress(svc *corev1.Service, addrs []netip.Addr) bool {
	in := svc.Status.LoadBalancer.Ingress
	if len(in) != len(addrs) {
		return false
	}
	for i, x := range addrs {
		if in[i].IP != x.String() || in[i].Hostname != "" || in[i].IPMode == nil || *in[i].IPMode != corev1.LoadBalancerIPModeVIP {
			return false
		}
	}
	return true
}

// allocatedHere reports whether the Service's addresses are the operator's
// to release: the status write that gave them was ours (our field manager
// owns status.loadBalancer.ingress in managedFields), this process gave it
// addresses the API server has since cleared (a type change), or the
// Service carries the finalizer earlier versions of the operator set on every
// allocation. Ingress that another load balancer wrote is never touched.
//
// The record is managedFields and not a finalizer of our own, which was a
// second write per allocation (2,000 of them at 5,000 Services) and nothing
// to clean up on delete: a deleted Service's addresses are free because it
// is gone from the cache the allocator reads.
func (r *ServiceReconciler) allocatedHere(svc *corev1.Service) bool {
	if controllerutil.ContainsFinalizer(svc, serviceFinalizer) {
		return true
	}
	if len(svc.Status.LoadBalancer.Ingress) > 0 && ownsIngress(svc.ManagedFields) {
		return true
	}
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	r.alloc.mu.Lock()
	defer r.alloc.mu.Unlock()
	return len(r.alloc.heldBy(self)) > 0
}

// ownsIngress reports whether our field manager's status entry in
// managedFields holds status.loadBalancer.ingress.
func ownsIngress(entries []metav1.ManagedFieldsEntry) bool {
	for _, e := range entries {
		if e.Manager != fieldOwner || e.Subresource != "status" || e.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]map[string]json.RawMessage
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields["f:status"]["f:loadBalancer"]["f:ingress"]; ok {
			return true
		}
	}
	return false
}

// ingressApply is an apply configuration of the Service's current
// status.loadBalancer.ingress, as it is.
func ingressApply(svc *corev1.Service) *corev1ac.ServiceApplyConfiguration {
	lb := corev1ac.LoadBalancerStatus()
	for _, in := range svc.Status.LoadBalancer.Ingress {
		x := corev1ac.LoadBalancerIngress()
		if in.IP != "" {
			x.WithIP(in.IP)
		}
		if in.Hostname != "" {
			x.WithHostname(in.Hostname)
		}
		if in.IPMode != nil {
			x.WithIPMode(*in.IPMode)
		}
		for _, p := range in.Ports {
			ps := corev1ac.PortStatus().WithPort(p.Port).WithProtocol(p.Protocol)
			if p.Error != nil {
				ps.WithError(*p.Error)
			}
			x.WithPorts(ps)
		}
		lb.WithIngress(x)
	}
	return corev1ac.Service(svc.Name, svc.Namespace).WithStatus(corev1ac.ServiceStatus().WithLoadBalancer(lb))
}

// forget drops what this process remembers of a deleted Service and
// returns the Services waiting for an address of its group, woken when it
// had any.
func (r *ServiceReconciler) forget(svc *corev1.Service) []types.NamespacedName {
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	a := r.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	held := append(ingressAddrs(svc), a.heldBy(self)...)
	for _, x := range a.heldBy(self) {
		a.unhold(x)
	}
	ref, ok := groupOf(svc)
	if !ok {
		return nil
	}
	a.stopWaiting(ref, self)
	if len(held) == 0 {
		return nil
	}
	return a.takeWaiting(ref)
}

// release removes the Service's addresses from its status (and the
// finalizer earlier versions set), and wakes the Services waiting for an
// address of its group.
func (r *ServiceReconciler) release(ctx context.Context, svc *corev1.Service, groupValue string) error {
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	a := r.alloc
	a.mu.Lock()
	held := ingressAddrs(svc)
	if len(held) == 0 {
		// The API server clears status.loadBalancer when the type
		// changes away from LoadBalancer; what we had given is in memory.
		held = a.heldBy(self)
	}
	if len(svc.Status.LoadBalancer.Ingress) > 0 {
		svc.Status.LoadBalancer.Ingress = nil
		if err := r.Client.Status().Update(ctx, svc, client.FieldOwner(fieldOwner)); err != nil {
			a.mu.Unlock()
			return err
		}
	}
	a.record(self, held, nil)
	var woken []types.NamespacedName
	if ref, err := parseGroupRef(groupValue); err == nil {
		a.stopWaiting(ref, self)
		if len(held) > 0 {
			woken = a.takeWaiting(ref)
		}
	}
	a.mu.Unlock()

	if controllerutil.RemoveFinalizer(svc, serviceFinalizer) {
		if err := r.Client.Update(ctx, svc, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if len(held) > 0 {
		strs := make([]string, len(held))
		for i, x := range held {
			strs[i] = x.String()
		}
		if svc.DeletionTimestamp == nil {
			r.event(svc, nil, corev1.EventTypeNormal, ReasonIPReleased, actionRelease, "released %s", strings.Join(strs, ", "))
		}
	}
	for _, w := range woken {
		s := &corev1.Service{}
		s.Namespace, s.Name = w.Namespace, w.Name
		r.wake <- event.GenericEvent{Object: s}
	}
	return nil
}

func (r *ServiceReconciler) event(svc *corev1.Service, related *v1alpha1.KeepalivedGroup, typ, reason, action, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	if related == nil {
		r.Recorder.Eventf(serviceRef(svc), nil, typ, reason, action, note, args...)
		return
	}
	r.Recorder.Eventf(serviceRef(svc), groupRef(related), typ, reason, action, note, args...)
}

func familyStrings(fs []corev1.IPFamily) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

func policyString(p *corev1.IPFamilyPolicy) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
