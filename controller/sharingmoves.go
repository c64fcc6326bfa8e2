package controller

import (
	"cmp"
	"context"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
)

// Moving members between shared routers in phases (docs/design/router-sharing.md, §4
// case 2 and §5). A plan of shared routers is not written as it is when it moves a
// member into a router that cannot serve it yet: a router the status does not have (a
// new router starts as backup on every node and waits a Master_Down_Interval), or one
// created by the last write whose master is not settled. Such a move goes in two
// writes: the first lists the member's addresses in its new router B and keeps them in
// the instance A that has them (the node that holds them through A holds them through
// both, vip.Manager counting holders), with B's priorities staged so that this node
// becomes B's master when B's own top is another node; the second, once B is ready,
// drops them from A and gives B its real priorities. A staged B's second write hands
// its mastership to its top, which preempts and adds all of B's addresses: those
// handovers are paced, a node taking part in one at a time (unstage), so a joining
// node, the top of one new router per node that held its members, takes them one
// router a write.
//
// The state in flight is the status itself, not the operator's memory: an address
// listed in two instances is a move between its writes, and a router whose top in the
// status is not its planned top is staged for that node. An operator that restarts
// between the writes reads the same status and carries on. Only when a router appeared
// is remembered (moveClocks), for the timed condition, and when this operator handed a
// staged router over (the handover's own timed condition, without KeepalivedMastership);
// a restarted operator starts those clocks anew, which delays a step by at most one
// wait and never hastens it.

// moveClocks remembers, per group, when each instance key was first seen in its status
// or written to it, and when this operator wrote each handover (a staged router given
// its real priorities, handing mastership from the node it was staged for to its top).
type moveClocks struct {
	mu     sync.Mutex
	since  map[types.NamespacedName]map[string]time.Time
	handed map[types.NamespacedName]map[string]handedAt
}

// handedAt is when a router was un-staged and the node it had been staged for.
type handedAt struct {
	at     time.Time
	holder string
}

// handovers returns how long ago each router of status was un-staged by this
// operator, and from which node.
func (c *moveClocks) handovers(group types.NamespacedName, status []v1alpha1.Instance, now time.Time) map[string]handover {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]handover{}
	for _, in := range status {
		if h, ok := c.handed[group][in.Key]; ok {
			out[in.Key] = handover{age: now.Sub(h.at), holder: h.holder}
		}
	}
	return out
}

// handing records the handovers a write is about to make (router key: the node it was
// staged for).
func (c *moveClocks) handing(group types.NamespacedName, unstaged map[string]string, now time.Time) {
	if len(unstaged) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handed == nil {
		c.handed = map[types.NamespacedName]map[string]handedAt{}
	}
	if c.handed[group] == nil {
		c.handed[group] = map[string]handedAt{}
	}
	for k, h := range unstaged {
		c.handed[group][k] = handedAt{at: now, holder: h}
	}
}

// observe returns how long each of the status' instance keys has been there (a key
// first seen now: zero), for the keys of status.
func (c *moveClocks) observe(group types.NamespacedName, status []v1alpha1.Instance, now time.Time) map[string]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since == nil {
		c.since = map[types.NamespacedName]map[string]time.Time{}
	}
	seen := c.since[group]
	if seen == nil {
		seen = map[string]time.Time{}
		c.since[group] = seen
	}
	ages := make(map[string]time.Duration, len(status))
	for _, in := range status {
		t, ok := seen[in.Key]
		if !ok {
			t = now
			seen[in.Key] = t
		}
		ages[in.Key] = now.Sub(t)
	}
	return ages
}

// written keeps the clocks of the instances about to be written (new keys start now)
// and forgets the others.
func (c *moveClocks) written(group types.NamespacedName, instances []v1alpha1.Instance, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, len(instances))
	for i, in := range instances {
		keys[i] = in.Key
	}
	next := carryClocks(c.since[group], keys, now)
	c.since[group] = next
	for k := range c.handed[group] {
		if _, ok := next[k]; !ok {
			delete(c.handed[group], k)
		}
	}
}

func (c *moveClocks) forget(group types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since, group)
	delete(c.handed, group)
}

