package controller

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
	"github.com/vrrp-operator/vrrp-operator/internal/vrid"
)

// sharingApplies says whether g's Services share virtual routers
// (docs/design/router-sharing.md, section 3): routerSharing: Shared, and no
// takeover from keepalived-operator under way (status.migration set), since
// vrrpd must then shadow the old pods' one instance per Service with their
// router IDs. Unset is Shared, as the CRD's default says: the API server
// fills the default in on every read, but a CRD installed from an older
// release (applied by hand, or a chart's crds/ directory, which Helm never
// upgrades) has none, and the operator must not then keep such groups per
// Service behind the user's back. So only an explicit PerService opts out.
func sharingApplies(g *v1alpha1.KeepalivedGroup) bool {
	return g.Spec.RouterSharing != v1alpha1.RouterSharingPerService && g.Status.Migration == nil
}

// routerBudget is the group's spec.routerBudget, or sharing.DefaultBudget.
func routerBudget(g *v1alpha1.KeepalivedGroup) int {
	if b := g.Spec.RouterBudget; b != nil && *b > 0 {
		return int(*b)
	}
	return sharing.DefaultBudget
}

// sharingMembers splits a group's drafts into the Services that keep an
// instance of their own (solo: a health check, whose effective priorities
// follow the Service's own endpoints) and the members of shared routers,
// with each class's verbatim settings and the Service of each draft key.
func sharingMembers(drafts []instanceDraft, anchors map[types.NamespacedName]string) (solo []instanceDraft, members []sharing.Service, verbOf map[string]map[string]string, serviceOf map[string]types.NamespacedName) {
	verbOf = map[string]map[string]string{} // class -> its verbatim settings
	serviceOf = map[string]types.NamespacedName{}
	idx := map[types.NamespacedName]int{}
	for _, d := range drafts {
		if d.health != nil {
			solo = append(solo, d)
			continue
		}
		key := d.service.String()
		i, ok := idx[d.service]
		if !ok {
			class := sharing.ClassOf(key, d.verb, false)
			verbOf[class] = d.verb
			i = len(members)
			idx[d.service] = i
			members = append(members, sharing.Service{Key: key, Class: class, Anchor: anchors[d.service]})
		}
		if d.key != key {
			members[i].Spread = true
		}
		members[i].VIPs = append(members[i].VIPs, d.vips...)
		serviceOf[d.key] = d.service
	}
	return solo, members, verbOf, serviceOf
}

