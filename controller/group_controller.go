package controller

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/ipam"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
)

// podMonitorGVK is the Prometheus operator's PodMonitor, created only when
// the cluster serves it.
var podMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// GroupReconciler computes a KeepalivedGroup's status (member nodes,
// instances, router IDs, priorities) and keeps its vrrpd DaemonSet, RBAC
// and PodMonitor in place.
type GroupReconciler struct {
	Client   client.Client
	Mapper   meta.RESTMapper
	Recorder recorder.EventRecorder
	// Reader reads without the cache (the manager's API reader): the
	// objects of keepalived-operator looked up during a migration.
	Reader client.Reader
	// Options are Setup's, the defaults filled in: the vrrpd image and
	// resources, the policy lists (policy.go), the SCC ClusterRole, the
	// migration's dwell, the PodMonitor's labels and recheck.
	Options

	podSecurity podSecurityReports

	// viewSync reports whether the operator's view of the Services is
	// complete (ServiceReconciler.viewSync); nil: always.
	viewSync func() bool

	// pending tells which groups have LoadBalancer Services waiting for
	// an address (pending.go); their status write waits for those. Nil:
	// never wait.
	pending *pendingAllocations
	// grants: who held each address of the shared routers in the last
	// status this process wrote (grantrecord.go), shared with the
	// ServiceReconciler's vetters. Nil: nothing remembered.
	grants *grantLedger

	// segments serialise the reconciles of the groups of one segment
	// (their router IDs come from one space), while groups on different
	// segments reconcile in parallel (Options.GroupWorkers).
	segments segmentLocks

	mu sync.Mutex
	// published holds the router IDs this process last wrote to each
	// group's status. Reconciles of one segment's groups run one at a
	// time, so these are the newest IDs even when the cache has not
	// caught up with our own write; other groups on the same segment must
	// avoid them.
	published map[types.NamespacedName]map[string]int
	// absentUntil: until then, the kind is taken as not served
	// (served).
	absentUntil map[schema.GroupKind]time.Time
	// ownedFor: the generation of each group whose owned objects a
	// reconcile that put off its status has applied.
	ownedFor map[types.NamespacedName]int64
	// priorities: each group's last plan's priorities (priorityMemo).
	priorities map[types.NamespacedName]*priorityMemo
	// leftOut remembers which Services were told they were left out, and
	// why (the Event's reason), so the Event is sent once per episode
	// rather than on every reconcile.
	leftOut map[types.NamespacedName]map[types.NamespacedName]string
	// held paces the Events on Services left out (reportLeftOut); nil:
	// sent at once.
	held *heldEvents
	// applied remembers the hash of the last applied form of each owned
	// object, so an unchanged group costs no API writes.
	applied map[string][32]byte
	// readySince is when a migrating group's vrrpd DaemonSet was first seen
	// ready (migration.go).
	readySince map[types.NamespacedName]time.Time
	// written is each group's last status write (catchUp).
	written map[types.NamespacedName]statusWrite
	// moveClocks: when each shared group's instances appeared (sharingmoves.go).
	moveClocks moveClocks
	// leaveClocks: since when each leaving node was kept (leaving.go), under mu.
	leaveClocks leaveClocks
}

// statusWrite is a status this reconciler wrote: the group's resourceVersion
// before and after the write, and the status.
type statusWrite struct {
	before, after string
	status        v1alpha1.KeepalivedGroupStatus
}

func (r *GroupReconciler) init() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.published == nil {
		r.published = map[types.NamespacedName]map[string]int{}
		r.leftOut = map[types.NamespacedName]map[types.NamespacedName]string{}
		r.applied = map[string][32]byte{}
		r.priorities = map[types.NamespacedName]*priorityMemo{}
		r.ownedFor = map[types.NamespacedName]int64{}
		r.readySince = map[types.NamespacedName]time.Time{}
		r.written = map[types.NamespacedName]statusWrite{}
		r.absentUntil = map[schema.GroupKind]time.Time{}
	}
}

// Reconcile brings one group's status and owned objects up to date.
func (r *GroupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcile(ctx, req, r.reconcileStatus)
}

// reconcileFunc is a reconcile's signature: reconcileStatus's, which the tests wrap to
// count the reconciles that compute a status (setup).
type reconcileFunc = func(context.Context, ctrl.Request) (ctrl.Result, error)