// stageSharedMoves turns a shared plan into the next status write (stageMoves) and
// returns when to reconcile again to take the next step (0: the plan is written whole).
func (r *GroupReconciler) stageSharedMoves(ctx context.Context, g *v1alpha1.KeepalivedGroup, p *plan) (time.Duration, error) {
	now := time.Now()
	masters, err := r.masters(ctx, g)
	if err != nil {
		return 0, err
	}
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	res := r.moveClocks.stage(key, &g.Status, p, masters, now)
	return res.requeue(masters != nil), nil
}

// stage is stageMoves from the group's status st with the clocks of group, which it
// then moves on to the step written at now.
func (c *moveClocks) stage(group types.NamespacedName, st *v1alpha1.KeepalivedGroupStatus, p *plan, masters map[string]string, now time.Time) moveResult {
	ages := c.observe(group, st.Instances, now)
	names := make([]string, len(st.Nodes))
	for i, n := range st.Nodes {
		names[i] = n.Name
	}
	handovers := c.handovers(group, st.Instances, now)
	res := stageMoves(p, moveInputs{status: st.Instances, nodes: names, masters: masters, ages: ages, handovers: handovers})
	c.written(group, p.instances, now)
	c.handing(group, res.unstaged, now)
	return res
}

// masters reads the group's KeepalivedMastership: the node each virtual router's
// holder entry names, by vrrpd's instance name. Nil when the cluster does not serve
// the kind (the moves then wait the timed condition); empty when the object is not
// there yet.
func (r *GroupReconciler) masters(ctx context.Context, g *v1alpha1.KeepalivedGroup) (map[string]string, error) {
	served, err := r.served(mastershipGVK)
	if err != nil || !served {
		return nil, err
	}
	var m v1alpha1.KeepalivedMastership
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: g.Namespace, Name: g.Name}, &m); err != nil {
		if apierrors.IsNotFound(err) {
			return map[string]string{}, nil
		}
		return nil, err
	}
	out := make(map[string]string, len(m.Status.Holders))
	for _, h := range m.Status.Holders {
		out[h.Instance] = h.Node
	}
	return out, nil
}

// moveInputs are what stageMoves reads besides the plan.
type moveInputs struct {
	// status is the group's status instances, and nodes its nodes' names (the order of
	// their priorities).
	status []v1alpha1.Instance
	nodes  []string
	// masters names the master node of each virtual router by vrrpd's instance name
	// (KeepalivedMastership); nil when not served.
	masters map[string]string
	// ages says how long each status instance has been there.
	ages map[string]time.Duration
	// handovers are the routers this operator un-staged (handover), by key; a
	// restarted operator has none and reads the handovers in flight from
	// KeepalivedMastership alone.
	handovers map[string]handover
}

// handover is a staged router given its real priorities by an earlier write: how long
// ago, and the node it had been staged for (which held its addresses then).
type handover struct {
	age    time.Duration
	holder string
}

// moveResult says whether the written status is a step short of the plan, and how
// long until the earliest timed condition of a router in flight.
type moveResult struct {
	pending bool
	due     time.Duration
	poll    time.Duration
	// unstaged are the staged routers this write gives their real priorities while
	// their top is another node (a handover), with the node each was staged for.
	unstaged map[string]string
}

// requeue is when to reconcile again: with KeepalivedMastership served, poll it every
// advertisement interval (at most until the timed fallback is due); without it, when
// the timed condition is due.
func (m moveResult) requeue(served bool) time.Duration {
	if !m.pending {
		return 0
	}
	d := m.due
	if d <= 0 || (served && m.poll < d) {
		d = m.poll
	}
	return max(d, 50*time.Millisecond)
}

// sharedStartDelayStep is vrrpd's start delay a rank for a shared router
// (groupsource.SharedStartDelayStep; TestMoveWaitCoversStartDelay holds them equal): how
// late the node staged first may start the router and still be the first to claim it.
const sharedStartDelayStep = time.Second

// moveWait is the timed condition for a router to serve what moves into it without
// KeepalivedMastership: its Master_Down_Interval for the node staged first (priority
// 254: three intervals and the skew), plus one rank of vrrpd's start delay for shared
// routers (that node's watch may deliver the write that late), plus one interval of
// margin.
func moveWait(s v1alpha1.InstanceSettings) time.Duration {
	i := s.AdvertInterval.Duration
	if i <= 0 {
		i = time.Second
	}
	skew := 2 * i / 256
	if s.Version == 2 {
		skew = 2 * time.Second / 256
	}
	return 3*i + skew + sharedStartDelayStep + i
}

