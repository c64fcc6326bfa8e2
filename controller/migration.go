package controller

// Taking a group over from keepalived-operator.
//
// keepalived-operator made, for each KeepalivedGroup, a DaemonSet and a
// ConfigMap named after the group and (with the Prometheus operator) a
// PodMonitor and a Role and RoleBinding "<group>-prometheus-k8s", all with
// the group as their controller. Its pods run keepalived on the host network
// of the same nodes vrrpd runs on, with keepalived's defaults: VRRPv2,
// advert_int 1, priority 100 (200 for the owner of a spreadvips address),
// preemption on, the group's router IDs and its password. Left alone, they
// hold the VIPs next to vrrpd. The takeover (ARCHITECTURE.md, "Migration"):
//
//  1. Shadowing: the old DaemonSet is found. vrrpd runs every instance as
//     the old pods do (version, password, router ID, advert_int 1s), below
//     their priority, without preemption and handover-only: it becomes master
//     only when a master hands over with a priority-0 advertisement, never on
//     silence, because the old pod on its own node sends from its own address
//     and vrrpd cannot hear it (neither loops multicast back).
//  2. Handover: once vrrpd's DaemonSet is ready on every node (and has been
//     for migrationDwell), the operator deletes the old objects. The kubelets
//     stop the old pods; a stopping keepalived master sends priority 0 and
//     removes its VIPs, and the highest vrrpd backup takes over after
//     Skew_Time. A keepalived backup still running has the higher priority,
//     so it wins that race, and hands over in turn when it stops.
//  3. Settling: no old pod is left. The shadow settings stay for
//     migrationDwell, then the group moves to its own settings (version,
//     priorities, preemption); a master moving from VRRPv2 to v3 stays master
//     (vrrp.Config.HandoverOnly), the backups switch with it.

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

const (
	// oldPodLabel is keepalived-operator's pod label and DaemonSet selector,
	// whose value is the group's name.
	oldPodLabel = "keepalivedGroup"
	// defaultMigrationDwell is how long vrrpd must have been ready before the
	// old pods are stopped, and how long the shadow settings outlive the last
	// old pod: a few advertisement intervals of the old pods (1s), so every
	// vrrpd has its instances running before, and every handover has ended
	// after.
	defaultMigrationDwell = 5 * time.Second
	// migrationPoll is how often a group in migration is looked at again: the
	// DaemonSet's readiness and the pods' disappearance trigger no reconcile.
	migrationPoll = time.Second
	// shadowTop and shadowStep are vrrpd's priorities while it shadows the
	// old pods: below keepalived's 100, so a living old pod always wins a
	// takeover race (its Skew_Time is shorter), and far enough apart that
	// between two vrrpd backups the Skew_Time race is decided by tens of
	// milliseconds, not by timer jitter.
	shadowTop  = 99
	shadowStep = 8

	actionMigrate = "Migrate"
)

// oldDaemonSet returns keepalived-operator's DaemonSet of g, or nil: named
// after the group, controlled by it, selecting pods by oldPodLabel.
func (r *GroupReconciler) oldDaemonSet(ctx context.Context, g *v1alpha1.KeepalivedGroup) (*appsv1.DaemonSet, error) {
	var ds appsv1.DaemonSet
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: g.Namespace, Name: g.Name}, &ds)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if !controlledBy(&ds, g) || ds.Spec.Selector == nil || ds.Spec.Selector.MatchLabels[oldPodLabel] != g.Name {
		return nil, nil
	}
	return &ds, nil
}

// controlledBy reports whether g is o's controller.
func controlledBy(o metav1.Object, g *v1alpha1.KeepalivedGroup) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.UID == g.UID && ref.Kind == "KeepalivedGroup"
}

// reader is the uncached API reader when there is one: the old objects'
// kinds are looked up only during a migration, and caching every ConfigMap
// and Pod of the cluster for that would cost the operator far more.
func (r *GroupReconciler) reader() client.Reader {
	if r.Reader != nil {
		return r.Reader
	}
	return r.Client
}

