package controller

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/ipam"
)

// This file decides, for a shared cluster, which VIPs a Service really gets:
// platform admins own KeepalivedGroups, tenants own Services, and a tenant
// must not reach past what the group's admin allowed. Both reconcilers ask
// the same vetter, so the group's status (what vrrpd announces) and the
// Service's Events (what the tenant is told) never disagree.

// namespaceAllowed reports whether Services of namespace ns (nil: not found,
// so no labels) may attach to g, and if not, why.
func namespaceAllowed(g *v1alpha1.KeepalivedGroup, name string, ns *corev1.Namespace) (bool, string) {
	an := g.Spec.AllowedNamespaces
	if an == nil || an.From == v1alpha1.NamespacesFromAll {
		return true, ""
	}
	switch an.From {
	case v1alpha1.NamespacesFromSame:
		if name == g.Namespace {
			return true, ""
		}
		return false, fmt.Sprintf("group %s/%s admits Services of its own namespace only (allowedNamespaces.from: Same)", g.Namespace, g.Name)
	case v1alpha1.NamespacesFromSelector:
		if slices.Contains(an.Names, name) {
			return true, ""
		}
		if an.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(an.Selector)
			if err != nil {
				return false, fmt.Sprintf("group %s/%s: allowedNamespaces.selector: %v", g.Namespace, g.Name, err)
			}
			var lbls labels.Set
			if ns != nil {
				lbls = ns.Labels
			}
			if sel.Matches(lbls) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("namespace %s is neither listed in allowedNamespaces.names of group %s/%s nor matches its selector", name, g.Namespace, g.Name)
	}
	// The CRD admits only the three values; anything else admits nobody.
	return false, fmt.Sprintf("group %s/%s: allowedNamespaces.from %q is unknown", g.Namespace, g.Name, an.From)
}

// externalIPAllowed reports whether a group's externalIPs policy admits a.
func externalIPAllowed(p *v1alpha1.ExternalIPPolicy, pool *ipam.Pool, a netip.Addr) bool {
	if p == nil {
		return true
	}
	if p.FromAddressPool && pool.Contains(a) {
		return true
	}
	for _, s := range p.AllowedCIDRs {
		if pfx, err := netip.ParsePrefix(s); err == nil && pfx.Masked().Contains(a) {
			return true
		}
	}
	return false
}

// groupFacts is what the vetter knows about one group.
type groupFacts struct {
	g *v1alpha1.KeepalivedGroup // nil: the group does not exist
	// pool is the parsed addressPool; nil when there is none or it does
	// not parse (the group is Degraded then).
	pool *ipam.Pool
	// nodeAddrs maps every InternalIP and ExternalIP of the group's member
	// nodes to the node's name: a node's own address is never a VIP. When the
	// vetter read no Nodes, nodeByAddr asks the cache's index instead.
	nodeAddrs  map[netip.Addr]string
	nodeByAddr func(netip.Addr) (string, bool)
	// ledger: who held each address of the group's shared routers in the
	// last status this process wrote (grantLedger; nil: nothing known).
	ledger map[netip.Addr][]string
}

// nodeOf names the Node whose own address a is.
func (f *groupFacts) nodeOf(a netip.Addr) (string, bool) {
	if f.nodeByAddr != nil {
		return f.nodeByAddr(a)
	}
	n, ok := f.nodeAddrs[a]
	return n, ok
}

// addrSource says where a Service's address comes from, for addrProblem.
type addrSource int

const (
	// fromPool: the operator allocated it (an ingress address inside the
	// group's pool) or is asked to (loadbalancerips, spec.loadBalancerIP).
	fromPool addrSource = iota
	// fromExternalIPs: spec.externalIPs, the tenant's word.
	fromExternalIPs
	// fromOtherIngress: status.loadBalancer.ingress outside the group's pool,
	// which the operator never writes: another controller's word (OpenShift's
	// autoAssignCIDRs, a second load balancer), checked as an externalIP is.
	fromOtherIngress
)