// minMovePoll bounds how often a group with moves in flight is reconciled to read
// KeepalivedMastership (every advertisement interval, at most a second): a reconcile
// plans every Service of the group.
const minMovePoll = 250 * time.Millisecond

// mastershipWaitFactor: with KeepalivedMastership served, a router whose master it
// never names as the expected node (that node failed, preempt is off, an old vrrpd
// that does not publish) is taken as ready after this many timed waits; the move is
// then §4's case 3, which vrrpd's hold-back covers.
const mastershipWaitFactor = 3

// mover is the working state of one stageMoves.
type mover struct {
	p     *plan
	in    moveInputs
	cur   map[string]*v1alpha1.Instance // the status' instances by key
	curOf map[netip.Addr][]string       // the status' instance keys listing each address
	tgt   map[string]*v1alpha1.Instance // the plan's instances by key
	out   map[string]map[netip.Addr]bool
	// slot is the router converting per-Service instances in this write (§5: one at
	// a time), "" while none.
	slot string
	res  moveResult
	// served are the Services with an address in the step written (fixRouterIDs).
	served map[types.NamespacedName]bool
	// byRouter are the plan's members of each router key, sorted.
	byRouter map[string][]string
	// adopt is the router adopting a member's instance in this write, if any.
	adopt adoption
	// names are the plan's nodes' names (the order of its priorities).
	names []string
	// busy are the nodes taking part in a handover in flight or made by this write
	// (handoversInFlight, unstage): a node is in at most one at a time.
	busy map[string]bool
}

// stageMoves replaces p's instances and routerIDs with the next step from the status
// in towards the plan (see the comment at the top of this file), and says whether it
// falls short of the plan. For a router B of the plan and each of its members:
//
//   - a member in no other instance of the status (new, or already only in B) is in B;
//   - a member listed in B and in another instance A (between the two writes) stays in
//     both until B is ready, then is in B only (write 2);
//   - a member only in another instance A moves into B at once when B is ready (§4
//     cases 1 and 3); otherwise it is listed in B and kept in A (write 1) when the node
//     holding it through A is the node B is staged for, and stays in A alone when it is
//     not (it moves when B is ready);
//   - a member coming from a per-Service instance (a conversion, §5) or from a router
//     of another depth (a depth change) moves only while B is the one router
//     converting in this write, in router key order.
//
// B is ready when KeepalivedMastership names its top node in the status (the staged
// holder, or its real top) as master of each of its families, or after moveWait (times
// mastershipWaitFactor when KeepalivedMastership is served). A router is staged, its
// top node's priority swapped with the holder's, while it lists a member in flight and
// the holder is not its top; a staged router that is ready stays staged, as not ready,
// while its top or its holder takes part in another handover (unstage). A member whose
// router got no ID stays where it is; when that stalls the conversion (no free ID on
// the segment), a router adopts a member's per-Service instance (sharingadopt.go).
func stageMoves(p *plan, in moveInputs) moveResult {
	instances, routerIDs, leftOut := slices.Clone(p.instances), maps.Clone(p.routerIDs), slices.Clone(p.leftOutServices)
	m := stageStep(p, in, adoption{})
	if len(p.deferred) == 0 || m.res.due != 0 || !sameInstances(p.instances, in.status) {
		return m.res
	}
	// Stalled: the only free IDs are those of instances that keep members which
	// wait for an ID (a full segment converting). A deferred router then adopts
	// the ID of one of its members' per-Service instances (§5).
	if a := m.adoption(); a.router != "" {
		p.instances, p.routerIDs, p.leftOutServices = instances, routerIDs, leftOut
		r := p.unassigned[a.router]
		r.VRID = a.vrid
		p.instances = append(p.instances, r)
		slices.SortFunc(p.instances, func(a, b v1alpha1.Instance) int { return cmp.Compare(a.Key, b.Key) })
		p.deferred = slices.DeleteFunc(p.deferred, func(k string) bool { return k == a.router })
		return stageStep(p, in, a).res
	}
	// Nothing to adopt either: the routers are left out, as past the ceiling, and
	// the members stay where they are.
	p.leftOut = append(p.leftOut, p.deferred...)
	slices.Sort(p.leftOut)
	for mem, rk := range p.memberRouter {
		if s := serviceOfMember(mem); slices.Contains(p.deferred, rk) && !m.served[s] && !slices.Contains(p.leftOutServices, s) {
			p.leftOutServices = append(p.leftOutServices, s)
		}
	}
	slices.SortFunc(p.leftOutServices, func(a, b types.NamespacedName) int { return cmp.Compare(a.String(), b.String()) })
	m.res.pending = false
	return m.res
}