// oldCompanions returns keepalived-operator's other objects of g that still
// exist: ConfigMap, ServiceAccount, Role, RoleBinding and PodMonitor, each
// only when g controls it.
func (r *GroupReconciler) oldCompanions(ctx context.Context, g *v1alpha1.KeepalivedGroup) ([]client.Object, error) {
	prom := g.Name + "-prometheus-k8s"
	cands := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: g.Name}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: g.Name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: prom}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: prom}},
	}
	if served, _ := r.podMonitorServed(); served {
		pm := &unstructured.Unstructured{}
		pm.SetGroupVersionKind(podMonitorGVK)
		pm.SetName(g.Name)
		cands = append(cands, pm)
	}
	var out []client.Object
	for _, o := range cands {
		err := r.reader().Get(ctx, types.NamespacedName{Namespace: g.Namespace, Name: o.GetName()}, o)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, err
		}
		if controlledBy(o, g) && o.GetDeletionTimestamp() == nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// oldPods counts keepalived-operator's pods of g that still exist.
func (r *GroupReconciler) oldPods(ctx context.Context, g *v1alpha1.KeepalivedGroup) (int, error) {
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.reader().List(ctx, &pods, client.InNamespace(g.Namespace), client.MatchingLabels{oldPodLabel: g.Name}); err != nil {
		return 0, err
	}
	return len(pods.Items), nil
}

// vrrpdReady reports whether the group's own DaemonSet runs an up-to-date,
// ready vrrpd on every node it should, and if not, why.
func (r *GroupReconciler) vrrpdReady(ctx context.Context, g *v1alpha1.KeepalivedGroup) (bool, string, error) {
	var ds appsv1.DaemonSet
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: g.Namespace, Name: ownedName(g)}, &ds); err != nil {
		if apierrors.IsNotFound(err) {
			return false, "DaemonSet " + ownedName(g) + " not created yet", nil
		}
		return false, "", err
	}
	st := ds.Status
	switch {
	case st.ObservedGeneration < ds.Generation:
		return false, "DaemonSet " + ds.Name + " not rolled out yet", nil
	case st.DesiredNumberScheduled == 0:
		return false, "DaemonSet " + ds.Name + " has no pod scheduled", nil
	case st.NumberReady < st.DesiredNumberScheduled || st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		return false, fmt.Sprintf("DaemonSet %s: %d of %d vrrpd pods ready", ds.Name, st.NumberReady, st.DesiredNumberScheduled), nil
	}
	return true, "", nil
}

// oldVersion is the VRRP version keepalived-operator's pods run for g:
// keepalived's default 2 unless spec.verbatimConfig sets vrrp_version.
func oldVersion(g *v1alpha1.KeepalivedGroup) int32 {
	if strings.TrimSpace(g.Spec.VerbatimConfig["vrrp_version"]) == "3" {
		return 3
	}
	return 2
}