// planShared fills p's instances and router IDs for a group whose Services
// share routers. A Service with a health check (externalTrafficPolicy:
// Local) keeps an instance of its own, planned exactly as without sharing
// (placement.HealthChecked priorities), since its effective priorities
// follow its own endpoints; every other Service is a member of a shared
// router of sharing.Plan. Router IDs are assigned by vrid.Assign on the
// router keys (and the Local Services' instance keys), so a router keeps
// its ID for its life; status.routerIDs records each member (Service, or
// spreadvips VIP) with its router's ID, which is also the vetter's record
// of what it granted (groupFacts.granted).
func planShared(g *v1alpha1.KeepalivedGroup, p *plan, drafts []instanceDraft, anchors map[types.NamespacedName]string, names []string, reserved func(int) bool, memo *priorityMemo) {
	solo, members, verbOf, serviceOf := sharingMembers(drafts, anchors)
	res := sharing.PlanCached(names, members, routerBudget(g), memo.cached(names), p.memo.keep())
	p.exactRanks = res.ExactRanks

	// The IDs published so far are the status instances' (routers' and
	// per-Service ones'), not routerIDs: there a member's entry is its
	// router's ID, and a Service that just became Local (a key given to
	// Assign) must not claim its old router's ID, which a router key sorting
	// after it ("0ns/x" < "@...") would then lose.
	current := make(map[string]int, len(g.Status.Instances))
	for _, in := range g.Status.Instances {
		current[in.Key] = in.VRID
	}
	keys := make([]string, 0, len(res.Routers)+len(solo))
	for _, r := range res.Routers {
		keys = append(keys, r.Key)
	}
	for _, d := range solo {
		keys = append(keys, d.key)
	}
	ids := assignSharedIDs(g, p, keys, current, reserved)
	p.renumbered = ids.Renumbered
	p.routerIDs = make(map[string]int, len(res.RouterOf)+len(solo))
	p.members = make(map[string][]netip.Addr, len(res.RouterOf)+len(solo))
	p.memberRouter = make(map[string]string, len(res.RouterOf)+len(solo))
	for _, d := range drafts {
		p.members[d.key] = d.vips
	}

	settings := groupSettings(g)
	left := map[types.NamespacedName]bool{}
	leave := func(s types.NamespacedName) {
		if !left[s] {
			left[s] = true
			p.leftOutServices = append(p.leftOutServices, s)
		}
	}
	for _, r := range res.Routers {
		for _, m := range r.Members {
			p.memberRouter[m] = r.Key
		}
		in := v1alpha1.Instance{
			Key:        r.Key,
			VIPs:       make([]string, len(r.VIPs)),
			Settings:   settings,
			Priorities: v1alpha1.EncodePriorities(excludedPriorities(r.Priorities, p.nodes)),
		}
		for i, a := range r.VIPs {
			in.VIPs[i] = a.String()
		}
		in.Settings.Verbatim = verbOf[r.Class]
		id, ok := ids.IDs[r.Key]
		if !ok {
			if slices.Contains(ids.LeftOut, r.Key) {
				p.leftOut = append(p.leftOut, r.Key)
				for _, m := range r.Members {
					leave(serviceOf[m])
				}
			} else if slices.Contains(p.deferred, r.Key) {
				if p.unassigned == nil {
					p.unassigned = map[string]v1alpha1.Instance{}
				}
				p.unassigned[r.Key] = in // for adoption (stageMoves)
			}
			continue
		}
		for _, m := range r.Members {
			p.routerIDs[m] = id
		}
		in.VRID = id
		p.instances = append(p.instances, in)
	}
	for _, d := range solo {
		p.memberRouter[d.key] = d.key
		id, ok := ids.IDs[d.key]
		if !ok {
			if slices.Contains(ids.LeftOut, d.key) {
				p.leftOut = append(p.leftOut, d.key)
				leave(d.service)
			}
			continue
		}
		p.routerIDs[d.key] = id
		var pr []uint8
		if len(names) > 0 {
			pr = memo.priorities(d.key, names, p.memo)
		}
		p.instances = append(p.instances, d.instance(id, settings, pr, p.nodes))
	}
	if len(p.routerIDs) == 0 {
		p.routerIDs = nil
	}
	slices.Sort(p.leftOut)
	slices.SortFunc(p.instances, func(a, b v1alpha1.Instance) int { return cmp.Compare(a.Key, b.Key) })
	slices.SortFunc(p.leftOutServices, func(a, b types.NamespacedName) int { return cmp.Compare(a.String(), b.String()) })
}

// assignSharedIDs gives the shared plan's keys router IDs (vrid.Assign). An
// ID that an instance of the status gives up in this write (its key is not
// planned any more) is not handed out in the same write: the instance may
// be kept a write longer, holding members in flight (stageMoves), and a node
// that applies the write must never see one ID on two keys. Keys that miss
// an ID only for that are deferred one write (p.deferred), not left out (no
// Event, not Degraded) unless that stalls (stageMoves).
func assignSharedIDs(g *v1alpha1.KeepalivedGroup, p *plan, keys []string, current map[string]int, reserved func(int) bool) vrid.Result {
	freed := freedIDs(g.Status.Instances, keys)
	for id := range freed {
		if reserved == nil || !reserved(id) {
			if p.adoptable == nil {
				p.adoptable = map[int]bool{}
			}
			p.adoptable[id] = true
		}
	}
	ids := vrid.Assign(keys, current, func(id int) bool { return freed[id] || (reserved != nil && reserved(id)) })
	if len(ids.LeftOut) > 0 {
		real := vrid.Assign(keys, current, reserved)
		for _, k := range ids.LeftOut {
			if !slices.Contains(real.LeftOut, k) {
				p.deferred = append(p.deferred, k)
			}
		}
		ids.LeftOut = slices.DeleteFunc(ids.LeftOut, func(k string) bool { return slices.Contains(p.deferred, k) })
	}
	return ids
}

// publishedIDs are the router IDs a plan holds: its routerIDs and, since an
// instance kept only for members in flight (sharingmoves.go) may have no
// routerIDs entry, its instances' IDs (under their keys).
func publishedIDs(p plan) map[string]int {
	if !p.shared {
		return p.routerIDs
	}
	out := make(map[string]int, len(p.routerIDs)+len(p.instances))
	for k, id := range p.routerIDs {
		out[k] = id
	}
	for _, in := range p.instances {
		out[in.Key] = in.VRID
	}
	return out
}

