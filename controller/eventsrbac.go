package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
)

// vrrpd records an Event on a Service when its node becomes MASTER of one of the
// Service's VIPs or stops being it (internal/groupsource, EventRecorder). The Services of
// a group may live in any namespace, and an Event must be in its object's namespace, so
// the right lies in each of those namespaces. The least that does it:
//
//   - a Role per namespace that holds Services of the group, granting create on
//     events.k8s.io Events and get on exactly those Services (by name, for their UID,
//     which kubectl describe matches Events by), bound to the group's vrrpd
//     ServiceAccount by a RoleBinding;
//   - nothing in namespaces without Services of the group, and no patch or update (vrrpd
//     only creates Events), no list or watch of Services.
//
// A ClusterRole bound cluster-wide would be one object instead of two per namespace,
// but would let every node's vrrpd write Events into, and read the Services of, every
// namespace. The operator keeps the set in step with the group's instances: it applies
// the pairs for the namespaces the instances name and deletes the group's pairs in
// other namespaces. They carry the group in their labels; only those in the group's own
// namespace can be owned by it (owner references do not cross namespaces), so after the
// group is deleted the others stay behind, bound to a ServiceAccount that no longer
// exists, which grants nothing, until a group of that namespace and name takes them over.

// labelGroupNamespace is, with labelGroup, the group that an events Role belongs to.
const labelGroupNamespace = "redhatcop.redhat.io/keepalivedgroup-namespace"

// eventsRBACName names the events Role and RoleBinding of g in the namespaces of its
// Services: the group's namespace is in it, as groups of several namespaces may have
// Services in one.
func eventsRBACName(g *v1alpha1.KeepalivedGroup) string {
	return g.Namespace + "." + g.Name + "-vrrpd-events"
}

func eventsRBACLabels(g *v1alpha1.KeepalivedGroup) map[string]string {
	return map[string]string{labelName: "vrrpd", labelGroup: labelValue(g.Name), labelGroupNamespace: labelValue(g.Namespace)}
}

// servicesByNamespace lists, per namespace, the Services the instances serve (the first
// two parts of each key) and the members of shared routers (the keys of routerIDs,
// "ns/name" or "ns/name/ip"), sorted. A shared router's own key ("@class/...") names no
// Service, but vrrpd records its changes on each of its members (groupsource's
// routerMembers, from routerIDs), so their namespaces need the Role as much.
func servicesByNamespace(instances []v1alpha1.Instance, routerIDs map[string]int) map[string][]string {
	out := map[string][]string{}
	add := func(key string) {
		if strings.HasPrefix(key, sharing.RouterKeyPrefix) {
			return
		}
		parts := strings.SplitN(key, "/", 3)
		if len(parts) < 2 {
			return
		}
		if !slices.Contains(out[parts[0]], parts[1]) {
			out[parts[0]] = append(out[parts[0]], parts[1])
		}
	}
	for _, in := range instances {
		add(in.Key)
	}
	for key := range routerIDs {
		add(key)
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

func desiredEventsRole(g *v1alpha1.KeepalivedGroup, ns string, services []string) *rbacv1ac.RoleApplyConfiguration {
	r := rbacv1ac.Role(eventsRBACName(g), ns).
		WithLabels(eventsRBACLabels(g)).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("events.k8s.io").WithResources("events").WithVerbs("create"),
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("services").WithResourceNames(services...).WithVerbs("get"),
		)
	if ns == g.Namespace {
		r.WithOwnerReferences(ownerRef(g))
	}
	return r
}

func desiredEventsRoleBinding(g *v1alpha1.KeepalivedGroup, ns string) *rbacv1ac.RoleBindingApplyConfiguration {
	b := rbacv1ac.RoleBinding(eventsRBACName(g), ns).
		WithLabels(eventsRBACLabels(g)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(eventsRBACName(g))).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(ownedName(g)).WithNamespace(g.Namespace))
	if ns == g.Namespace {
		b.WithOwnerReferences(ownerRef(g))
	}
	return b
}

// applyEventsRBAC gives g's vrrpd the events Role and RoleBinding in each namespace of
// the instances' Services and the shared routers' members (routerIDs), and removes the
// group's pairs from other namespaces.
func (r *GroupReconciler) applyEventsRBAC(ctx context.Context, g *v1alpha1.KeepalivedGroup, instances []v1alpha1.Instance, routerIDs map[string]int) error {
	want := servicesByNamespace(instances, routerIDs)
	var errs []error
	for ns, services := range want {
		if err := r.applyIfChanged(ctx, g, "events Role "+ns, desiredEventsRole(g, ns, services), nil); err != nil {
			errs = append(errs, fmt.Errorf("Role %s/%s: %w", ns, eventsRBACName(g), err))
		}
		if err := r.applyIfChanged(ctx, g, "events RoleBinding "+ns, desiredEventsRoleBinding(g, ns), nil); err != nil {
			errs = append(errs, fmt.Errorf("RoleBinding %s/%s: %w", ns, eventsRBACName(g), err))
		}
	}
	// Stale pairs: the group's, in namespaces it no longer has Services in.
	sel := client.MatchingLabels(eventsRBACLabels(g))
	var roles rbacv1.RoleList
	var bindings rbacv1.RoleBindingList
	if err := r.Client.List(ctx, &roles, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing events Roles: %w", err))
	}
	if err := r.Client.List(ctx, &bindings, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing events RoleBindings: %w", err))
	}
	var stale []client.Object
	for i := range roles.Items {
		stale = append(stale, &roles.Items[i])
	}
	for i := range bindings.Items {
		stale = append(stale, &bindings.Items[i])
	}
	for _, o := range stale {
		if _, ok := want[o.GetNamespace()]; ok || o.GetName() != eventsRBACName(g) {
			continue
		}
		if err := r.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s/%s: %w", o.GetNamespace(), o.GetName(), err))
		}
		r.mu.Lock()
		delete(r.applied, g.Namespace+"/"+g.Name+"/events Role "+o.GetNamespace())
		delete(r.applied, g.Namespace+"/"+g.Name+"/events RoleBinding "+o.GetNamespace())
		r.mu.Unlock()
	}
	return errors.Join(errs...)
}
