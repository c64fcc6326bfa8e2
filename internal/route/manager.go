package route

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/holdings"
)

// Manager adds and removes routes and rules and keeps their crash record. It is safe
// for concurrent use.
type Manager struct {
	nl     *netlink.Handle
	record holdings.Record

	mu sync.Mutex
	// routes and rules are what this Manager (or a crashed one before it) added, with
	// their holders; the entries are on disk, the holders only in memory.
	routes holdings.Book[Route, Route]
	rules  holdings.Book[Rule, Rule]
}

// Open loads what a previous run recorded in stateDir (package vip's directory, locked
// by its Manager); call [Manager.Recover] before adding anything. It works in the calling
// thread's network namespace.
func Open(stateDir string) (*Manager, error) { return open(stateDir, &netlink.Handle{}) }

// open is Open on a given netlink handle (the tests' handle into a lab namespace).
func open(stateDir string, nl *netlink.Handle) (*Manager, error) {
	if stateDir == "" {
		return nil, errors.New("route: empty state directory")
	}
	m := &Manager{nl: nl, record: record(stateDir)}
	var doc recordDoc
	if err := m.record.Read(&doc); err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	if err := validRecord(m.record.Path(), doc); err != nil {
		return nil, err
	}
	for _, r := range doc.Routes {
		m.routes.Put(r, r)
	}
	for _, r := range doc.Rules {
		m.rules.Put(r, r)
	}
	return m, nil
}

// Recorded returns what is recorded as added: this run's and a crashed run's.
func (m *Manager) Recorded() ([]Route, []Rule) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.routes.Keys(), m.rules.Keys()
}