// addrProblem says why addr may not be a VIP of this group's Service, or ""
// when it may.
func (f *groupFacts) addrProblem(a netip.Addr, src addrSource) (reason, msg string) {
	ref := f.g.Namespace + "/" + f.g.Name
	if p := ipam.HostProblem(a); p != "" {
		return ReasonAddressNotUsable, fmt.Sprintf("%s %s, not a unicast host address; not served", a, p)
	}
	if f.pool.IsEdge(a) {
		return ReasonAddressNotUsable, fmt.Sprintf("%s is the network, broadcast or subnet-router address of a CIDR in the address pool of group %s; not served", a, ref)
	}
	if n, ok := f.nodeOf(a); ok {
		return ReasonAddressNotUsable, fmt.Sprintf("%s is an address of node %s, a member of group %s; not served", a, n, ref)
	}
	if src != fromPool && !externalIPAllowed(f.g.Spec.ExternalIPs, f.pool, a) {
		if src == fromOtherIngress {
			return ReasonExternalIPNotAllowed, fmt.Sprintf("status.loadBalancer.ingress %s is not from the address pool of group %s (another controller wrote it) and outside what the group allows (spec.externalIPs); not served", a, ref)
		}
		return ReasonExternalIPNotAllowed, fmt.Sprintf("externalIP %s is outside what group %s allows (spec.externalIPs); not served", a, ref)
	}
	return "", ""
}

// granted reports whether the group's status already lists addr as a VIP of
// svc: the durable record of an earlier grant. The status is written by the
// operator alone (a tenant may write its Service, never the group's status),
// survives a restart of the operator, and costs no byte more than the
// instances it already lists. Instances are sorted by key ("ns/name", or
// "ns/name/ip" with spreadvips), so the lookup is a binary search.
func (f *groupFacts) granted(svc types.NamespacedName, addr netip.Addr) bool {
	if f.g == nil {
		return false
	}
	ins := f.g.Status.Instances
	key := svc.Namespace + "/" + svc.Name
	has := func(in *v1alpha1.Instance) bool {
		for _, s := range in.VIPs {
			if a, err := netip.ParseAddr(s); err == nil && a.Unmap() == addr {
				return true
			}
		}
		return false
	}
	byKey := func(in v1alpha1.Instance, k string) int { return cmp.Compare(in.Key, k) }
	if i, ok := slices.BinarySearchFunc(ins, key, byKey); ok && has(&ins[i]) {
		return true
	}
	// spreadvips: one instance per VIP, keyed "ns/name/ip", contiguous in
	// sorted order.
	prefix := key + "/"
	i, _ := slices.BinarySearchFunc(ins, prefix, byKey)
	for ; i < len(ins) && strings.HasPrefix(ins[i].Key, prefix); i++ {
		if has(&ins[i]) {
			return true
		}
	}
	// Shared routers (controller/sharing.go): routerIDs names the member's
	// router, which lists the address; contestedGrants and the ledger say
	// which member (grantrecord.go).
	return grantedShared(&f.g.Status, f.ledger, key, addr)
}

// nodeOwnAddrs lists every InternalIP and ExternalIP of every Node, not only
// the group's: a node outside the group (a control-plane node, another
// group's) must not have its address announced by this one either.
func nodeOwnAddrs(nodes []corev1.Node) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for i := range nodes {
		n := &nodes[i]
		for _, na := range n.Status.Addresses {
			if na.Type != corev1.NodeInternalIP && na.Type != corev1.NodeExternalIP {
				continue
			}
			if a, err := netip.ParseAddr(na.Address); err == nil {
				out[a.Unmap()] = n.Name
			}
		}
	}
	return out
}

// claim is one address a Service asks for and would get if nobody else
// held it. ingress: the allocator wrote it to status.loadBalancer.ingress
// (an ingress address inside the group's pool). granted: the group's status
// records it as the Service's VIP (groupFacts.granted).
type claim struct {
	addr    netip.Addr
	ingress bool
	granted bool
}

