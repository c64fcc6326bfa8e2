package controller

import (
	"net/netip"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// The grant record of shared groups (docs/design/router-sharing.md, section
// 7). A per-Service instance lists its Service's VIPs, so the group's status
// says exactly who was granted what. A shared router lists all its members'
// addresses together: when two members of one router ask for the same
// address, both look granted (grantedByRouter), and the tie-break would hand
// it to the older one. Two records close that gap:
//
//   - status.contestedGrants, durable: for each address more than one
//     Service asks for without sharing it, the Service that holds it. Only
//     contested addresses, so it is small (usually empty) and a restarted
//     operator or a new leader reads the same answer.
//   - grantLedger, in memory: each member's addresses in the last status
//     this process wrote, which decides the moment a contest begins (before
//     the durable record lists it). A contest that begins while no operator
//     runs finds neither and falls back to the tie-break.

// grantLedger remembers, per shared group, which members (Service "ns/name",
// or spreadvips VIP "ns/name/ip") held each address in the last status this
// process wrote. Each group's map is replaced whole, never changed in place,
// so a reader may keep the one it got.
type grantLedger struct {
	mu     sync.Mutex
	groups map[types.NamespacedName]map[netip.Addr][]string
}

func newGrantLedger() *grantLedger {
	return &grantLedger{groups: map[types.NamespacedName]map[netip.Addr][]string{}}
}

// record remembers the members of p's shared routers and their addresses,
// once the status made from p is written; forgets the group when p does not
// share routers.
func (l *grantLedger) record(group types.NamespacedName, p *plan) {
	if l == nil {
		return
	}
	var m map[netip.Addr][]string
	if p.shared {
		m = make(map[netip.Addr][]string, len(p.members))
		for key, addrs := range p.members {
			if _, ok := p.routerIDs[key]; !ok {
				continue // no router: not granted anything this round
			}
			for _, a := range addrs {
				m[a] = append(m[a], key)
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if m == nil {
		delete(l.groups, group)
		return
	}
	l.groups[group] = m
}

// forget drops a deleted group.
func (l *grantLedger) forget(group types.NamespacedName) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.groups, group)
	l.mu.Unlock()
}

// of returns the group's map (nil: nothing remembered).
func (l *grantLedger) of(group types.NamespacedName) map[netip.Addr][]string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.groups[group]
}

// grantedShared reports whether a shared router of the group's status
// granted addr to svc: the durable record of a contested address decides
// when it lists addr; else the router the status names for svc must list
// addr and, when this process remembers who held addr (ledger), svc must be
// one of them.
func grantedShared(st *v1alpha1.KeepalivedGroupStatus, ledger map[netip.Addr][]string, key string, addr netip.Addr) bool {
	if holder, ok := st.ContestedGrants[addr.String()]; ok {
		return holder == key
	}
	spread := key + "/" + addr.String()
	if !grantedByRouter(st, key, addr) && !grantedByRouter(st, spread, addr) {
		return false
	}
	held, ok := ledger[addr]
	if !ok {
		return true // not remembered (another process wrote the status): the router's word
	}
	return slices.Contains(held, key) || slices.Contains(held, spread)
}

// maxContestedGrants bounds status.contestedGrants: about 70 bytes an entry,
// 256 of them are under 20 KiB, inside what statusBudget leaves beside the
// bulk of the status. A tenant listing many held addresses cannot grow the
// group's status past it; an address beyond it falls back to the ledger and,
// after a restart, to the routers' lists.
const maxContestedGrants = 256

// contestedGrants is status.contestedGrants for a shared group: each address
// granted to a Service (granted) that others ask for too without sharing it
// (vetter.contested), with its first holder. Past maxContestedGrants the
// addresses already recorded (prev) stay first, then the lowest addresses,
// so a record is never displaced by a newer contest. Nil when there is
// none, or when the group does not share routers (its instances record the
// grants).
func contestedGrants(v *vetter, granted map[types.NamespacedName][]netip.Addr, prev map[string]string, shared bool) map[string]string {
	if !shared || len(v.contested) == 0 {
		return nil
	}
	var addrs []netip.Addr
	for a := range v.contested {
		h := v.holders[a]
		if len(h) > 0 && slices.Contains(granted[h[0]], a) {
			addrs = append(addrs, a) // else nobody holds it (yet): nothing to keep
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int {
		_, ka := prev[a.String()]
		_, kb := prev[b.String()]
		if ka != kb {
			if ka {
				return -1
			}
			return 1
		}
		return a.Compare(b)
	})
	out := make(map[string]string, min(len(addrs), maxContestedGrants))
	for _, a := range addrs[:min(len(addrs), maxContestedGrants)] {
		out[a.String()] = v.holders[a][0].String()
	}
	return out
}