// reconcile is Reconcile with its status step given: while the group's LoadBalancer
// Services are being given addresses, the status waits for them (putOff); otherwise
// status computes and writes it.
func (r *GroupReconciler) reconcile(ctx context.Context, req ctrl.Request, status reconcileFunc) (ctrl.Result, error) {
	r.init()
	wait, observed := r.deferForAllocations(ctx, req.NamespacedName)
	if wait > 0 {
		return r.putOff(ctx, req, wait, observed)
	}
	return status(ctx, req)
}

// load reads the group a reconcile is for. Nil, with nothing more to do, when it is gone
// (forgotten), being deleted (the garbage collector removes the owned objects) or not in
// a namespace the operator serves (refuseGroup's error, if any).
func (r *GroupReconciler) load(ctx context.Context, req ctrl.Request) (*v1alpha1.KeepalivedGroup, error) {
	var g v1alpha1.KeepalivedGroup
	if err := r.Client.Get(ctx, req.NamespacedName, &g); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return nil, r.groupGone(ctx, req.NamespacedName)
		}
		return nil, err
	}
	if g.DeletionTimestamp != nil {
		// The garbage collector removes the owned objects; a PodMonitor in the
		// shared namespace is not owned (podmonitor.go).
		forgetGroupMetrics(req.NamespacedName)
		return nil, r.groupGone(ctx, req.NamespacedName)
	}
	if !r.groupAllowed(&g) {
		return nil, r.refuseGroup(ctx, &g)
	}
	return &g, nil
}