// migrate moves g's takeover from keepalived-operator one step on and
// returns the status.migration to write (nil when none is under way or it
// has just ended) and when to look again.
func (r *GroupReconciler) migrate(ctx context.Context, g *v1alpha1.KeepalivedGroup, now time.Time) (*v1alpha1.Migration, time.Duration, error) {
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	dwell := r.MigrationDwell
	if dwell <= 0 {
		dwell = defaultMigrationDwell
	}
	cur := g.Status.Migration
	ov := oldVersion(g)
	if cur != nil {
		ov = cur.OldVersion // what the old pods were started with
	}
	phase := func(p v1alpha1.MigrationPhase) *v1alpha1.Migration {
		if cur != nil && cur.Phase == p {
			c := *cur
			return &c
		}
		return &v1alpha1.Migration{Phase: p, Since: metav1.NewTime(now.Truncate(time.Second)), OldVersion: ov}
	}

	ds, err := r.oldDaemonSet(ctx, g)
	if err != nil {
		return cur, migrationPoll, err
	}
	if ds != nil && ds.DeletionTimestamp == nil {
		m := phase(v1alpha1.MigrationShadowing)
		if cur == nil || cur.Phase != v1alpha1.MigrationShadowing {
			r.event(g, v1alpha1.ReasonKeepalivedOperatorObjects,
				"found keepalived-operator's DaemonSet %s: vrrpd runs its instances as VRRPv%d backups below the old pods until its own DaemonSet %s is ready, then the old objects are deleted",
				ds.Name, m.OldVersion, ownedName(g))
		}
		ready, why, err := r.vrrpdReady(ctx, g)
		if err != nil {
			return m, migrationPoll, err
		}
		r.mu.Lock()
		readyAt, seen := r.readySince[key]
		if !ready {
			delete(r.readySince, key)
		} else if !seen {
			r.readySince[key] = now
			readyAt = now
		}
		r.mu.Unlock()
		if !ready {
			log.FromContext(ctx).V(1).Info("migration: waiting for vrrpd", "why", why)
			return m, migrationPoll, nil
		}
		if wait := dwell - now.Sub(readyAt); wait > 0 {
			return m, wait, nil
		}
		deleted, err := r.deleteOld(ctx, g, ds)
		if err != nil {
			return m, migrationPoll, err
		}
		r.mu.Lock()
		delete(r.readySince, key)
		r.mu.Unlock()
		r.event(g, v1alpha1.ReasonOldPodsStopping,
			"vrrpd is ready on every node: deleted keepalived-operator's %s; its pods hand their VIPs over to vrrpd as they stop", strings.Join(deleted, ", "))
		cur = nil // a new phase begins now
		return phase(v1alpha1.MigrationHandover), migrationPoll, nil
	}
	if cur == nil {
		return nil, 0, nil
	}

	switch cur.Phase {
	case v1alpha1.MigrationShadowing, v1alpha1.MigrationHandover:
		// The old DaemonSet is gone (or going); whatever else is left goes too.
		if _, err := r.deleteOld(ctx, g, nil); err != nil {
			return cur, migrationPoll, err
		}
		n, err := r.oldPods(ctx, g)
		if err != nil {
			return cur, migrationPoll, err
		}
		if n > 0 {
			return phase(v1alpha1.MigrationHandover), migrationPoll, nil
		}
		cur = nil
		return phase(v1alpha1.MigrationSettling), dwell, nil
	case v1alpha1.MigrationSettling:
		if wait := dwell - now.Sub(cur.Since.Time); wait > 0 {
			return phase(v1alpha1.MigrationSettling), wait, nil
		}
		r.event(g, v1alpha1.ReasonMigrated,
			"keepalived-operator's pods are gone: the group runs its own settings (VRRPv%d)", groupSettings(g).Version)
		return nil, 0, nil
	}
	return nil, 0, nil
}

// deleteOld deletes the old DaemonSet (when given) and the old companions,
// and names what it deleted. The garbage collector removes the DaemonSet's
// pods in the background, and their kubelets stop them.
func (r *GroupReconciler) deleteOld(ctx context.Context, g *v1alpha1.KeepalivedGroup, ds *appsv1.DaemonSet) ([]string, error) {
	objs, err := r.oldCompanions(ctx, g)
	if err != nil {
		return nil, err
	}
	if ds != nil {
		objs = append([]client.Object{ds}, objs...)
	}
	var names []string
	for _, o := range objs {
		uid := o.GetUID()
		err := r.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return names, fmt.Errorf("deleting keepalived-operator's %s: %w", kindName(o), err)
		}
		names = append(names, kindName(o))
	}
	return names, nil
}

func kindName(o client.Object) string {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = strings.TrimPrefix(fmt.Sprintf("%T", o), "*v1.")
	}
	return kind + " " + o.GetName()
}

func (r *GroupReconciler) event(g *v1alpha1.KeepalivedGroup, reason, format string, a ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(groupRef(g), nil, corev1.EventTypeNormal, reason, actionMigrate, format, a...)
	}
}