// stageStep is one computation of stageMoves' step, with a router adopting a
// member's instance (a.router != "") or none.
func stageStep(p *plan, in moveInputs, a adoption) *mover {
	m := &mover{p: p, in: in, cur: map[string]*v1alpha1.Instance{}, curOf: map[netip.Addr][]string{},
		tgt: map[string]*v1alpha1.Instance{}, out: map[string]map[netip.Addr]bool{}, adopt: a}
	m.res.poll = time.Second
	for i := range in.status {
		s := &in.status[i]
		m.cur[s.Key] = s
		for _, a := range parseVIPs(s.VIPs) {
			m.curOf[a] = append(m.curOf[a], s.Key)
		}
	}
	for i := range p.instances {
		t := &p.instances[i]
		m.tgt[t.Key] = t
		m.res.poll = min(m.res.poll, max(t.Settings.AdvertInterval.Duration, minMovePoll))
	}
	byRouter := map[string][]string{}
	for mem, rk := range p.memberRouter {
		byRouter[rk] = append(byRouter[rk], mem)
	}
	for _, ms := range byRouter {
		slices.Sort(ms)
	}
	m.byRouter = byRouter
	m.names = make([]string, len(p.nodes))
	for i, n := range p.nodes {
		m.names[i] = n.Name
	}
	m.busy = m.handoversInFlight()
	m.slot = m.inFlightConversion(byRouter)
	if a.router != "" {
		m.slot = a.router // the adopting router is the conversion of this write
	}

	staged := map[string]string{}
	for _, t := range p.instances {
		if h := m.router(t.Key, byRouter[t.Key]); h != "" {
			staged[t.Key] = h
		}
	}
	// Members whose router got no ID stay where the status has them (until the
	// next write when the ID was only deferred: p.deferred).
	for mem, rk := range p.memberRouter {
		if m.tgt[rk] == nil {
			m.keep(mem, m.sources(p.members[mem], ""), false)
		}
	}
	m.res.pending = m.res.pending || len(p.deferred) > 0
	m.build(staged)
	m.fixRouterIDs()
	return m
}

// sameInstances reports whether two lists of instances have the same keys, IDs and
// addresses.
func sameInstances(a, b []v1alpha1.Instance) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.Instance) bool {
		return x.Key == y.Key && x.VRID == y.VRID && slices.Equal(x.VIPs, y.VIPs)
	})
}

// router takes the members of the plan's router key, and returns the node it is
// staged for ("" when it gets its real priorities).
func (m *mover) router(key string, members []string) string {
	b := m.cur[key]
	ready := b != nil && m.ready(key) && m.unstage(key, b)
	var h string
	switch {
	case b != nil && !ready:
		h = m.top(b, m.in.nodes)
	case key == m.adopt.router:
		// Its master is the adopted instance's: members held elsewhere wait.
		h = m.adopt.holder
	case b == nil:
		h = m.majorityHolder(key, members)
	}
	inFlight, kept := false, false
	for _, mem := range members {
		addrs := m.p.members[mem]
		if key == m.adopt.router && mem == m.adopt.member {
			// Its instance becomes this router (same ID): its addresses are
			// here, and the instance is not written.
			m.list(key, addrs)
			continue
		}
		srcs := m.sources(addrs, key)
		conv := m.converts(srcs)
		switch {
		case len(srcs) == 0:
			m.list(key, addrs)
		case b != nil && m.listedIn(addrs, key):
			// Between the writes: write 2 once B is ready.
			m.list(key, addrs)
			if !ready {
				m.keep(mem, srcs, true)
				inFlight, kept = true, true
				m.takeSlot(key, conv)
			}
		case m.holder(srcs[0]) == "":
			// No node holds the addresses (no member node ranks the source, e.g. a
			// group whose nodeSelector matches none yet): nothing to hand over, and
			// no mastership will ever make the router ready for it, so it moves now.
			m.list(key, addrs)
		case !m.slotFree(key, conv):
			m.keep(mem, srcs, false)
			kept = true
		case ready:
			m.list(key, addrs)
			m.takeSlot(key, conv)
		case h != "" && m.holder(srcs[0]) == h:
			m.list(key, addrs)
			m.keep(mem, srcs, true)
			inFlight, kept = true, true
			m.takeSlot(key, conv)
		default:
			m.keep(mem, srcs, false)
			kept = true
		}
	}
	m.res.pending = m.res.pending || kept
	if !inFlight {
		return ""
	}
	return h
}