// refusal is one reason a Service gets less than it asked for.
type refusal struct {
	reason, msg string
}

// claimant is a Service claiming an address, for deciding who holds it.
type claimant struct {
	svc     types.NamespacedName
	created metav1.Time
	granted bool
	ingress bool
	share   string // the allow-shared-ip annotation, "" when absent
}

// firstHolders returns the claimants that hold an address: the first in
// rank order and, when it carries the allow-shared-ip annotation, every other
// claimant of its namespace with the same value.
//
// Rank: the first grant wins, whatever the Services' ages. A claimant the
// group's status already records as holding the address (granted) outranks
// every other, so an older Service that adds an address a newer one holds
// gets nothing, and a restarted operator keeps every grant. Among claimants
// none of which holds it yet (a new address, or an upgrade from a status
// without the address), an address the allocator handed out (status
// ingress) before one listed in externalIPs, so an older Service cannot
// take an allocated address by listing it; then the older Service
// (creationTimestamp), then namespace, then name, which are stable and the
// same in every reconcile and every operator process.
func firstHolders(cs []claimant) []types.NamespacedName {
	if len(cs) == 0 {
		return nil
	}
	cs = slices.Clone(cs)
	trueFirst := func(a, b bool) int {
		switch {
		case a == b:
			return 0
		case a:
			return -1
		}
		return 1
	}
	slices.SortFunc(cs, func(a, b claimant) int {
		if c := trueFirst(a.granted, b.granted); c != 0 {
			return c
		}
		if c := trueFirst(a.ingress, b.ingress); c != 0 {
			return c
		}
		if !a.created.Equal(&b.created) {
			if a.created.Before(&b.created) {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.svc.Namespace, b.svc.Namespace), cmp.Compare(a.svc.Name, b.svc.Name))
	})
	holder := cs[0]
	out := []types.NamespacedName{holder.svc}
	if holder.share == "" {
		return out
	}
	for _, c := range cs[1:] {
		if c.svc.Namespace == holder.svc.Namespace && c.share == holder.share && !slices.Contains(out, c.svc) {
			out = append(out, c.svc)
		}
	}
	return out
}

// vetter answers, within one reconcile, which group a Service is served by
// and which of its addresses it holds. It reads through the manager's cache
// and remembers what it read, so a group of many Services costs one lookup
// per group, namespace and address.
type vetter struct {
	ctx        context.Context
	r          client.Reader
	nodes      []corev1.Node
	nodesRead  bool
	groups     map[types.NamespacedName]*groupFacts
	namespaces map[string]*corev1.Namespace
	holders    map[netip.Addr][]types.NamespacedName
	// contested: the addresses holdersOf found claimed by Services other
	// than their holders (status.contestedGrants).
	contested  map[netip.Addr]bool
	ledger     *grantLedger
	nodeOfAddr map[netip.Addr]string // nodeByAddr's answers ("" for none)
	// unsynced: the operator's view of the Services may be incomplete (its
	// cache has not listed them all yet), so no address is granted that the
	// group's status does not already record: fail closed (withSynced).
	unsynced bool
	// deferred: vips left out an address because the view could not decide
	// it (unsynced, or the address index has not caught up with the
	// Service); the caller requeues.
	deferred bool
	// groupNamespaces is Options.GroupNamespaces (nil: any namespace): a
	// group elsewhere runs nothing, so its Services hold no address, not
	// even one that would block another group's Service (AddressInUse).
	groupNamespaces namespaceList
}

func newVetter(ctx context.Context, r client.Reader) *vetter {
	return &vetter{
		ctx: ctx, r: r,
		groups:     map[types.NamespacedName]*groupFacts{},
		namespaces: map[string]*corev1.Namespace{},
		holders:    map[netip.Addr][]types.NamespacedName{},
		nodeOfAddr: map[netip.Addr]string{},
	}
}