// shadowInstances turns the group's instances into what vrrpd runs while
// the old pods live: their version, advert_int 1s, no preemption,
// handover-only, the group's password and unicast setting, the same router
// IDs, and priorities below keepalived's 100 in the placement's order. A
// VRRPv2 shadow carries no IPv6 VIP (the old pods never served one), and an
// instance left without VIPs is not run.
func shadowInstances(ins []v1alpha1.Instance, nodes int, version int32) []v1alpha1.Instance {
	out := make([]v1alpha1.Instance, 0, len(ins))
	for _, in := range ins {
		s := in.Settings
		s.Version = version
		s.AdvertInterval = metav1.Duration{Duration: time.Second}
		s.Preempt = false
		s.V3ChecksumAsV2 = false
		s.HandoverOnly = true
		in.Settings = s
		if version == 2 {
			var v4 []string
			for _, v := range in.VIPs {
				if a, err := netip.ParseAddr(v); err == nil && a.Unmap().Is4() {
					v4 = append(v4, v)
				}
			}
			if len(v4) == 0 {
				continue
			}
			in.VIPs = v4
		}
		if prios, err := v1alpha1.DecodePriorities(in.Priorities, nodes); err == nil {
			in.Priorities = v1alpha1.EncodePriorities(shadowPriorities(prios, in.Settings.HealthCheck != nil))
		}
		out = append(out, in)
	}
	return out
}

// shadowPriorities keeps the order of prios and maps it below keepalived's
// 100: the highest gets shadowTop, each next one shadowStep less, down to 1.
// PriorityNotMember stays.
//
// A health-checked instance (checked) keeps every member above half of
// shadowTop, as placement.HealthChecked keeps them above half of 254, so that
// vrrpd's check weight (placement.CheckWeight) still puts its nodes without
// a local endpoint below the others and apart from each other during the
// takeover, when the old pods' priority-0 goodbyes send them all racing: up
// to 7 members at shadowStep, narrower steps up to 49, the plain countdown
// past that.
func shadowPriorities(prios []uint8, checked bool) []uint8 {
	step := shadowStep
	if n := len(prios) - strings.Count(string(prios), "\x00"); checked && n > 1 {
		// The lowest member must stay above (shadowTop+1)/2.
		if s := (shadowTop - (shadowTop+1)/2 - 1) / (n - 1); s >= 1 {
			step = min(step, s)
		}
	}
	out := make([]uint8, len(prios))
	for i, p := range prios {
		if p == v1alpha1.PriorityNotMember {
			continue
		}
		rank := 0
		for _, q := range prios {
			if q > p {
				rank++
			}
		}
		out[i] = uint8(max(1, shadowTop-step*rank))
	}
	return out
}

// migrationCondition sets Migrating from m: true with the phase while a
// takeover is under way, false (Migrated) once one has ended; absent for a
// group that never had one.
func migrationCondition(st *v1alpha1.KeepalivedGroupStatus, gen int64, m *v1alpha1.Migration) {
	if m == nil {
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionMigrating); c != nil && c.Status == metav1.ConditionTrue {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionMigrating, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonMigrated, Message: "taken over from keepalived-operator; the group runs its own settings", ObservedGeneration: gen})
		}
		return
	}
	reason, msg := v1alpha1.ReasonKeepalivedOperatorObjects,
		fmt.Sprintf("keepalived-operator's pods run; vrrpd shadows them (VRRPv%d, below their priority, handover only) until its DaemonSet is ready", m.OldVersion)
	switch m.Phase {
	case v1alpha1.MigrationHandover:
		reason, msg = v1alpha1.ReasonOldPodsStopping, "keepalived-operator's objects are deleted; its pods hand their VIPs over to vrrpd as they stop"
	case v1alpha1.MigrationSettling:
		reason, msg = v1alpha1.ReasonSettling, "keepalived-operator's pods are gone; the group moves to its own settings shortly"
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionMigrating, Status: metav1.ConditionTrue,
		Reason: reason, Message: msg, ObservedGeneration: gen})
}