// inFlightConversion is the first router of the status, in key order, that is not
// ready (or is held back from its handover, heldBack) and lists a member that a
// conversion's source (converts) still lists too: it keeps the conversion's one slot
// until its write 2.
func (m *mover) inFlightConversion(byRouter map[string][]string) string {
	for _, t := range m.p.instances {
		if m.cur[t.Key] == nil || !strings.HasPrefix(t.Key, sharing.RouterKeyPrefix) {
			continue
		}
		for _, mem := range byRouter[t.Key] {
			addrs := m.p.members[mem]
			if m.listedIn(addrs, t.Key) && m.converts(m.sources(addrs, t.Key)) && (!m.ready(t.Key) || m.heldBack(t.Key, m.cur[t.Key])) {
				return t.Key
			}
		}
	}
	return ""
}

// converts reports whether one of the instances is the source of a conversion, which
// is paced: a per-Service instance that the plan does not keep (§5), or a router of
// another depth than the plan's (a depth change, §2: every member changes router).
// Both are read from the status' keys, so the pacing too survives a restart.
func (m *mover) converts(keys []string) bool {
	for _, k := range keys {
		if m.tgt[k] != nil {
			continue
		}
		if !strings.HasPrefix(k, sharing.RouterKeyPrefix) {
			return true
		}
		if d, ok := routerDepth(k); ok && d != m.p.exactRanks {
			return true
		}
	}
	return false
}

// routerDepth is the number of exact ranks a router key names (sharing's keys:
// "@class/a,b", "@class/a", "@class/#17").
func routerDepth(key string) (int, bool) {
	_, rest, ok := strings.Cut(strings.TrimPrefix(key, sharing.RouterKeyPrefix), "/")
	if !ok || rest == "" {
		return 0, false
	}
	if strings.HasPrefix(rest, "#") {
		return 0, true
	}
	return strings.Count(rest, ",") + 1, true
}

// handoversInFlight returns the nodes taking part in a handover still in flight: a
// router of the status and the plan that has its real priorities, whose top
// KeepalivedMastership does not name master yet, and which this operator un-staged
// less than moveWait ago (handovers) or, not remembered (a restarted operator), whose
// key it has seen for less than moveWait while KeepalivedMastership names another node
// its master, or no node. Both its top (which preempts) and the node it was staged for
// (which releases), when known, are busy.
func (m *mover) handoversInFlight() map[string]bool {
	busy := map[string]bool{}
	for i := range m.in.status {
		s := &m.in.status[i]
		t := m.tgt[s.Key]
		if t == nil || !strings.HasPrefix(s.Key, sharing.RouterKeyPrefix) {
			continue
		}
		top := m.top(s, m.in.nodes)
		if top == "" || top != m.top(t, m.names) || (m.in.masters != nil && m.mastered(s, top)) {
			continue // staged still, or its top masters it: no handover in flight
		}
		h, known := m.in.handovers[s.Key]
		if !known {
			// Not handed over by this operator (a restart): in flight if another
			// node masters it, or none does (between the old master's entry and
			// the new one's; also a router new to this operator, whose top is
			// about to take it over and add its addresses).
			h = handover{age: m.in.ages[s.Key], holder: m.otherMaster(s.Key, top)}
			if h.holder == "" && (m.in.masters == nil || m.namedMaster(s.Key)) {
				continue
			}
		}
		limit := moveWait(s.Settings)
		if h.age >= limit {
			continue
		}
		m.dueIn(limit - h.age)
		busy[top] = true
		if h.holder != "" {
			busy[h.holder] = true
		}
	}
	return busy
}

// namedMaster reports whether KeepalivedMastership names a master of the status'
// instance key (either family).
func (m *mover) namedMaster(key string) bool {
	for _, k := range []string{key, key + "/ipv4", key + "/ipv6"} {
		if m.in.masters[k] != "" {
			return true
		}
	}
	return false
}

