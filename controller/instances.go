package controller

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/placement"
	"github.com/vrrp-operator/vrrp-operator/internal/vrid"
)

// plan is the computed part of a group's status plus what the reconciler
// must report about it. computePlan is pure: the same inputs give the same
// plan, which is what makes the status byte-identical for identical inputs.
type plan struct {
	nodes     []v1alpha1.GroupNode
	instances []v1alpha1.Instance
	routerIDs map[string]int
	// leftOut are the instance keys that got no router ID, sorted, and
	// leftOutServices the Services they belong to.
	leftOut         []string
	leftOutServices []types.NamespacedName
	// statusFull are the Services left out because the status would not
	// fit statusBudget with them (fitStatus), sorted.
	statusFull []types.NamespacedName
	// renumbered are the instance keys whose router ID changed, sorted.
	renumbered []string
	// memo: the priorities computed, for the next plan of the group.
	memo *priorityMemo
	// shared: the Services share routers (planShared); instances are then
	// routers keyed "@...", and Local Services' own instances.
	shared bool
	// members are the addresses of each member of a shared plan (a
	// Service, a spreadvips VIP, or a Local Service's own instance), and
	// memberRouter its router's key (the instance key for a Local one),
	// also when the router got no ID: stageMoves keeps such members where
	// the status has them.
	members      map[string][]netip.Addr
	memberRouter map[string]string
	// exactRanks is the shared plan's depth (sharing.ExactRanks).
	exactRanks int
	// deferred are the keys of the shared plan that got no ID only because
	// an ID freed in this write is not reused in it (assignSharedIDs); the
	// next write gives them one.
	deferred []string
	// unassigned are the deferred routers' instances (VRID 0), and adoptable
	// the IDs of the status' instances that the plan drops and no other group
	// reserves: stageMoves may give a deferred router one of them when its
	// instance's member moves in with it (adoption, §5).
	unassigned map[string]v1alpha1.Instance
	adoptable  map[int]bool
}

// instanceDraft is an instance before it has a router ID and priorities.
type instanceDraft struct {
	key     string
	service types.NamespacedName
	vips    []netip.Addr
	verb    map[string]string
	health  *v1alpha1.HealthCheck
}

// computePlan turns a group, the Services annotated for it and all Nodes
// into member nodes, instances, router IDs and priorities. reserved reports
// router IDs the group may not hand out (its blacklist and IDs of other
// groups on the same segment).
func computePlan(g *v1alpha1.KeepalivedGroup, services []corev1.Service, nodes []corev1.Node, reserved func(int) bool) plan {
	return planVetted(g, services, nil, nil, nodes, reserved, nil)
}

// priorityMemo keeps one group's instance priorities (placement.Priorities)
// from one reconcile to the next while its member nodes stay the same: at
// 250 instances and 500 nodes, ranking every node for every instance was
// half of a group reconcile's CPU, though a reconcile usually adds or
// changes a few instances. A nil memo computes everything.
type priorityMemo struct {
	names []string
	byKey map[string][]uint8
}

// priorities returns key's priorities over names, and keeps them in next
// (the memo of this reconcile, so keys that went away are dropped).
func (m *priorityMemo) priorities(key string, names []string, next *priorityMemo) []uint8 {
	if m != nil && slices.Equal(m.names, names) {
		if pr, ok := m.byKey[key]; ok {
			next.byKey[key] = pr
			return pr
		}
	}
	pr := placement.Priorities(key, names)
	if next != nil {
		next.byKey[key] = pr
	}
	return pr
}

// planVetted is computePlan with each Service's VIPs decided by the caller
// (vetter.vips: namespace admitted, addresses usable, held by this Service).
// A nil granted takes every Service's addresses as they are; with a non-nil
// one, a Service missing from it has no VIPs.
//
// memo holds the priorities of the group's previous plan (nil: none); the
// plan's own are returned in p.memo. anchors names, for a Service sharing
// an address with others (allow-shared-ip), the member key of the one
// granted it first (sharing.Service.Anchor); only shared routers use it.
func planVetted(g *v1alpha1.KeepalivedGroup, services []corev1.Service, granted map[types.NamespacedName][]netip.Addr, anchors map[types.NamespacedName]string, nodes []corev1.Node, reserved func(int) bool, memo *priorityMemo) plan {
	return planMembers(g, services, granted, anchors, memberNodes(g, nodes), reserved, memo)
}

