package controller

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
)

// Adoption (docs/design/router-sharing.md §5): on a segment with no free router ID, a
// conversion from per-Service instances cannot create its first router, since an ID
// freed by a write is not handed out in the same write. Instead the router takes the
// ID of one of its members' per-Service instances, in the same write that drops that
// instance: on the wire it is the same virtual router under a new key, which vrrpd
// renames in place (its reload matches the interface, family and VRID), so its master
// stays master and the member's addresses never leave it. It frees nothing and needs
// no new ID; the other members then move in as in any conversion, their instances go,
// and the next router takes one of the IDs they freed (a write later).

// adoption is a router of the plan that takes over a member's per-Service instance in
// this write.
type adoption struct {
	router string // the router's key
	member string // the member, whose per-Service instance has the same key
	vrid   int    // that instance's router ID, now the router's
	holder string // the node holding the member's addresses, the router's top
}

// adoption picks, when stageMoves stalled, the first deferred router in key order
// with a member it can adopt, and among its members the first in key order
// (adoptable). Any adoptable member moves nothing, so the choice only has to be
// deterministic: an operator that restarts before the write computes the same one,
// and after it the status itself records it (the router has the member's ID).
func (m *mover) adoption() adoption {
	names := make([]string, len(m.p.nodes))
	for i, n := range m.p.nodes {
		names[i] = n.Name
	}
	// Addresses of more than one member (allow-shared-ip): such a member's
	// instance is not adopted, as another member may still keep it.
	owners := map[netip.Addr]int{}
	for _, addrs := range m.p.members {
		for _, a := range addrs {
			owners[a]++
		}
	}
	for _, rk := range slices.Sorted(maps.Keys(m.p.unassigned)) {
		if !slices.Contains(m.p.deferred, rk) {
			continue
		}
		r := m.p.unassigned[rk]
		top := m.top(&r, names)
		if top == "" {
			continue
		}
		for _, mem := range m.byRouter[rk] {
			if m.adoptable(mem, &r, top, owners) {
				return adoption{router: rk, member: mem, vrid: m.cur[mem].VRID, holder: top}
			}
		}
	}
	return adoption{}
}

// adoptable reports whether router r, whose top node is top, can take over the
// per-Service instance of its member mem: the status has that instance (keyed as the
// member), the plan drops it, its ID is this group's to give (p.adoptable), it runs
// with r's settings (so vrrpd reconfigures nothing but the name, the addresses and
// the priorities), it lists exactly the member's addresses and no other instance or
// member has them (so dropping it ends nothing else), and its addresses are held by
// r's top node (so no address changes node: the router's master is the instance's).
func (m *mover) adoptable(mem string, r *v1alpha1.Instance, top string, owners map[netip.Addr]int) bool {
	s := m.cur[mem]
	if s == nil || strings.HasPrefix(mem, sharing.RouterKeyPrefix) || m.tgt[mem] != nil || !m.p.adoptable[s.VRID] {
		return false
	}
	if !apiequality.Semantic.DeepEqual(s.Settings, r.Settings) {
		return false
	}
	addrs := m.p.members[mem]
	own := parseVIPs(s.VIPs)
	if len(addrs) == 0 || len(own) != len(addrs) {
		return false
	}
	for _, a := range addrs {
		if !slices.Contains(own, a) || owners[a] != 1 || len(m.curOf[a]) != 1 {
			return false
		}
	}
	return m.holder(mem) == top
}