// putOff is a reconcile while the group's Services are being given addresses: when its
// status already reflects its spec (observed), it only waits; a new or changed group
// gets its DaemonSet and the rest now, its status (with those addresses) when they are
// done.
func (r *GroupReconciler) putOff(ctx context.Context, req ctrl.Request, wait time.Duration, observed bool) (ctrl.Result, error) {
	if observed {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	g, err := r.load(ctx, req)
	if g == nil {
		return ctrl.Result{}, err
	}
	// Once per generation: the wait rechecks every pendingRecheck.
	r.mu.Lock()
	done := r.ownedFor[req.NamespacedName] == g.Generation
	r.mu.Unlock()
	if !done {
		img := effectiveImage(g.Spec.Image, r.VrrpdImage, r.AllowedImages)
		if err := r.applyOwned(ctx, g, img.image); err != nil {
			return ctrl.Result{}, err
		}
		r.checkPodSecurity(ctx, g)
		r.mu.Lock()
		r.ownedFor[req.NamespacedName] = g.Generation
		r.mu.Unlock()
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// reconcileStatus computes the group's status from its Services and Nodes, applies its
// owned objects, and writes the status.
func (r *GroupReconciler) reconcileStatus(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	g, err := r.load(ctx, req)
	if g == nil {
		return ctrl.Result{}, err
	}
	unlock := r.segments.lock(r.segment(g))
	defer unlock()
	r.catchUp(g)

	p, granted, v, err := r.planGroup(ctx, g)
	if err != nil {
		return ctrl.Result{}, err
	}

	img := effectiveImage(g.Spec.Image, r.VrrpdImage, r.AllowedImages)
	applyErr := r.applyOwned(ctx, g, img.image)
	r.checkPodSecurity(ctx, g)

	// A takeover from keepalived-operator replaces the instances' settings
	// and priorities with the old pods' while it lasts (migration.go).
	mig, requeue, migErr := r.migrate(ctx, g, time.Now())
	if mig != nil && p.shared {
		// A takeover that starts now: the old pods run one instance per
		// Service, which vrrpd must shadow, so no sharing until it settles
		// (sharingApplies).
		gm := *g
		gm.Status.Migration = mig
		if p, granted, v, err = r.planGroup(ctx, &gm); err != nil {
			return ctrl.Result{}, err
		}
	}
	if mig == nil && g.Status.Migration != nil && !p.shared && g.Spec.RouterSharing != v1alpha1.RouterSharingPerService {
		// The takeover ends with this write, still one instance per Service
		// (the plan was made with status.migration set), now at the group's
		// own settings. Its conversion to shared routers (sharingmoves.go)
		// starts at the next reconcile, which nothing else may bring (a status
		// write of our own reconciles nothing): once the preemptions the own
		// settings bring had a Master_Down_Interval, so that the conversion
		// finds each address on its top node.
		wait := time.Second
		if len(p.instances) > 0 {
			wait = moveWait(p.instances[0].Settings)
		}
		if requeue == 0 || wait < requeue {
			requeue = wait
		}
	}
	if p.shared {
		// Moves between shared routers go in phases (sharingmoves.go).
		wait, err := r.stageSharedMoves(ctx, g, &p.plan)
		if err != nil {
			return ctrl.Result{}, err
		}
		if wait > 0 && (requeue == 0 || wait < requeue) {
			requeue = wait
		}
	}
	if p.drainWait > 0 && (requeue == 0 || p.drainWait < requeue) {
		// A node leaving is dropped once it is drained (leaving.go).
		requeue = p.drainWait
	}
	untold := r.reportLeftOut(g, p.services, p.plan)
	r.reportRenumbered(g, p.plan)
	if mig != nil {
		p.instances = shadowInstances(p.instances, len(p.nodes), mig.OldVersion)
	}
	st := statusInputs{plan: p.plan, img: img, mig: mig, granted: granted, contested: contestedGrants(v, granted, g.Status.ContestedGrants, p.shared)}
	if err := r.writeStatusAndRBAC(ctx, g, st, &applyErr); err != nil {
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	r.published[req.NamespacedName] = publishedIDs(p.plan)
	r.mu.Unlock()
	if applyErr == nil {
		applyErr = migErr
	}
	if untold && (requeue == 0 || requeue > leftOutRetry) {
		// Some left-out Services' Events did not fit the paced backlog
		// (reportLeftOut): they are told on a later reconcile.
		requeue = leftOutRetry
	}
	if v.deferred && (requeue == 0 || requeue > viewRetry) {
		// An address the view could not decide yet (vetter.deferred) is
		// left out until it can.
		requeue = viewRetry
	}
	return ctrl.Result{RequeueAfter: requeue}, applyErr
}

// groupPlan is a group's plan and the Services it was made from.
type groupPlan struct {
	plan
	services []corev1.Service
	// drainWait: when to look again at the leaving nodes kept (leaving.go), 0
	// when none is.
	drainWait time.Duration
}

// planGroup computes the group's plan: each Service's VIPs as the tenancy rules allow
// (granted), the member nodes, router IDs and priorities. The vetter says whether an
// address was left undecided (vetter.deferred).
func (r *GroupReconciler) planGroup(ctx context.Context, g *v1alpha1.KeepalivedGroup) (groupPlan, map[types.NamespacedName][]netip.Addr, *vetter, error) {
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	var services corev1.ServiceList
	if err := r.Client.List(ctx, &services, client.MatchingFields{indexServiceGroup: key.String()}); err != nil {
		return groupPlan{}, nil, nil, err
	}
	var nodes corev1.NodeList
	// Read-only: the cache's own objects, not copies (500 Nodes copied on
	// every reconcile were an eighth of the operator's CPU at scale).
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return groupPlan{}, nil, nil, err
	}
	reserved, err := r.reservedIDs(ctx, g)
	if err != nil {
		return groupPlan{}, nil, nil, err
	}
	// Each Service's VIPs as the tenancy rules allow (tenancy.go): a
	// refused address or namespace leaves out that address or Service,
	// never the group.
	v := newVetter(ctx, r.Client).withLedger(r.grants).withNodes(nodes.Items).withSynced(r.viewSync == nil || r.viewSync()).withGroupNamespaces(r.GroupNamespaces)
	v.seed(g, nodes.Items)
	granted := make(map[types.NamespacedName][]netip.Addr, len(services.Items))
	for i := range services.Items {
		svc := &services.Items[i]
		vips, _, err := v.vips(svc)
		if err != nil {
			return groupPlan{}, nil, nil, err
		}
		granted[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = vips
	}
	r.mu.Lock()
	memo := r.priorities[key]
	r.mu.Unlock()
	var anchors map[types.NamespacedName]string
	if sharingApplies(g) {
		anchors = sharedAnchors(services.Items, granted, v.holders)
	}
	// A node leaving a group with shared routers stays, excluded, until it is
	// drained (leaving.go).
	leaving, drainWait, err := r.leavingNodes(ctx, g, memberNodes(g, nodes.Items))
	if err != nil {
		return groupPlan{}, nil, nil, err
	}
	members := planNodes(g, nodes.Items, leaving)
	p := planMembers(g, services.Items, granted, anchors, members, reserved, memo)
	// The newest Services wait while the status would not fit (statussize.go).
	p = fitStatus(p, services.Items, func(kept []corev1.Service) plan {
		return planMembers(g, kept, granted, anchors, members, reserved, memo)
	})
	r.mu.Lock()
	r.priorities[key] = p.memo
	r.mu.Unlock()
	return groupPlan{plan: p, services: services.Items, drainWait: drainWait}, granted, v, nil
}

// statusInputs are what a group's status is built from besides the group itself.
type statusInputs struct {
	plan    plan
	img     imageChoice
	mig     *v1alpha1.Migration
	granted map[types.NamespacedName][]netip.Addr
	// contested is status.contestedGrants (grantrecord.go).
	contested map[string]string
}

// writeStatus writes the group's status from st and applyErr, unless it is unchanged,
// and remembers the write (catchUp).
func (r *GroupReconciler) writeStatus(ctx context.Context, g *v1alpha1.KeepalivedGroup, st statusInputs, applyErr error) error {
	status := buildStatus(g, st.plan, st.img, r.segment(g) != g.Spec.Segment, applyErr)
	status.Migration = st.mig
	status.ContestedGrants = st.contested
	migrationCondition(&status, g.Generation, st.mig)
	slices.SortFunc(status.Conditions, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	r.reportConditions(g, g.Status.Conditions, status.Conditions)
	recordGroupMetrics(g, &status, st.granted)
	ref := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	if equality.Semantic.DeepEqual(g.Status, status) {
		r.grants.record(ref, &st.plan)
		return nil
	}
	before := g.ResourceVersion
	g.Status = status
	if err := r.Client.Status().Update(ctx, g); err != nil {
		// A conflict means our cached copy was stale; the retry
		// starts from the newer one.
		return err
	}
	// At once, not after the reconcile: the Services' reconciles read the
	// new status as soon as the cache has it (grantrecord.go).
	r.grants.record(ref, &st.plan)
	r.mu.Lock()
	r.written[ref] = statusWrite{before: before, after: g.ResourceVersion, status: *g.Status.DeepCopy()}
	r.mu.Unlock()
	return nil
}

// writeStatusAndRBAC writes the status and applies the events RBAC alongside; an RBAC
// failure joins *applyErr and the status is written again with it.
//
// The status first: it is what every node's vrrpd waits for, and a new
// Service's VIP is late by whatever comes before it. The events RBAC
// goes alongside, not before: its Role names each Service, so a new
// Service rewrites it, and vrrpd needs it only to record who holds a
// VIP, at the earliest one Master_Down_Interval later. Alongside, not
// after: after, its two writes doubled the time a group reconcile held
// its worker once 5,000 Services had their addresses, the last 20
// groups' statuses waiting in turn (BenchmarkConvergence5000Services).
func (r *GroupReconciler) writeStatusAndRBAC(ctx context.Context, g *v1alpha1.KeepalivedGroup, st statusInputs, applyErr *error) error {
	// It gets copies: writeStatus refills g from the API server's answer.
	owner := &v1alpha1.KeepalivedGroup{TypeMeta: g.TypeMeta, ObjectMeta: *g.ObjectMeta.DeepCopy()}
	keys := servedKeys(st.plan.instances, st.plan.routerIDs)
	rbacDone := make(chan error, 1)
	go func() { rbacDone <- r.applyEventsRBAC(ctx, owner, keys) }()
	statusErr := r.writeStatus(ctx, g, st, *applyErr)
	rbacErr := <-rbacDone
	if statusErr != nil {
		return statusErr
	}
	if rbacErr != nil {
		// The status is written again with the error.
		*applyErr = errors.Join(*applyErr, fmt.Errorf("events RBAC: %w", rbacErr))
		if err := r.writeStatus(ctx, g, st, *applyErr); err != nil {
			return errors.Join(*applyErr, err)
		}
	}
	return nil
}

// deferForAllocations returns how long to put off the group's status
// while its LoadBalancer Services are being given addresses
// (pendingAllocations.wait; 0 for a group being deleted), and whether its
// status already reflects its spec (observed), in which case the whole
// reconcile waits.
func (r *GroupReconciler) deferForAllocations(ctx context.Context, group types.NamespacedName) (wait time.Duration, observed bool) {
	if r.pending == nil {
		return 0, false
	}
	var g v1alpha1.KeepalivedGroup
	// Only the generations are read: no copy of the large status.
	if err := r.Client.Get(ctx, group, &g, client.UnsafeDisableDeepCopy); err != nil || g.DeletionTimestamp != nil {
		return 0, false
	}
	return r.pending.wait(group), g.Status.ObservedGeneration == g.Generation
}

// catchUp brings g, read from the cache, up to this reconciler's own last
// status write when the cache has not seen it yet: a reconcile that follows
// at once (the Role it applied after the status, a second Service) then
// computes from the status it wrote, writes nothing when that is still
// right, and otherwise writes over that version, which the API server
// refuses as a conflict if anyone else has changed the group since. Without
// it such a reconcile writes over the stale version, is refused, and is
// retried after the queue's backoff.
func (r *GroupReconciler) catchUp(g *v1alpha1.KeepalivedGroup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.written[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}]
	if ok && g.ResourceVersion == w.before {
		g.ResourceVersion = w.after
		g.Status = *w.status.DeepCopy()
	}
}

func (r *GroupReconciler) forget(group types.NamespacedName) {
	r.grants.forget(group)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, group)
	delete(r.priorities, group)
	delete(r.ownedFor, group)
	delete(r.published, group)
	delete(r.leftOut, group)
	delete(r.readySince, group)
	r.moveClocks.forget(group)
	delete(r.leaveClocks.since, group)
	r.podSecurity.forget(group)
	forgetGroupMetrics(group)
	prefix := group.String() + "/"
	for k := range r.applied {
		if strings.HasPrefix(k, prefix) {
			delete(r.applied, k)
		}
	}
}

// before orders groups by age, then name: on a collision the later group
// yields.
func before(a, b *v1alpha1.KeepalivedGroup) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) < 0
}

// reservedIDs returns the router IDs g must not use: its blacklist, every
// ID of an earlier group on the same segment, and for new assignments every
// ID of a later group too. An ID g already holds that a later group also
// holds stays with g (the later group renumbers), so two groups that collide
// (for example status carried over from the original operator) converge.
func (r *GroupReconciler) reservedIDs(ctx context.Context, g *v1alpha1.KeepalivedGroup) (func(int) bool, error) {
	var blocked, laterOnly [256]bool
	for _, id := range g.Spec.BlacklistRouterIDs {
		if id >= 1 && id <= 255 {
			blocked[id] = true
		}
	}
	var groups v1alpha1.KeepalivedGroupList
	// Read-only: the cache's own objects. Copying every group's status on
	// each reconcile was 7 % of the operator's CPU while 10,000 Services
	// arrived in 20 groups (BenchmarkConvergence10000SharedServices).
	if err := r.Client.List(ctx, &groups, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	seg := r.segment(g)
	for i := range groups.Items {
		o := &groups.Items[i]
		// A group the operator runs nothing for holds no ID; every other
		// group counts, by the segment the operator gives it (not the one
		// it asks for).
		if o.UID == g.UID || !r.groupAllowed(o) || r.segment(o) != seg {
			continue
		}
		ids := statusIDs(&o.Status)
		r.mu.Lock()
		if pub, ok := r.published[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}]; ok {
			ids = pub
		}
		r.mu.Unlock()
		for _, id := range ids {
			if id < 1 || id > 255 {
				continue
			}
			if before(o, g) {
				blocked[id] = true
			} else {
				laterOnly[id] = true
			}
		}
	}
	var own [256]bool
	for _, id := range statusIDs(&g.Status) {
		if id >= 1 && id <= 255 {
			own[id] = true
		}
	}
	return func(id int) bool {
		return blocked[id] || (laterOnly[id] && !own[id])
	}, nil
}

// reportRenumbered sends one Warning Event on the group listing the
// instances whose router ID changed (from its status to the new plan): a
// collision with an earlier group of the segment (status carried over from
// the original operator, or two groups that were on separate segments
// before) or a blacklist change. The earlier group keeps its IDs; peers
// such as routers configured by hand must be told.
func (r *GroupReconciler) reportRenumbered(g *v1alpha1.KeepalivedGroup, p plan) {
	if r.Recorder == nil || len(p.renumbered) == 0 {
		return
	}
	parts := make([]string, len(p.renumbered))
	for i, k := range p.renumbered {
		old, now := g.Status.RouterIDs[k], p.routerIDs[k]
		if p.shared && strings.HasPrefix(k, sharing.RouterKeyPrefix) {
			// A shared router's ID is its instance's, not a routerIDs entry.
			for _, in := range g.Status.Instances {
				if in.Key == k {
					old = in.VRID
				}
			}
			for _, in := range p.instances {
				if in.Key == k {
					now = in.VRID
				}
			}
		}
		parts[i] = fmt.Sprintf("%s %d->%d", k, old, now)
	}
	r.Recorder.Eventf(groupRef(g), nil, corev1.EventTypeWarning, ReasonRouterIDRenumbered, actionAssignRouterID,
		"router IDs changed because an earlier group on segment %q holds them or they are blacklisted: %s", r.segment(g), strings.Join(parts, ", "))
}

// reportConditions sends an Event on the group when Degraded,
// ImageSubstituted or SegmentIgnored becomes true or changes its message, and
// when Degraded clears, so the group's Events tell its history without
// repeating. A refusal of the cluster admin's policy (an image not allowed, a
// segment ignored) is a Warning.
func (r *GroupReconciler) reportConditions(g *v1alpha1.KeepalivedGroup, old, now []metav1.Condition) {
	if r.Recorder == nil {
		return
	}
	for _, typ := range []string{v1alpha1.ConditionDegraded, v1alpha1.ConditionImageSubstituted, v1alpha1.ConditionSegmentIgnored} {
		was, is := meta.FindStatusCondition(old, typ), meta.FindStatusCondition(now, typ)
		if is == nil {
			continue
		}
		changed := was == nil || was.Status != is.Status || was.Message != is.Message
		switch {
		case !changed:
		case is.Status == metav1.ConditionTrue && (typ == v1alpha1.ConditionDegraded || is.Reason == v1alpha1.ReasonImageNotAllowed || typ == v1alpha1.ConditionSegmentIgnored):
			r.Recorder.Eventf(groupRef(g), nil, corev1.EventTypeWarning, is.Reason, actionReconcile, "%s", is.Message)
		case is.Status == metav1.ConditionTrue:
			r.Recorder.Eventf(groupRef(g), nil, corev1.EventTypeNormal, is.Reason, actionReconcile, "%s", is.Message)
		case typ == v1alpha1.ConditionDegraded && was != nil && was.Status == metav1.ConditionTrue:
			r.Recorder.Eventf(groupRef(g), nil, corev1.EventTypeNormal, "Recovered", actionReconcile, "no longer degraded: %s", is.Message)
		}
	}
}

// applyOwned server-side-applies the DaemonSet, ServiceAccount, Role,
// RoleBinding, KeepalivedMastership and (when the cluster serves it) PodMonitor. An object whose
// desired form is unchanged since this process last applied it, and that
// still exists, is not sent again.
func (r *GroupReconciler) applyOwned(ctx context.Context, g *v1alpha1.KeepalivedGroup, image string) error {
	name := types.NamespacedName{Namespace: g.Namespace, Name: ownedName(g)}
	owned := []struct {
		obj    runtime.ApplyConfiguration
		cached client.Object
	}{
		{desiredServiceAccount(g), &corev1.ServiceAccount{}},
		{desiredRole(g), &rbacv1.Role{}},
		{desiredRoleBinding(g), &rbacv1.RoleBinding{}},
		{desiredDaemonSet(g, image, vrrpdPodSettings{
			resources: r.VrrpdResources, pullPolicy: r.VrrpdImagePullPolicy, pullSecrets: r.VrrpdImagePullSecrets,
		}), &appsv1.DaemonSet{}},
	}
	var errs []string
	for _, o := range owned {
		kind := fmt.Sprintf("%T", o.cached)
		if err := r.applyIfChanged(ctx, g, kind, o.obj, func() bool {
			return r.Client.Get(ctx, name, o.cached) == nil
		}); err != nil {
			errs = append(errs, fmt.Sprintf("%s %s: %v", strings.TrimPrefix(kind, "*v1."), name.Name, err))
		}
	}
	if err := r.applySCCBinding(ctx, g); err != nil {
		errs = append(errs, fmt.Sprintf("RoleBinding %s: %v", sccBindingName(g), err))
	}
	if err := r.applyPrometheusBinding(ctx, g); err != nil {
		errs = append(errs, fmt.Sprintf("RoleBinding %s: %v", prometheusBindingName(g), err))
	}
	if err := r.applyMastership(ctx, g); err != nil {
		errs = append(errs, fmt.Sprintf("KeepalivedMastership %s: %v", g.Name, err))
	}
	if served, err := r.podMonitorServed(); served {
		desired := desiredPodMonitor(g, r.PodMonitorLabels)
		placePodMonitor(desired, g, r.PodMonitorNamespace)
		pm := client.ApplyConfigurationFromUnstructured(desired)
		if err := r.applyIfChanged(ctx, g, "PodMonitor", pm, nil); err != nil {
			errs = append(errs, fmt.Sprintf("PodMonitor %s/%s: %v", desired.GetNamespace(), desired.GetName(), err))
		}
		if err := r.dropOldPodMonitor(ctx, g); err != nil {
			errs = append(errs, fmt.Sprintf("deleting PodMonitor %s: %v", name.Name, err))
		}
	} else if err != nil {
		errs = append(errs, fmt.Sprintf("discovering PodMonitor: %v", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("applying owned objects: %s", strings.Join(errs, "; "))
	}
	return nil
}

// podMonitorServed reports whether the cluster serves PodMonitor
// (monitoring.coreos.com/v1); an error is one other than "no such kind".
func (r *GroupReconciler) podMonitorServed() (bool, error) {
	return r.served(podMonitorGVK)
}

// served reports whether the cluster serves gvk, a kind of an optional CRD; an error is
// one other than "no such kind". The RESTMapper asks the API server on every lookup of a
// kind it does not know, so "not served" stands for KindRecheck before it is asked again.
func (r *GroupReconciler) served(gvk schema.GroupVersionKind) (bool, error) {
	r.mu.Lock()
	notBefore := r.absentUntil[gvk.GroupKind()]
	r.mu.Unlock()
	if time.Now().Before(notBefore) {
		return false, nil
	}
	_, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		r.mu.Lock()
		r.absentUntil[gvk.GroupKind()] = time.Now().Add(r.KindRecheck)
		r.mu.Unlock()
		return false, nil
	}
	return false, err
}

func (r *GroupReconciler) applyIfChanged(ctx context.Context, g *v1alpha1.KeepalivedGroup, kind string, obj runtime.ApplyConfiguration, exists func() bool) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	memo := g.Namespace + "/" + g.Name + "/" + kind
	r.mu.Lock()
	same := r.applied[memo] == sum
	r.mu.Unlock()
	if same && (exists == nil || exists()) {
		return nil
	}
	if err := r.Client.Apply(ctx, obj, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	log.FromContext(ctx).V(1).Info("applied", "kind", kind)
	r.mu.Lock()
	r.applied[memo] = sum
	r.mu.Unlock()
	return nil
}

// buildStatus assembles the group's new status from the plan, keeping the
// existing conditions' transition times.
func buildStatus(g *v1alpha1.KeepalivedGroup, p plan, img imageChoice, segmentIgnored bool, applyErr error) v1alpha1.KeepalivedGroupStatus {
	st := v1alpha1.KeepalivedGroupStatus{
		ObservedGeneration: g.Generation,
		Conditions:         slices.Clone(g.Status.Conditions),
		RouterIDs:          p.routerIDs,
		NodeCount:          int32(len(p.nodes)),
		InstanceCount:      int32(len(p.instances)),
		Nodes:              p.nodes,
		Instances:          p.instances,
	}
	setConditions(&st, g, p, img, segmentIgnored, applyErr)
	return st
}

// setConditions fills Ready, Degraded, ImageSubstituted and SegmentIgnored.
// Messages depend only on the inputs, so an unchanged group keeps
// byte-identical status.
func setConditions(st *v1alpha1.KeepalivedGroupStatus, g *v1alpha1.KeepalivedGroup, p plan, img imageChoice, segmentIgnored bool, applyErr error) {
	gen := g.Generation
	set := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}

	var degraded []string
	reason := v1alpha1.ReasonReconciled
	if len(p.leftOut) > 0 && p.shared {
		degraded = append(degraded, describeLeftOutShared(p.leftOut, len(p.leftOutServices)))
		reason = v1alpha1.ReasonRouterIDsExhausted
	} else if len(p.leftOut) > 0 {
		degraded = append(degraded, describeLeftOut(p.leftOut))
		reason = v1alpha1.ReasonRouterIDsExhausted
	}
	if len(p.statusFull) > 0 {
		degraded = append(degraded, describeStatusFull(len(p.statusFull)))
		if reason == v1alpha1.ReasonReconciled {
			reason = v1alpha1.ReasonGroupStatusFull
		}
	}
	if ap := g.Spec.AddressPool; ap != nil {
		if _, err := ipam.Parse(rangesToStrings(ap.Addresses), rangesToStrings(ap.ExcludedAddresses)); err != nil {
			degraded = append(degraded, "addressPool: "+err.Error())
			if reason == v1alpha1.ReasonReconciled {
				reason = v1alpha1.ReasonInvalidAddressPool
			}
		}
	}
	if applyErr != nil {
		degraded = append(degraded, applyErr.Error())
		if reason == v1alpha1.ReasonReconciled {
			reason = v1alpha1.ReasonApplyFailed
		}
	}
	if len(degraded) > 0 {
		set(v1alpha1.ConditionDegraded, true, reason, strings.Join(degraded, "; "))
	} else {
		set(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonReconciled, "every instance has a router ID")
	}

	if applyErr != nil {
		set(v1alpha1.ConditionReady, false, v1alpha1.ReasonApplyFailed, applyErr.Error())
	} else {
		set(v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled,
			fmt.Sprintf("%d instance(s) on %d node(s)", len(p.instances), len(p.nodes)))
	}

	if g.Spec.PasswordAuth != nil && g.Spec.VRRPVersion == 0 {
		set(v1alpha1.ConditionPasswordAuthVRRPv2, true, v1alpha1.ReasonPasswordAuthWithoutVersion,
			"passwordAuth without vrrpVersion: the group runs VRRPv2 (as keepalived-operator did), the only version with authentication")
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionPasswordAuthVRRPv2)
	}

	switch img.reason {
	case v1alpha1.ReasonKeepalivedImage:
		set(v1alpha1.ConditionImageSubstituted, true, v1alpha1.ReasonKeepalivedImage,
			fmt.Sprintf("spec.image %q is a keepalived image; the DaemonSet runs vrrpd image %q instead", g.Spec.Image, img.image))
	case v1alpha1.ReasonImageNotAllowed:
		set(v1alpha1.ConditionImageSubstituted, true, v1alpha1.ReasonImageNotAllowed,
			fmt.Sprintf("spec.image %q is not an image the cluster admin allowed (the operator's --allowed-vrrpd-images); the DaemonSet runs vrrpd image %q instead", g.Spec.Image, img.image))
	default:
		set(v1alpha1.ConditionImageSubstituted, false, v1alpha1.ReasonVrrpdImage, fmt.Sprintf("the DaemonSet runs %q", img.image))
	}
	if segmentIgnored {
		set(v1alpha1.ConditionSegmentIgnored, true, v1alpha1.ReasonSegmentNotAllowed,
			fmt.Sprintf("spec.segment %q is not honoured in namespace %s (the operator's --segment-namespaces): the group shares the default router-ID space", g.Spec.Segment, g.Namespace))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionSegmentIgnored)
	}
	slices.SortFunc(st.Conditions, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
}

func rangesToStrings(rs []v1alpha1.AddressRange) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// applySCCBinding keeps the group's SCC RoleBinding as Options.SCCClusterRole
// says (keepClusterRoleBinding).
func (r *GroupReconciler) applySCCBinding(ctx context.Context, g *v1alpha1.KeepalivedGroup) error {
	return r.keepClusterRoleBinding(ctx, g, "SCCRoleBinding", sccBindingName(g), r.SCCClusterRole,
		func() *rbacv1ac.RoleBindingApplyConfiguration { return desiredSCCBinding(g, r.SCCClusterRole) })
}