// planMembers is planVetted over the group's nodes as given (planNodes: the selected
// members and the leaving nodes still kept, leaving.go), sorted by name.
func planMembers(g *v1alpha1.KeepalivedGroup, services []corev1.Service, granted map[types.NamespacedName][]netip.Addr, anchors map[types.NamespacedName]string, members []v1alpha1.GroupNode, reserved func(int) bool, memo *priorityMemo) plan {
	var p plan
	p.nodes = members
	names := make([]string, len(p.nodes))
	for i, n := range p.nodes {
		names[i] = n.Name
	}
	p.memo = &priorityMemo{names: names, byKey: map[string][]uint8{}}

	drafts := instanceDrafts(services, granted, groupSettings(g).Version)
	if sharingApplies(g) {
		p.shared = true
		planShared(g, &p, drafts, anchors, names, reserved, memo)
		return p
	}
	keys := make([]string, len(drafts))
	for i, d := range drafts {
		keys[i] = d.key
	}
	res := vrid.Assign(keys, g.Status.RouterIDs, reserved)
	p.leftOut = res.LeftOut
	p.renumbered = res.Renumbered
	if len(res.IDs) > 0 {
		p.routerIDs = res.IDs
	}

	// Priorities: independent rendezvous ranking per instance, except the
	// sibling instances of one spreadvips Service, placed together so
	// their VIPs get different masters.
	prios := make(map[string][]uint8, len(drafts))
	siblings := map[types.NamespacedName][]string{}
	for _, d := range drafts {
		if _, ok := res.IDs[d.key]; !ok {
			continue
		}
		if strings.Count(d.key, "/") == 2 {
			siblings[d.service] = append(siblings[d.service], d.key)
		} else if len(names) > 0 {
			prios[d.key] = memo.priorities(d.key, names, p.memo)
		}
	}
	if len(names) > 0 {
		for _, ks := range siblings {
			for k, pr := range placement.PlaceService(ks, names) {
				prios[k] = pr
			}
		}
	}

	settings := groupSettings(g)
	left := map[types.NamespacedName]bool{}
	for _, d := range drafts {
		id, ok := res.IDs[d.key]
		if !ok {
			if !left[d.service] {
				left[d.service] = true
				p.leftOutServices = append(p.leftOutServices, d.service)
			}
			continue
		}
		p.instances = append(p.instances, d.instance(id, settings, prios[d.key], p.nodes))
	}
	slices.SortFunc(p.instances, func(a, b v1alpha1.Instance) int { return cmp.Compare(a.Key, b.Key) })
	slices.SortFunc(p.leftOutServices, func(a, b types.NamespacedName) int { return cmp.Compare(a.String(), b.String()) })
	return p
}

// instance is d's status instance with router ID id, the group's settings
// and the placement's priorities pr over nodes (nodes excluded get 0).
func (d instanceDraft) instance(id int, settings v1alpha1.InstanceSettings, pr []uint8, nodes []v1alpha1.GroupNode) v1alpha1.Instance {
	if d.health != nil {
		// Nodes without a local endpoint must fall below the others and stay
		// apart from each other (placement.HealthChecked).
		pr = placement.HealthChecked(pr)
	}
	in := v1alpha1.Instance{
		Key:        d.key,
		VRID:       id,
		VIPs:       make([]string, len(d.vips)),
		Settings:   settings,
		Priorities: v1alpha1.EncodePriorities(excludedPriorities(pr, nodes)),
	}
	for i, a := range d.vips {
		in.VIPs[i] = a.String()
	}
	in.Settings.Verbatim = d.verb
	in.Settings.HealthCheck = d.health
	return in
}