// withSynced tells the vetter whether the operator's view of the Services
// is complete (see unsynced).
func (v *vetter) withSynced(synced bool) *vetter {
	v.unsynced = !synced
	return v
}

// withGroupNamespaces tells the vetter where groups may live.
func (v *vetter) withGroupNamespaces(l namespaceList) *vetter {
	v.groupNamespaces = l
	return v
}

// withLedger hands the vetter the process's grant ledger (grantrecord.go).
func (v *vetter) withLedger(l *grantLedger) *vetter {
	v.ledger = l
	return v
}

// withNodes hands the vetter a Node list the caller has already read.
func (v *vetter) withNodes(nodes []corev1.Node) *vetter {
	v.nodes, v.nodesRead = nodes, true
	return v
}

// group returns what is known of a group; facts.g is nil when it does not
// exist.
func (v *vetter) group(ref types.NamespacedName) (*groupFacts, error) {
	if f, ok := v.groups[ref]; ok {
		return f, nil
	}
	var g v1alpha1.KeepalivedGroup
	// Read-only, as the Nodes below: the cache's object, its large status not copied.
	switch err := v.r.Get(v.ctx, ref, &g, client.UnsafeDisableDeepCopy); {
	case apierrors.IsNotFound(err):
		v.groups[ref] = &groupFacts{}
		return v.groups[ref], nil
	case err != nil:
		return nil, err
	}
	if !v.nodesRead {
		// A Service's reconcile checks a few addresses: it asks the Node index about
		// each rather than reading every Node (500 Nodes read per Service were an
		// eighth of the operator's CPU at 5,000 Services).
		v.seed(&g, nil)
		v.groups[ref].nodeByAddr = v.nodeByAddr
		return v.groups[ref], nil
	}
	v.seed(&g, v.nodes)
	return v.groups[ref], nil
}