// statusIDs are the router IDs a group's status holds: routerIDs, and the IDs
// of instances without an entry there (publishedIDs).
func statusIDs(st *v1alpha1.KeepalivedGroupStatus) map[string]int {
	var extra bool
	for _, in := range st.Instances {
		if _, ok := st.RouterIDs[in.Key]; !ok {
			extra = true
			break
		}
	}
	if !extra {
		return st.RouterIDs
	}
	out := make(map[string]int, len(st.RouterIDs)+len(st.Instances))
	for k, id := range st.RouterIDs {
		out[k] = id
	}
	for _, in := range st.Instances {
		if _, ok := out[in.Key]; !ok {
			out[in.Key] = in.VRID
		}
	}
	return out
}

// freedIDs are the router IDs of the status' instances whose keys are not
// among keys, the instances of the new plan.
func freedIDs(status []v1alpha1.Instance, keys []string) map[int]bool {
	planned := make(map[string]bool, len(keys))
	for _, k := range keys {
		planned[k] = true
	}
	out := map[int]bool{}
	for _, in := range status {
		if !planned[in.Key] {
			out[in.VRID] = true
		}
	}
	return out
}

// grantedByRouter reports whether a shared router of the group's status
// lists addr for the member key (a Service "ns/name", or a spreadvips VIP
// "ns/name/ip"): status.routerIDs names the member's router ID, and the
// router with that ID lists its members' addresses, sorted.
func grantedByRouter(st *v1alpha1.KeepalivedGroupStatus, key string, addr netip.Addr) bool {
	id, ok := st.RouterIDs[key]
	if !ok {
		return false
	}
	for i := range st.Instances {
		in := &st.Instances[i]
		if in.VRID != id || !strings.HasPrefix(in.Key, sharing.RouterKeyPrefix) {
			continue
		}
		_, found := slices.BinarySearchFunc(in.VIPs, addr, func(s string, a netip.Addr) int {
			b, err := netip.ParseAddr(s)
			if err != nil {
				return -1
			}
			return b.Unmap().Compare(a)
		})
		return found
	}
	return false
}

// describeLeftOutShared is the Degraded message when shared routers (keys
// starting with "@") or Local Services' instances got no router ID.
func describeLeftOutShared(keys []string, services int) string {
	routers := 0
	for _, k := range keys {
		if strings.HasPrefix(k, sharing.RouterKeyPrefix) {
			routers++
		}
	}
	return fmt.Sprintf("%d shared router(s) and %d other instance(s) got no router ID, leaving %d Service(s) without VIPs: all 255 are in use or reserved on the segment; raise or lower spec.routerBudget, give groups their own spec.segment, or use fewer externalTrafficPolicy: Local Services",
		routers, len(keys)-routers, services)
}

// sharedAnchors names, for each Service holding an address together with
// others (allow-shared-ip), the member key of the address's first holder
// (vetter.holdersOf: the first granted), so the shared routers keep the set
// where its first holder is and a Service joining the set moves nobody
// (sharing.Service.Anchor). A spreadvips holder's member is its VIP
// ("ns/name/ip").
func sharedAnchors(services []corev1.Service, granted map[types.NamespacedName][]netip.Addr, holders map[netip.Addr][]types.NamespacedName) map[types.NamespacedName]string {
	var out map[types.NamespacedName]string
	var spread map[types.NamespacedName]bool
	for ref, addrs := range granted {
		for _, a := range addrs {
			h := holders[a]
			if len(h) < 2 {
				continue
			}
			if spread == nil {
				spread = make(map[types.NamespacedName]bool, len(services))
				for i := range services {
					spread[types.NamespacedName{Namespace: services[i].Namespace, Name: services[i].Name}] = spreadVIPs(&services[i])
				}
				out = map[types.NamespacedName]string{}
			}
			key := h[0].String()
			if spread[h[0]] {
				key += "/" + a.String()
			}
			// Of several shared addresses, the one sorting first decides
			// (granted lists them sorted), the same in every reconcile.
			if _, ok := out[ref]; !ok {
				out[ref] = key
			}
		}
	}
	return out
}