// instanceDrafts lists the instances of the given Services, sorted by key.
// A Service without VIPs yet has no instance (and takes no router ID).
// VRRPv2 carries IPv4 only, so a version 2 group leaves IPv6 VIPs out (the
// Service reconciler says so in an Event).
func instanceDrafts(services []corev1.Service, granted map[types.NamespacedName][]netip.Addr, version int32) []instanceDraft {
	var out []instanceDraft
	for i := range services {
		svc := &services[i]
		if !isInstanceSource(svc) {
			continue
		}
		vips, _ := serviceVIPs(svc)
		if granted != nil {
			vips = slices.Clone(granted[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}])
		}
		if version == 2 {
			vips = slices.DeleteFunc(vips, netip.Addr.Is6)
		}
		if len(vips) == 0 {
			continue
		}
		ref := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		verb, _ := parseVerbatim(svc.Annotations[v1alpha1.AnnotationVerbatimConfig])
		health := healthCheck(svc)
		if spreadVIPs(svc) {
			for _, a := range vips {
				out = append(out, instanceDraft{key: ref.String() + "/" + a.String(), service: ref, vips: []netip.Addr{a}, verb: verb, health: health})
			}
			continue
		}
		out = append(out, instanceDraft{key: ref.String(), service: ref, vips: vips, verb: verb, health: health})
	}
	slices.SortFunc(out, func(a, b instanceDraft) int { return cmp.Compare(a.key, b.key) })
	return out
}

// groupSettings are the VRRP settings every instance of the group shares,
// with the CRD's defaults applied in case the object predates them. Without
// vrrpVersion the version is 2 for a group with passwordAuth (what
// keepalived-operator ran: keepalived's default, and the only version with
// authentication) and 3 otherwise.
func groupSettings(g *v1alpha1.KeepalivedGroup) v1alpha1.InstanceSettings {
	s := v1alpha1.InstanceSettings{
		Version:        3,
		AdvertInterval: metav1.Duration{Duration: time.Second},
		Preempt:        true,
		Unicast:        g.Spec.UnicastEnabled,
		UseVMAC:        g.Spec.UseVMAC,
		VMACXmitBase:   g.Spec.UseVMAC && g.Spec.VMACXmitBase,
	}
	switch {
	case g.Spec.VRRPVersion != 0:
		s.Version = g.Spec.VRRPVersion
	case g.Spec.PasswordAuth != nil:
		s.Version = 2
	}
	if g.Spec.AdvertInterval != nil {
		s.AdvertInterval = *g.Spec.AdvertInterval
	}
	if g.Spec.Preempt != nil {
		s.Preempt = *g.Spec.Preempt
	}
	if g.Spec.V3ChecksumAsV2 != nil {
		s.V3ChecksumAsV2 = *g.Spec.V3ChecksumAsV2
	}
	if pa := g.Spec.PasswordAuth; pa != nil {
		s.PasswordAuth = &v1alpha1.PasswordAuth{SecretRef: pa.SecretRef, SecretKey: cmp.Or(pa.SecretKey, "password")}
	}
	return s
}

// describeLeftOut is the Degraded message for keys without a router ID.
func describeLeftOut(keys []string) string {
	const show = 5
	msg := fmt.Sprintf("%d instance(s) got no router ID: all 255 are in use or reserved", len(keys))
	if len(keys) <= show {
		return msg + " (" + strings.Join(keys, ", ") + ")"
	}
	return msg + " (" + strings.Join(keys[:show], ", ") + ", ...)"
}

// cached returns the shared routers' priorities m kept over names
// (sharing.PlanCached), or nil when m is for other nodes or none. Copies:
// a plan may stage a router's priorities in place.
func (m *priorityMemo) cached(names []string) func(string) []uint8 {
	if m == nil || !slices.Equal(m.names, names) {
		return nil
	}
	return func(key string) []uint8 { return slices.Clone(m.byKey[key]) }
}

// keep records a shared router's priorities in m (this plan's memo), keyed
// by the router key, which no instance key equals.
func (m *priorityMemo) keep() func(string, []uint8) {
	if m == nil {
		return nil
	}
	return func(key string, pr []uint8) { m.byKey[key] = slices.Clone(pr) }
}
