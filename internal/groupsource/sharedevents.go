package groupsource

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// The Events of shared routers (docs/design/router-sharing.md §7). A shared router
// ("@class/...") carries the VIPs of many Services, so its entering or leaving MASTER is
// an Event on each of its members: the status' routerIDs entries valued with the
// router's VRID (a spreadvips member, "ns/name/ip", only when its address is in the
// router). A failover of a router with 700 members would otherwise post 1,400 requests
// at once; Run paces every Event (EventsPerSecond), and a shared router's members wait
// in a queue where the newest state wins: a router that flaps changes the pending
// Event of each member in place, and a flap back to the state the member last had
// cancels it, so the queue never holds more than one entry per member and router.

// EventsPerSecond is how many Events one vrrpd posts a second at most.
const EventsPerSecond = 100

// routerMembers are, by shared router key, the member keys of the group's routers.
func routerMembers(g *v1alpha1.KeepalivedGroup) map[string][]string {
	if g == nil {
		return nil
	}
	byVRID := map[int]*v1alpha1.Instance{}
	for i := range g.Status.Instances {
		in := &g.Status.Instances[i]
		if strings.HasPrefix(in.Key, "@") {
			byVRID[in.VRID] = in
		}
	}
	if len(byVRID) == 0 {
		return nil
	}
	out := map[string][]string{}
	for member, vrid := range g.Status.RouterIDs {
		in := byVRID[vrid]
		if in == nil || strings.HasPrefix(member, "@") {
			continue
		}
		if ip, ok := memberIP(member); ok && !hasVIP(in.VIPs, ip) {
			continue // a spreadvips sibling's entry; its own address is elsewhere
		}
		out[in.Key] = append(out[in.Key], member)
	}
	return out
}

// memberIP is the address of a spreadvips member key ("ns/name/ip").
func memberIP(member string) (netip.Addr, bool) {
	parts := strings.Split(member, "/")
	if len(parts) != 3 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(parts[2])
	return a.Unmap(), err == nil
}

func hasVIP(vips []string, a netip.Addr) bool {
	for _, s := range vips {
		if v, err := netip.ParseAddr(s); err == nil && v.Unmap() == a {
			return true
		}
	}
	return false
}

// memberVIPs are the addresses of router VIPs vips that are member's Service's: its own
// address for a spreadvips member, else the Service's ingress and external IPs.
func memberVIPs(member string, s *corev1.Service, vips []netip.Prefix) []netip.Prefix {
	in := func(a netip.Addr) bool {
		for _, p := range vips {
			if p.Addr() == a {
				return true
			}
		}
		return false
	}
	if a, ok := memberIP(member); ok {
		if in(a) {
			return []netip.Prefix{netip.PrefixFrom(a, a.BitLen())}
		}
		return nil
	}
	var out []netip.Prefix
	add := func(str string) {
		if a, err := netip.ParseAddr(str); err == nil && in(a.Unmap()) {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.BitLen()))
		}
	}
	for _, ing := range s.Status.LoadBalancer.Ingress {
		add(ing.IP)
	}
	for _, e := range s.Spec.ExternalIPs {
		add(e)
	}
	return out
}

// pendingKey is one member's Event for one virtual router (a dual-stack router is two).
type pendingKey struct{ member, instance string }

// memberQueue holds the shared routers' Events still to post, in the order they came,
// one per member and virtual router, the newest state winning. Its methods are called
// with the recorder's mutex held.
type memberQueue struct {
	order   []pendingKey
	pending map[pendingKey]*pendingChange
}

type pendingChange struct {
	c         change
	cancelled bool // the router went back to the state the member last heard of
}

// put queues the change of router instance for each of its members.
func (q *memberQueue) put(members []string, c change) {
	if q.pending == nil {
		q.pending = map[pendingKey]*pendingChange{}
	}
	master := c.to == vrrp.StateMaster
	for _, m := range members {
		k := pendingKey{m, c.instance}
		p := q.pending[k]
		if p == nil {
			mc := c
			mc.member = m
			q.pending[k] = &pendingChange{c: mc}
			q.order = append(q.order, k)
			continue
		}
		// p.c.from stays the state the member last heard of (its last Event's).
		p.cancelled = (p.c.from == vrrp.StateMaster) == master // no net change since then
		p.c.to, p.c.vips, p.c.at = c.to, c.vips, c.at
	}
}

// next takes the oldest pending Event that still stands.
func (q *memberQueue) next() (change, bool) {
	for len(q.order) > 0 {
		k := q.order[0]
		q.order = q.order[1:]
		p := q.pending[k]
		delete(q.pending, k)
		if p != nil && !p.cancelled {
			return p.c, true
		}
	}
	q.order = nil // let the backing array go once drained
	return change{}, false
}

// len is how many members' Events wait, cancelled ones included.
func (q *memberQueue) len() int { return len(q.order) }

// SetGroup tells the recorder the members of the group's shared routers (its status'
// routerIDs), before the daemon applies the change.
func (r *EventRecorder) SetGroup(g *v1alpha1.KeepalivedGroup) {
	members := routerMembers(g)
	r.mu.Lock()
	r.routers = members
	r.mu.Unlock()
}

// observeShared queues a shared router's change for each of its members and wakes Run.
func (r *EventRecorder) observeShared(c change) {
	r.mu.Lock()
	members := r.routers[InstanceKey(c.instance)]
	if len(members) > 0 {
		r.shared.put(members, c)
	}
	r.mu.Unlock()
	if len(members) == 0 {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// nextShared takes the next member Event to post.
func (r *EventRecorder) nextShared() (change, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shared.next()
}

// sharedPending is how many member Events wait (for tests and the log).
func (r *EventRecorder) sharedPending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shared.len()
}