// nodeByAddr names the Node whose own address a is, from the cache's index.
// A failed read counts as a Node's address: refusing an address for a moment
// is harmless, announcing a node's own address as a VIP is not.
func (v *vetter) nodeByAddr(a netip.Addr) (string, bool) {
	if n, ok := v.nodeOfAddr[a]; ok {
		return n, n != ""
	}
	var nl corev1.NodeList
	if err := v.r.List(v.ctx, &nl, client.MatchingFields{indexNodeAddresses: a.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Sprintf("? (the Nodes could not be read: %v)", err), true
	}
	name := ""
	if len(nl.Items) > 0 {
		name = nl.Items[0].Name
	}
	v.nodeOfAddr[a] = name
	return name, name != ""
}

// seed records a group the caller has already read.
func (v *vetter) seed(g *v1alpha1.KeepalivedGroup, nodes []corev1.Node) {
	f := &groupFacts{g: g, nodeAddrs: nodeOwnAddrs(nodes), ledger: v.ledger.of(types.NamespacedName{Namespace: g.Namespace, Name: g.Name})}
	if ap := g.Spec.AddressPool; ap != nil {
		f.pool, _ = ipam.Parse(rangesToStrings(ap.Addresses), rangesToStrings(ap.ExcludedAddresses))
	}
	v.groups[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = f
}

func (v *vetter) namespace(name string) (*corev1.Namespace, error) {
	if ns, ok := v.namespaces[name]; ok {
		return ns, nil
	}
	var ns corev1.Namespace
	err := v.r.Get(v.ctx, types.NamespacedName{Name: name}, &ns)
	switch {
	case apierrors.IsNotFound(err):
		v.namespaces[name] = nil
		return nil, nil
	case err != nil:
		return nil, err
	}
	v.namespaces[name] = &ns
	return &ns, nil
}

// served returns the group that serves svc, or nil with the refusal that
// says why not (nil too when the Service is simply not ours: no or a bad
// annotation, another load-balancer class, no VIP source).
func (v *vetter) served(svc *corev1.Service) (*groupFacts, *refusal, error) {
	ref, ok := groupOf(svc)
	if !ok || !isInstanceSource(svc) {
		return nil, nil, nil
	}
	f, err := v.group(ref)
	if err != nil || f.g == nil {
		return nil, nil, err
	}
	if v.groupNamespaces != nil && !v.groupNamespaces.allows(f.g.Namespace) {
		return nil, &refusal{ReasonGroupNotAllowed, fmt.Sprintf("KeepalivedGroup %s/%s is in a namespace that may not hold groups; no VIP", f.g.Namespace, f.g.Name)}, nil
	}
	ns, err := v.namespace(svc.Namespace)
	if err != nil {
		return nil, nil, err
	}
	if ok, why := namespaceAllowed(f.g, svc.Namespace, ns); !ok {
		return nil, &refusal{ReasonNamespaceNotAllowed, why + "; no VIP"}, nil
	}
	return f, nil, nil
}

// claims lists the addresses svc may ask for under its group's rules, and
// the refusals for the others. It does not look at other Services.
func (v *vetter) claims(svc *corev1.Service) ([]claim, []refusal, error) {
	f, ref, err := v.served(svc)
	if err != nil || f == nil {
		if ref != nil {
			return nil, []refusal{*ref}, err
		}
		return nil, nil, err
	}
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	var out []claim
	var refused []refusal
	seen := map[netip.Addr]bool{}
	add := func(s string, src addrSource) {
		a, err := netip.ParseAddr(s)
		if err != nil || seen[a] {
			return // bad entries are reported where the annotations are checked
		}
		seen[a] = true
		if reason, msg := f.addrProblem(a, src); reason != "" {
			refused = append(refused, refusal{reason, msg})
			return
		}
		out = append(out, claim{addr: a, ingress: src == fromPool, granted: f.granted(self, a)})
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP == "" {
			continue
		}
		// The operator writes only addresses of the group's pool. Anything
		// else in the ingress another controller wrote (or anyone who may
		// write the Service's status): not trusted as an allocation, it is
		// checked as an externalIP is and gets no allocated address's rank.
		src := fromOtherIngress
		if a, err := netip.ParseAddr(in.IP); err == nil && f.pool.Contains(a) {
			src = fromPool
		}
		add(in.IP, src)
	}
	for _, s := range svc.Spec.ExternalIPs {
		add(s, fromExternalIPs)
	}
	return out, refused, nil
}

// holdersOf returns the Services holding addr: of every Service the
// operator serves that validly claims it (the address index names the
// candidates), the first ones by firstHolders.
func (v *vetter) holdersOf(addr netip.Addr) ([]types.NamespacedName, error) {
	if h, ok := v.holders[addr]; ok {
		return h, nil
	}
	var list corev1.ServiceList
	// Read-only: the cache's objects, not copies (the allocator asks this
	// for every address it tries).
	if err := v.r.List(v.ctx, &list, client.MatchingFields{indexServiceAddresses: addr.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var cs []claimant
	for i := range list.Items {
		s := &list.Items[i]
		if foreignIngress(s, addr) {
			cs = append(cs, claimant{svc: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, created: s.CreationTimestamp, ingress: true})
			continue
		}
		claims, _, err := v.claims(s)
		if err != nil {
			return nil, err
		}
		for _, c := range claims {
			if c.addr == addr {
				cs = append(cs, claimant{
					svc:     types.NamespacedName{Namespace: s.Namespace, Name: s.Name},
					created: s.CreationTimestamp,
					granted: c.granted,
					ingress: c.ingress,
					share:   s.Annotations[v1alpha1.AnnotationSharedIP],
				})
				break
			}
		}
	}
	h := firstHolders(cs)
	v.holders[addr] = h
	if len(cs) > len(h) {
		if v.contested == nil {
			v.contested = map[netip.Addr]bool{}
		}
		v.contested[addr] = true
	}
	return h, nil
}

// vips returns the VIPs svc holds, sorted, and why it gets no others.
func (v *vetter) vips(svc *corev1.Service) ([]netip.Addr, []refusal, error) {
	claims, refused, err := v.claims(svc)
	if err != nil {
		return nil, nil, err
	}
	self := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	var out []netip.Addr
	for _, c := range claims {
		h, err := v.holdersOf(c.addr)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case v.unsynced && !c.granted:
			// Fail closed: a Service the view has not seen yet may hold it.
			v.deferred = true
			continue
		case slices.Contains(h, self):
			out = append(out, c.addr)
			continue
		case len(h) == 0:
			// The index has not caught up with this Service yet, so it
			// cannot say who else claims the address: not granted until it
			// has (fail closed; the caller requeues).
			v.deferred = true
			continue
		}
		refused = append(refused, refusal{ReasonAddressInUse, fmt.Sprintf(
			"%s is held by Service %s, to which it was granted first (whatever the Services' ages; among Services not granted it yet, an allocated address before an externalIP, then the older Service); both may have it only in one namespace with the same %s annotation; not served",
			c.addr, h[0], v1alpha1.AnnotationSharedIP)})
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out, refused, nil
}

// blockers lists the Services other than self that hold or validly claim
// addr in a way that keeps self from having it: the allocator's view. A
// Service the operator does not serve (no group annotation, a namespace the
// group does not admit, an address the group refuses) blocks nothing, so a
// Service listing a whole pool in its externalIPs cannot starve the pool
// unless its group admits it. With share, one in self's namespace with
// self's allow-shared-ip value shares rather than blocks: for an address
// self names (requested or already held), never for a fresh pick from the
// pool, so automatic assignment never puts two Services on one address.
func (v *vetter) blockers(addr netip.Addr, self *corev1.Service, share bool) ([]types.NamespacedName, error) {
	var list corev1.ServiceList
	// Read-only, as in holdersOf: Pool.Allocate asks for each address it tries.
	if err := v.r.List(v.ctx, &list, client.MatchingFields{indexServiceAddresses: addr.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	key := self.Annotations[v1alpha1.AnnotationSharedIP]
	var out []types.NamespacedName
	for i := range list.Items {
		s := &list.Items[i]
		if s.Namespace == self.Namespace && s.Name == self.Name {
			continue
		}
		if share && key != "" && s.Namespace == self.Namespace && s.Annotations[v1alpha1.AnnotationSharedIP] == key {
			continue
		}
		if foreignIngress(s, addr) {
			out = append(out, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
			continue
		}
		claims, _, err := v.claims(s)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(claims, func(c claim) bool { return c.addr == addr }) {
			out = append(out, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		}
	}
	return out, nil
}

// sharesWith reports whether other is in self's namespace with self's
// non-empty allow-shared-ip value (read from the cache).
func (v *vetter) sharesWith(self *corev1.Service, other types.NamespacedName) bool {
	key := self.Annotations[v1alpha1.AnnotationSharedIP]
	if key == "" || other.Namespace != self.Namespace {
		return false
	}
	var o corev1.Service
	if err := v.r.Get(v.ctx, other, &o); err != nil {
		return false
	}
	return o.Annotations[v1alpha1.AnnotationSharedIP] == key
}

// foreignIngress reports whether another load balancer gave s the address addr:
// s is not ours (no group annotation, or another load-balancer class) and its
// status.loadBalancer.ingress holds addr. Such an address is held, whatever
// the rules for our own Services say: a tenant's externalIPs must not take
// the address MetalLB or a cloud gave another Service.
func foreignIngress(s *corev1.Service, addr netip.Addr) bool {
	if _, ours := groupOf(s); ours && classIsOurs(s) {
		return false
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && a.Unmap() == addr {
			return true
		}
	}
	return false
}