// Hold makes sure the routes and rules are in the kernel for holder and returns those it
// found there already without having added them: foreign, never recorded, never
// removed. Rules go in first, so that a route in the table a rule selects is not used
// before the rule is; a route whose src is a VIP must be added after the VIP. An entry
// that fails (a gateway not reachable, an interface missing) is reported in err and the
// others still go in.
func (m *Manager) Hold(holder string, routes []Route, rules []Rule) (foreignRoutes []Route, foreignRules []Rule, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, r := range rules {
		foreign, err := m.holdRule(holder, r)
		if foreign {
			foreignRules = append(foreignRules, r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", r, err))
		}
	}
	for _, r := range routes {
		foreign, err := m.holdRoute(holder, r)
		if foreign {
			foreignRoutes = append(foreignRoutes, r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", r, err))
		}
	}
	return foreignRoutes, foreignRules, errors.Join(errs...)
}

func (m *Manager) holdRoute(holder string, r Route) (foreign bool, err error) {
	if err := r.Validate(); err != nil {
		return false, err
	}
	nr, err := m.toNetlink(r)
	if err != nil {
		return false, err
	}
	present, err := m.routePresent(r)
	if err != nil {
		return false, err
	}
	return hold(m, &m.routes, holder, r, present, func() error { return m.nl.RouteAdd(nr) })
}

func (m *Manager) holdRule(holder string, r Rule) (foreign bool, err error) {
	if err := r.Validate(); err != nil {
		return false, err
	}
	present, err := m.rulePresent(r)
	if err != nil {
		return false, err
	}
	return hold(m, &m.rules, holder, r, present, func() error { return m.nl.RuleAdd(toNetlinkRule(r)) })
}

// hold makes sure the entry e of book, which present says the kernel has, is there for
// holder; add adds it. One the kernel has that book does not is foreign.
func hold[E comparable](m *Manager, book *holdings.Book[E, E], holder string, e E, present bool, add func() error) (foreign bool, err error) {
	if book.Has(e) {
		book.Hold(e, holder)
		if present {
			return false, nil
		}
		return false, add() // someone took it off: back
	}
	if present {
		return true, nil
	}
	// Recorded first: a crash between the two leaves a record of an entry that may not
	// be there, which recovery tolerates; never an entry nobody knows about.
	book.Put(e, e)
	book.Hold(e, holder)
	if err := m.write(); err != nil {
		book.Drop(e)
		return false, err
	}
	if err := add(); err != nil {
		book.Drop(e)
		return false, errors.Join(err, m.write())
	}
	return false, nil
}

// Release lets go of the routes and rules for holder: those no other holder keeps leave
// the kernel (routes first, then rules) and the record. Entries this Manager did not add
// (foreign ones) are ignored.
func (m *Manager) Release(holder string, routes []Route, rules []Rule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	goneRoutes, errs := remove(&m.routes, routes, func(r Route) bool { return m.routes.Let(r, holder) }, m.delRoute, "route")
	goneRules, ruleErrs := remove(&m.rules, rules, func(r Rule) bool { return m.rules.Let(r, holder) }, m.delRule, "rule")
	errs = append(errs, ruleErrs...)
	if len(goneRoutes)+len(goneRules) > 0 {
		errs = append(errs, m.write())
	}
	return errors.Join(errs...)
}

// Recover removes everything recorded (a previous run's leftovers: this daemon starts as
// a backup) and returns it.
func (m *Manager) Recover() ([]Route, []Rule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	routes, errs := remove(&m.routes, m.routes.Keys(), func(Route) bool { return true }, m.delRoute, "route")
	rules, ruleErrs := remove(&m.rules, m.rules.Keys(), func(Rule) bool { return true }, m.delRule, "rule")
	errs = append(errs, ruleErrs...)
	if len(routes)+len(rules) > 0 {
		errs = append(errs, m.write())
	}
	return routes, rules, errors.Join(errs...)
}

// remove takes out of the kernel (del) and then out of book each of es that due says is
// due for removal, and returns those removed; one that could not be removed stays
// recorded, so that recovery tries again. The caller writes the record.
func remove[E comparable](book *holdings.Book[E, E], es []E, due func(E) bool, del func(E) error, what string) (removed []E, errs []error) {
	for _, e := range es {
		if !due(e) {
			continue // not ours, or another holder keeps it
		}
		if err := del(e); err != nil {
			errs = append(errs, fmt.Errorf("%s %v: %w", what, e, err))
			continue
		}
		book.Drop(e)
		removed = append(removed, e)
	}
	return removed, errs
}

// gone reports whether err says the entry (or its interface) is not there: a removal
// that finds nothing to remove is done.
func gone(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.As(err, &nf)
}

func (m *Manager) delRoute(r Route) error {
	present, err := m.routePresent(r)
	if err != nil || !present {
		return err
	}
	nr, err := m.toNetlink(r)
	if err == nil {
		err = m.nl.RouteDel(nr)
	}
	if gone(err) {
		return nil
	}
	return err
}

func (m *Manager) delRule(r Rule) error {
	present, err := m.rulePresent(r)
	if err != nil || !present {
		return err
	}
	if err := m.nl.RuleDel(toNetlinkRule(r)); err != nil && !gone(err) {
		return err
	}
	return nil
}

// family is netlink's family of an IPv6 flag.
func family(v6 bool) int {
	if v6 {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

// routePresent reports whether the kernel has a route that is r as far as the kernel is
// concerned: same table, destination, metric and type (for IPv6 also the same gateways,
// since two IPv6 routes differing only in gateway are one multipath route).
func (m *Manager) routePresent(r Route) (bool, error) {
	filter := &netlink.Route{Table: int(r.table()), Dst: ipNet(r.Dst)}
	got, err := m.nl.RouteListFiltered(family(r.IPv6()), filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
	if err != nil {
		return false, fmt.Errorf("list routes: %w", err)
	}
	for _, k := range got {
		if uint32(k.Priority) != r.metric() || k.Type != kernelRouteType(r.Type) {
			continue
		}
		if r.IPv6() && r.Type == TypeUnicast && !sameGateways(k, r) {
			continue
		}
		return true, nil
	}
	return false, nil
}

// sameGateways reports whether the kernel's route k has r's gateways: its one gateway, or
// those of its nexthops, in any order (the kernel keeps IPv6 nexthops as sibling routes
// and may list them in another order than they were added).
func sameGateways(k netlink.Route, r Route) bool {
	nhs := r.Nexthops.List()
	if len(nhs) == 0 {
		return len(k.MultiPath) == 0 && sameAddr(k.Gw, r.Via)
	}
	if len(k.MultiPath) != len(nhs) {
		return false
	}
	for _, n := range nhs {
		if !slices.ContainsFunc(k.MultiPath, func(h *netlink.NexthopInfo) bool { return sameAddr(h.Gw, n.Via) }) {
			return false
		}
	}
	return true
}

func sameAddr(ip net.IP, a netip.Addr) bool {
	if !a.IsValid() {
		return len(ip) == 0
	}
	b, ok := netip.AddrFromSlice(ip)
	return ok && b.Unmap() == a
}

// rulePresent reports whether the kernel has a rule with r's selectors and action.
func (m *Manager) rulePresent(r Rule) (bool, error) {
	got, err := m.nl.RuleList(family(r.IPv6))
	if err != nil {
		return false, fmt.Errorf("list rules: %w", err)
	}
	for _, k := range got {
		if sameRule(k, r) {
			return true, nil
		}
	}
	return false, nil
}

func sameRule(k netlink.Rule, r Rule) bool {
	if r.HasPriority && k.Priority != int(r.Priority) {
		return false
	}
	if !samePrefix(k.Src, r.From) || !samePrefix(k.Dst, r.To) {
		return false
	}
	if !sameMark(k, r) {
		return false
	}
	if k.IifName != r.IIF || k.OifName != r.OIF || k.Invert != r.Invert {
		return false
	}
	if r.Type == TypeUnicast {
		return k.Table == int(r.Table) && (k.Type == 0 || k.Type == unix.FR_ACT_TO_TBL)
	}
	// netlink's rule dump does not report the action (v1.3.1 drops the header's type):
	// a rule with no table is one of blackhole, unreachable and prohibit. Taking any of
	// them for r errs on the safe side: foreign, so left alone. A removal names the
	// action, and the kernel matches it.
	return k.Table == 0
}

// sameMark compares the fwmark selectors: the kernel reports a mark given without a mask
// with the mask 0xffffffff.
func sameMark(k netlink.Rule, r Rule) bool {
	kmask := uint32(0)
	if k.Mask != nil {
		kmask = *k.Mask
	}
	if !r.HasMark {
		return k.Mark == 0 && kmask == 0
	}
	want := r.Mask
	if want == 0 {
		want = 0xffffffff
	}
	return k.Mark == r.Mark && (kmask == want || (k.Mask == nil && r.Mask == 0))
}

func samePrefix(n *net.IPNet, p netip.Prefix) bool {
	if !p.IsValid() {
		return n == nil || isAll(n)
	}
	if n == nil {
		return false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	ones, _ := n.Mask.Size()
	return ok && netip.PrefixFrom(a.Unmap(), ones) == p
}

// isAll reports whether n is 0.0.0.0/0 or ::/0, which the kernel shows for "all".
func isAll(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0 && n.IP.IsUnspecified()
}

func ipNet(p netip.Prefix) *net.IPNet {
	if !p.IsValid() {
		return nil
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func kernelRouteType(t Type) int {
	switch t {
	case TypeBlackhole:
		return unix.RTN_BLACKHOLE
	case TypeUnreachable:
		return unix.RTN_UNREACHABLE
	case TypeProhibit:
		return unix.RTN_PROHIBIT
	case TypeThrow:
		return unix.RTN_THROW
	}
	return unix.RTN_UNICAST
}

func kernelRuleType(t Type) uint8 {
	switch t {
	case TypeBlackhole:
		return unix.FR_ACT_BLACKHOLE
	case TypeUnreachable:
		return unix.FR_ACT_UNREACHABLE
	case TypeProhibit:
		return unix.FR_ACT_PROHIBIT
	}
	return unix.FR_ACT_TO_TBL
}

// toNetlink is r as netlink adds and deletes it; the device must exist.
func (m *Manager) toNetlink(r Route) (*netlink.Route, error) {
	nr := &netlink.Route{
		Family:   family(r.IPv6()),
		Dst:      ipNet(r.Dst),
		Table:    int(r.table()),
		Priority: int(r.Metric),
		Scope:    netlink.Scope(r.Scope),
		Type:     kernelRouteType(r.Type),
		Protocol: netlink.RouteProtocol(r.Protocol),
	}
	if r.Src.IsValid() {
		nr.Src = r.Src.AsSlice()
	}
	if r.Via.IsValid() {
		nr.Gw = r.Via.AsSlice()
	}
	if r.OnLink {
		nr.Flags = int(netlink.FLAG_ONLINK)
	}
	if r.Dev != "" {
		index, err := m.linkIndex(r.Dev)
		if err != nil {
			return nil, err
		}
		nr.LinkIndex = index
	}
	for _, n := range r.Nexthops.List() {
		nh, err := m.toNetlinkNexthop(n)
		if err != nil {
			return nil, err
		}
		nr.MultiPath = append(nr.MultiPath, nh)
	}
	return nr, nil
}

// toNetlinkNexthop is one path of a multipath route (RTA_MULTIPATH's rtnexthop).
func (m *Manager) toNetlinkNexthop(n Nexthop) (*netlink.NexthopInfo, error) {
	nh := &netlink.NexthopInfo{}
	if n.Via.IsValid() {
		nh.Gw = n.Via.AsSlice()
	}
	if n.Weight > 1 {
		nh.Hops = int(n.Weight) - 1 // rtnh_hops holds weight-1
	}
	if n.OnLink {
		nh.Flags = int(netlink.FLAG_ONLINK)
	}
	if n.Dev != "" {
		index, err := m.linkIndex(n.Dev)
		if err != nil {
			return nil, err
		}
		nh.LinkIndex = index
	}
	return nh, nil
}

// linkIndex is the index of interface name.
func (m *Manager) linkIndex(name string) (int, error) {
	link, err := m.nl.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("interface %s: %w", name, err)
	}
	return link.Attrs().Index, nil
}

func toNetlinkRule(r Rule) *netlink.Rule {
	nr := netlink.NewRule()
	nr.Family = family(r.IPv6)
	nr.Src, nr.Dst = ipNet(r.From), ipNet(r.To)
	if r.HasPriority {
		nr.Priority = int(r.Priority)
	}
	if r.HasMark {
		nr.Mark = r.Mark
		if r.Mask != 0 {
			mask := r.Mask
			nr.Mask = &mask
		}
	}
	nr.IifName, nr.OifName, nr.Invert = r.IIF, r.OIF, r.Invert
	nr.Protocol = r.Protocol
	if r.Type == TypeUnicast {
		nr.Table = int(r.Table)
	} else {
		nr.Type = kernelRuleType(r.Type)
	}
	return nr
}