// otherMaster is a node other than top that KeepalivedMastership names master of the
// status' instance key (either family), "" when none.
func (m *mover) otherMaster(key, top string) string {
	for _, k := range []string{key, key + "/ipv4", key + "/ipv6"} {
		if n := m.in.masters[k]; n != "" && n != top {
			return n
		}
	}
	return ""
}

// unstage decides whether router key, ready in the status as b, may take its next
// step now. A router staged for a node other than its top, with members in flight
// (listed in it and in their old instance), hands its mastership to its top when it
// gets its real priorities (write 2 of §4 case 2); the top then preempts and adds all
// its addresses. Those handovers are paced: a node takes part in one at a time, as the
// top or as the node staged for, so a joining node preempts one router's addresses per
// write rather than all its new routers' at once. A router that may not go yet stays
// as it is, staged, its members in both instances. Every other router may go.
func (m *mover) unstage(key string, b *v1alpha1.Instance) bool {
	holder, top, handover := m.handover(key, b)
	if !handover {
		return true
	}
	if m.busy[holder] || m.busy[top] {
		m.res.pending = true
		return false
	}
	m.busy[holder], m.busy[top] = true, true
	m.dueIn(moveWait(b.Settings)) // the timed end of this handover, for the routers it holds back
	if m.res.unstaged == nil {
		m.res.unstaged = map[string]string{}
	}
	m.res.unstaged[key] = holder
	return true
}

// handover reports whether the status' router key (b) is staged for a node other than
// its planned top and lists members in flight, so that its next write 2 hands its
// mastership over, and names both nodes.
func (m *mover) handover(key string, b *v1alpha1.Instance) (holder, top string, ok bool) {
	holder, top = m.top(b, m.in.nodes), m.top(m.tgt[key], m.names)
	return holder, top, holder != "" && top != "" && holder != top && m.hasMembersInFlight(b)
}

// heldBack reports whether the status' router key (b) waits for its write 2 because it
// would be a handover and one of its nodes is in another (busy).
func (m *mover) heldBack(key string, b *v1alpha1.Instance) bool {
	holder, top, ok := m.handover(key, b)
	return ok && (m.busy[holder] || m.busy[top])
}

// hasMembersInFlight reports whether the status' instance b lists an address that
// another instance of the status lists too.
func (m *mover) hasMembersInFlight(b *v1alpha1.Instance) bool {
	for _, a := range parseVIPs(b.VIPs) {
		if len(m.curOf[a]) > 1 {
			return true
		}
	}
	return false
}

func (m *mover) slotFree(key string, conv bool) bool {
	return !conv || m.slot == "" || m.slot == key
}

func (m *mover) takeSlot(key string, conv bool) {
	if conv && m.slot == "" {
		m.slot = key
	}
}

// ready reports whether the status' instance key can take members at once, and notes
// when its timed condition is due.
func (m *mover) ready(key string) bool {
	s := m.cur[key]
	if h := m.top(s, m.in.nodes); h != "" && m.in.masters != nil && m.mastered(s, h) {
		return true
	}
	limit := m.limit(s.Settings)
	age := m.in.ages[key]
	if age >= limit {
		return true
	}
	m.dueIn(limit - age)
	return false
}

// limit is the timed condition for a router with settings s (moveWait, times
// mastershipWaitFactor when KeepalivedMastership is served).
func (m *mover) limit(s v1alpha1.InstanceSettings) time.Duration {
	if m.in.masters != nil {
		return mastershipWaitFactor * moveWait(s)
	}
	return moveWait(s)
}

func (m *mover) dueIn(d time.Duration) {
	if m.res.due == 0 || d < m.res.due {
		m.res.due = d
	}
}

// mastered reports whether KeepalivedMastership names node master of every family of
// the instance (vrrpd names a dual-stack instance's two virtual routers key/ipv4 and
// key/ipv6).
func (m *mover) mastered(s *v1alpha1.Instance, node string) bool {
	var v4, v6 bool
	for _, a := range parseVIPs(s.VIPs) {
		v4, v6 = v4 || a.Is4(), v6 || a.Is6()
	}
	if v4 && v6 {
		return m.in.masters[s.Key+"/ipv4"] == node && m.in.masters[s.Key+"/ipv6"] == node
	}
	return m.in.masters[s.Key] == node
}

// holder is the node that holds the addresses of the status' instance key: its master
// by KeepalivedMastership, else its top node.
func (m *mover) holder(key string) string {
	if m.in.masters != nil {
		for _, k := range []string{key, key + "/ipv4", key + "/ipv6"} {
			if n, ok := m.in.masters[k]; ok {
				return n
			}
		}
	}
	return m.top(m.cur[key], m.in.nodes)
}

// majorityHolder is the node holding most of the members that move into the new
// router key (ties: the first name), "" when none moves in.
func (m *mover) majorityHolder(key string, members []string) string {
	count := map[string]int{}
	for _, mem := range members {
		if srcs := m.sources(m.p.members[mem], key); len(srcs) > 0 {
			if h := m.holder(srcs[0]); h != "" {
				count[h]++
			}
		}
	}
	best := ""
	for n, c := range count {
		if best == "" || c > count[best] || (c == count[best] && n < best) {
			best = n
		}
	}
	return best
}

// top is the node with the highest priority in in's priorities over nodes ("" when
// none is a member or they do not decode).
func (m *mover) top(in *v1alpha1.Instance, nodes []string) string {
	pr, err := v1alpha1.DecodePriorities(in.Priorities, len(nodes))
	if err != nil {
		return ""
	}
	best := -1
	for i, v := range pr {
		if v != v1alpha1.PriorityNotMember && (best < 0 || v > pr[best]) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return nodes[best]
}

// sources are the status' instances other than except that list one of addrs, sorted.
func (m *mover) sources(addrs []netip.Addr, except string) []string {
	var out []string
	for _, a := range addrs {
		for _, k := range m.curOf[a] {
			if k != except && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// listedIn reports whether the status' instance key lists one of addrs.
func (m *mover) listedIn(addrs []netip.Addr, key string) bool {
	for _, a := range addrs {
		if slices.Contains(m.curOf[a], key) {
			return true
		}
	}
	return false
}

func (m *mover) list(key string, addrs []netip.Addr) {
	set := m.out[key]
	if set == nil {
		set = map[netip.Addr]bool{}
		m.out[key] = set
	}
	for _, a := range addrs {
		set[a] = true
	}
}

// keep lists the member's addresses where the status has them (srcs). A member kept out of its router (not in flight)
// stays whole: an address of it that the status does not list yet joins its first
// source, so one instance lists all of it (its routerIDs entry, fixRouterIDs).
func (m *mover) keep(mem string, srcs []string, inFlight bool) {
	for _, a := range m.p.members[mem] {
		listed := false
		for _, k := range m.curOf[a] {
			if slices.Contains(srcs, k) {
				m.list(k, []netip.Addr{a})
				listed = true
			}
		}
		if !listed && !inFlight && len(srcs) > 0 {
			m.list(srcs[0], []netip.Addr{a})
		}
	}
}

// build writes p.instances: the plan's instances with the addresses listed for them
// (none: not created yet), staged ones with their holder first, then the status'
// instances the plan drops that still list an address in flight.
func (m *mover) build(staged map[string]string) {
	names := make([]string, len(m.p.nodes))
	for i, n := range m.p.nodes {
		names[i] = n.Name
	}
	var out []v1alpha1.Instance
	for _, t := range m.p.instances {
		set := m.out[t.Key]
		if len(set) == 0 {
			m.res.pending = true
			continue
		}
		if m.cur[t.Key] == nil && m.res.pending {
			// Created by this write: its clock starts now.
			m.dueIn(m.limit(t.Settings))
		}
		in := t
		in.VIPs = orderVIPs(t.Key, t.VIPs, set)
		if h := staged[t.Key]; h != "" {
			in.Priorities = stagePriorities(t.Priorities, names, h)
		}
		out = append(out, in)
	}
	for _, s := range m.in.status {
		set := m.out[s.Key]
		if m.tgt[s.Key] != nil || len(set) == 0 {
			continue
		}
		in := *s.DeepCopy()
		in.VIPs = orderVIPs(s.Key, s.VIPs, set)
		in.Priorities = v1alpha1.EncodePriorities(excludedPriorities(remapPriorities(s.Priorities, m.in.nodes, names), m.p.nodes))
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b v1alpha1.Instance) int { return cmp.Compare(a.Key, b.Key) })
	m.p.instances = out
}

// fixRouterIDs points each member's routerIDs entry at the instance that lists all its
// addresses in the step written (its router, or the instance it is kept in), so the
// vetter's grant record (grantedByRouter) finds it; and keeps as left out only the
// Services with no address written.
func (m *mover) fixRouterIDs() {
	ids := map[string]int{}
	for _, in := range m.p.instances {
		ids[in.Key] = in.VRID
	}
	served := map[types.NamespacedName]bool{}
	m.served = served
	// The instances written that list each address, in key order.
	outOf := map[netip.Addr][]string{}
	for _, in := range m.p.instances {
		for a := range m.out[in.Key] {
			outOf[a] = append(outOf[a], in.Key)
		}
	}
	for mem, addrs := range m.p.members {
		key := m.p.memberRouter[mem]
		if !m.hasAll(key, addrs) {
			key = ""
			if len(addrs) > 0 {
				for _, k := range outOf[addrs[0]] {
					if m.hasAll(k, addrs) {
						key = k
						break
					}
				}
			}
		}
		if id, ok := ids[key]; ok && key != "" {
			if m.p.routerIDs == nil {
				m.p.routerIDs = map[string]int{}
			}
			m.p.routerIDs[mem] = id
			served[serviceOfMember(mem)] = true
		} else {
			delete(m.p.routerIDs, mem)
		}
	}
	if len(m.p.routerIDs) == 0 {
		m.p.routerIDs = nil
	}
	m.p.leftOutServices = slices.DeleteFunc(m.p.leftOutServices, func(s types.NamespacedName) bool { return served[s] })
}

func (m *mover) hasAll(key string, addrs []netip.Addr) bool {
	set := m.out[key]
	if len(set) == 0 || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if !set[a] {
			return false
		}
	}
	return true
}

// serviceOfMember is the Service of a member key ("ns/name" or "ns/name/ip").
func serviceOfMember(key string) types.NamespacedName {
	ns, rest, _ := strings.Cut(key, "/")
	name, _, _ := strings.Cut(rest, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

// orderVIPs lists set in the order the instance's VIPs have (a router's sorted, as
// grantedByRouter's search needs; a per-Service instance's as the Service lists them),
// then the rest sorted.
func orderVIPs(key string, order []string, set map[netip.Addr]bool) []string {
	var addrs []netip.Addr
	done := map[netip.Addr]bool{}
	for _, a := range parseVIPs(order) {
		if set[a] && !done[a] {
			addrs = append(addrs, a)
			done[a] = true
		}
	}
	var rest []netip.Addr
	for a := range set {
		if !done[a] {
			rest = append(rest, a)
		}
	}
	slices.SortFunc(rest, netip.Addr.Compare)
	addrs = append(addrs, rest...)
	if strings.HasPrefix(key, sharing.RouterKeyPrefix) {
		slices.SortFunc(addrs, netip.Addr.Compare)
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

// stagePriorities swaps the priorities of the top node and holder in enc (over names),
// so holder is first and the top second; unchanged when holder is not a member.
func stagePriorities(enc string, names []string, holder string) string {
	pr, err := v1alpha1.DecodePriorities(enc, len(names))
	if err != nil {
		return enc
	}
	h, top := slices.Index(names, holder), -1
	for i, v := range pr {
		if top < 0 || v > pr[top] {
			top = i
		}
	}
	if h < 0 || top < 0 || h == top || pr[h] == v1alpha1.PriorityNotMember {
		return enc
	}
	pr = slices.Clone(pr)
	pr[h], pr[top] = pr[top], pr[h]
	return v1alpha1.EncodePriorities(pr)
}

// remapPriorities moves priorities from the status' node order to names; a node the
// status did not have takes no part (PriorityNotMember) in an instance kept only for
// moves in flight.
func remapPriorities(enc string, from, names []string) []uint8 {
	out := make([]uint8, len(names))
	pr, err := v1alpha1.DecodePriorities(enc, len(from))
	if err != nil {
		return out
	}
	for i, n := range names {
		if j := slices.Index(from, n); j >= 0 {
			out[i] = pr[j]
		}
	}
	return out
}

// parseVIPs parses an instance's VIPs, skipping what does not parse.
func parseVIPs(vips []string) []netip.Addr {
	out := make([]netip.Addr, 0, len(vips))
	for _, s := range vips {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}
