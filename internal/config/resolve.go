package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Options are the differences between the sources of a Config that the shared rules
// must know about. The zero value is keepalived.conf's and the YAML file's behaviour.
type Options struct {
	// MissingPassword, when not empty, makes a VRRPv2 instance that asks for
	// authentication but has no password an error with this text, instead of a warning
	// and no authentication. Kubernetes mode sets it: its peers do authenticate, so a
	// node running without would be ignored by them and become a second master.
	MissingPassword string
	// InterfaceMTU is the MTU of the named interface, for the rule of how many VIPs an
	// advertisement carries (vrrp.AddressesThatFit); ok false when the interface is not
	// there (vrrp.DefaultMTU is then assumed, as keepalived assumes it). nil looks the
	// interface up in the current network namespace.
	InterfaceMTU func(ifname string) (mtu int, ok bool)
}

// hostInterfaceMTU is Options.InterfaceMTU's default: the interface of this name in the
// current network namespace.
func hostInterfaceMTU(ifname string) (int, bool) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return 0, false
	}
	return ifi.MTU, true
}

// resolver carries one Resolve: the draft, what it inherits, and the warnings so far.
type resolver struct {
	d   *Draft
	g   Globals
	opt Options
	in  Instance
	ws  []Warning
}

func (r *resolver) warn(pos Position, format string, a ...any) {
	r.ws = append(r.ws, Warning{Pos: pos, Message: fmt.Sprintf("(%s) ", r.d.name) + fmt.Sprintf(format, a...)})
}

func (r *resolver) fail(pos Position, format string, a ...any) error {
	return &Error{Pos: pos, Message: fmt.Sprintf("(%s) ", r.d.name) + fmt.Sprintf(format, a...)}
}

// or returns pos, or the instance's position when pos is unknown.
func (r *resolver) or(pos Position) Position {
	if pos.File == "" {
		return r.d.pos
	}
	return pos
}

// Resolve applies defaults from g to d and checks it the way keepalived's
// vrrp_complete_instance does. Problems keepalived fixes up with a message become
// warnings; problems that make keepalived drop the instance become errors. Instances are
// checked one at a time; (*Config).Validate checks them against each other.
func Resolve(d *Draft, g Globals, opt Options) (Instance, []Warning, error) {
	r := &resolver{d: d, g: g, opt: opt}
	for _, step := range []func() error{
		r.identity, r.family, r.version, r.priorityAndState, r.auth, r.interval, r.downTimer,
		r.preemption, r.transport, r.addresses, r.announcements, r.advertHandling,
		r.vmac, r.tracking, r.routing, r.moreTracking,
	} {
		if err := step(); err != nil {
			return Instance{}, r.ws, err
		}
	}
	return r.in, r.ws, nil
}

// identity: name, interface and VRID are required.
func (r *resolver) identity() error {
	d := r.d
	if d.name == "" {
		return &Error{Pos: d.pos, Message: "instance has no name"}
	}
	r.in = Instance{Name: d.name, Interface: d.iface, Source: d.pos, Strict: r.g.strict}
	if d.strict != nil {
		r.in.Strict = *d.strict
	}
	if d.iface == "" {
		return r.fail(d.pos, "no interface given")
	}
	if d.vrid == nil {
		return r.fail(d.pos, "no virtual router ID given (virtual_router_id, 1..255)")
	}
	r.in.VRID = *d.vrid
	return nil
}

// family comes from the first VIP, else the unicast addresses; IPv4 otherwise. Every
// address of the instance must be of it.
func (r *resolver) family() error {
	d, in := r.d, &r.in
	in.Family = IPv4
	switch {
	case len(d.vips) > 0:
		in.Family = vrrp.FamilyOf(d.vips[0].Prefix.Addr())
	case d.src.IsValid():
		in.Family = vrrp.FamilyOf(d.src)
	case len(d.peers) > 0:
		in.Family = vrrp.FamilyOf(d.peers[0].Prefix.Addr())
	}
	for _, v := range d.vips {
		if f := vrrp.FamilyOf(v.Prefix.Addr()); f != in.Family {
			return r.fail(v.pos, "VIP %s is %s but the instance is %s: one instance carries one family (use virtual_ipaddress_excluded or a second instance)", v.Prefix, f, in.Family)
		}
	}
	if d.src.IsValid() && vrrp.FamilyOf(d.src) != in.Family {
		return r.fail(d.srcPos, "source address %s is not %s like the instance", d.src, in.Family)
	}
	for _, p := range d.peers {
		if vrrp.FamilyOf(p.Prefix.Addr()) != in.Family {
			return r.fail(p.pos, "unicast peer %s is not %s like the instance", p.Prefix.Addr(), in.Family)
		}
	}
	return nil
}

// version: the instance's, else the global one; IPv6 is always VRRPv3. keepalived
// tolerates a VRRPv2 IPv4 instance without VIPs; an advertisement with no address has
// nothing to fail over, and the state machine refuses it, so vrrpd does too.
func (r *resolver) version() error {
	d, in := r.d, &r.in
	in.Version = r.g.version
	if d.version != 0 {
		in.Version = d.version
	}
	if in.Family == IPv6 && in.Version != vrrp.Version3 {
		if d.version == vrrp.Version2 {
			r.warn(r.or(d.versionPos), "VRRP version 2 cannot carry IPv6; using version 3")
		}
		in.Version = vrrp.Version3
	}
	if len(d.vips) == 0 {
		// keepalived (vrrp_complete_instance): required for VRRPv3, IPv6 and strict mode;
		// a VRRPv2 IPv4 instance runs without, for notify scripts that move an address.
		if in.Version == vrrp.Version3 || in.Family == IPv6 || in.Strict {
			return r.fail(d.pos, "no VIP specified; at least one is required")
		}
		r.warn(d.pos, "no VIP specified; at least one is sensible")
	}
	return nil
}

// priorityAndState derive from each other when only one is given.
func (r *resolver) priorityAndState() error {
	d, in := r.d, &r.in
	in.InitialState = d.state
	switch {
	case d.priority != nil:
		in.Priority = *d.priority
	case d.state == StateMaster:
		in.Priority = 255
	default:
		in.Priority = DefaultPriority
	}
	owner := StateBackup
	if in.Priority == 255 {
		owner = StateMaster
	}
	switch {
	case in.InitialState == "":
		in.InitialState = owner
	case in.Strict && in.InitialState != owner:
		// keepalived's strict mode: MASTER if and only if the address owner.
		r.warn(r.or(d.statePos), "strict mode: state MASTER must match being address owner (priority 255); using %s", owner)
		in.InitialState = owner
	}
	return nil
}

// auth: authentication exists in VRRPv2 only.
func (r *resolver) auth() error {
	d, in := r.d, &r.in
	if d.auth == nil || *d.auth == vrrp.AuthNone {
		return nil
	}
	pos := r.or(d.authPos)
	switch {
	case in.Strict:
		r.warn(pos, "strict mode does not support authentication; ignoring it")
	case in.Version == vrrp.Version3:
		r.warn(pos, "VRRP version 3 does not support authentication; ignoring it")
	case d.authPass == "" && r.opt.MissingPassword != "":
		return r.fail(pos, "%s", r.opt.MissingPassword)
	case d.authPass == "":
		r.warn(pos, "authentication specified but no password given; ignoring it")
	default:
		in.AuthType = *d.auth
		in.AuthPass = d.authPass
	}
	return nil
}

// interval: whole seconds up to 255 s for v2, centiseconds up to 40.95 s for v3, rounded
// with a warning as keepalived does.
func (r *resolver) interval() error {
	d, in := r.d, &r.in
	in.AdvertInterval = r.g.advertInterval
	if d.advert != 0 {
		in.AdvertInterval = d.advert
	}
	pos := r.or(d.advertPos)
	unit, limit, units := 10*time.Millisecond, maxAdvertIntervalV3, "be in units of 10ms"
	if in.Version == vrrp.Version2 {
		unit, limit, units = time.Second, maxAdvertIntervalV2, "be whole seconds"
	}
	switch {
	case in.AdvertInterval > limit:
		r.warn(pos, "VRRPv%d advertisement interval %v is out of range; using %v", in.Version, in.AdvertInterval, limit)
		in.AdvertInterval = limit
	case in.AdvertInterval%unit != 0:
		rounded := max(in.AdvertInterval.Round(unit), unit)
		r.warn(pos, "VRRPv%d advertisement interval %v must %s; rounding to %v", in.Version, in.AdvertInterval, units, rounded)
		in.AdvertInterval = rounded
	}
	return nil
}

// downTimer: RFC 5798's 3 intervals unless down_timer_adverts (or the global
// vrrp_down_timer_adverts) says otherwise; strict mode
// keeps the RFC's, as keepalived does (vrrp_complete_instance).
func (r *resolver) downTimer() error {
	d, in := r.d, &r.in
	n, pos := r.g.downTimerAdverts, d.pos
	if d.downTimerAdverts != 0 {
		n, pos = d.downTimerAdverts, r.or(d.downTimerPos)
	}
	if in.Strict && n != 0 && n != DefaultDownTimerAdverts {
		r.warn(pos, "down_timer_adverts is incompatible with strict mode; using %d", DefaultDownTimerAdverts)
		n = 0
	}
	if n == DefaultDownTimerAdverts {
		n = 0 // the RFC's, as unset
	}
	in.DownTimerAdverts = n
	return nil
}

// preemption: keepalived's default is on; nopreempt and preempt_delay give way to an
// address owner and to an initial MASTER state, and preempt_delay needs preemption.
func (r *resolver) preemption() error {
	d, in := r.d, &r.in
	in.Preempt = DefaultPreempt
	if d.preempt != nil {
		in.Preempt = *d.preempt
	}
	in.PreemptDelay = d.preemptDelay
	preemptPos, delayPos := r.or(d.preemptPos), r.or(d.delayPos)
	if !in.Preempt && in.Priority == 255 {
		r.warn(preemptPos, "nopreempt is incompatible with priority 255; preempting anyway")
		in.Preempt = true
	}
	if in.InitialState == StateMaster {
		if !in.Preempt {
			r.warn(preemptPos, "nopreempt does not work with initial state MASTER; preempting anyway")
			in.Preempt = true
		}
		if in.PreemptDelay != 0 {
			r.warn(delayPos, "preempt_delay does not work with initial state MASTER; clearing it")
			in.PreemptDelay = 0
		}
	}
	if in.PreemptDelay != 0 && in.Strict {
		r.warn(delayPos, "preempt_delay is incompatible with strict mode; clearing it")
		in.PreemptDelay = 0
	}
	if in.PreemptDelay != 0 && !in.Preempt {
		r.warn(delayPos, "preempt_delay is incompatible with nopreempt; clearing it")
		in.PreemptDelay = 0
	}
	// keepalived enables accept mode unless told otherwise; in strict mode only for the
	// address owner, and never for a VRRPv2 non-owner (RFC 3768 has no Accept_Mode).
	in.AcceptMode = DefaultAcceptMode
	if in.Strict {
		in.AcceptMode = in.Priority == 255
	}
	if d.accept != nil {
		in.AcceptMode = *d.accept
	}
	if in.Strict && in.AcceptMode && in.Priority != 255 && in.Version == vrrp.Version2 {
		r.warn(r.d.pos, "strict mode: accept mode for VRRP version 2 does not comply with RFC 3768; using no_accept")
		in.AcceptMode = false
	}
	return nil
}

// transport: unicast source and peers, else the family's multicast group.
func (r *resolver) transport() error {
	d, in := r.d, &r.in
	in.UnicastSrc = d.src
	for _, p := range d.peers {
		in.UnicastPeers = append(in.UnicastPeers, p.Prefix.Addr())
	}
	in.MulticastGroup = r.g.mcast4
	if in.Family == IPv6 {
		in.MulticastGroup = r.g.mcast6
	}
	if d.mcast.IsValid() {
		if vrrp.FamilyOf(d.mcast) != in.Family {
			return r.fail(r.or(d.mcastPos), "multicast group %s is not %s like the instance", d.mcast, in.Family)
		}
		in.MulticastGroup = d.mcast
	}
	return nil
}

// addresses: no address twice, labels on their device, and VIPs beyond what an
// advertisement can carry moved to the excluded list, as keepalived does. In strict mode
// a multicast IPv6 instance's first VIP should be link-local (RFC 5798 §5.2.9);
// keepalived only says so, and runs the instance.
func (r *resolver) addresses() error {
	d, in := r.d, &r.in
	if in.Strict && in.Family == IPv6 && len(d.peers) == 0 && len(d.vips) > 0 && !d.vips[0].Prefix.Addr().IsLinkLocalUnicast() {
		r.warn(d.vips[0].pos, "strict mode: the first IPv6 VIP address must be link local")
	}
	// keepalived's rule of how many VIPs fit in an advertisement on this interface
	// (vrrp.AddressesThatFit): the rest are added on MASTER but not advertised, as
	// keepalived moves them to its excluded addresses, so that an advert never exceeds
	// the MTU and both sides list the same addresses.
	// An address list that fits the family's smallest MTU (68 for IPv4, 1280 for IPv6)
	// fits any: the interface is looked up only for longer ones (Kubernetes mode resolves
	// every instance on every status change, most with a VIP or two).
	minMTU, mtu := 68, vrrp.DefaultMTU
	if in.Family == IPv6 {
		minMTU = 1280
	}
	fit := vrrp.AddressesThatFit(in.Version, in.Family, minMTU)
	if len(d.vips) > fit {
		mtuOf := r.opt.InterfaceMTU
		if mtuOf == nil {
			mtuOf = hostInterfaceMTU
		}
		if m, known := mtuOf(in.Interface); known && m > 0 {
			mtu = m
		}
		fit = vrrp.AddressesThatFit(in.Version, in.Family, mtu)
	}
	seen := map[netip.Addr]Position{}
	for i, v := range append(append([]draftVIP(nil), d.vips...), d.evips...) {
		if p, dup := seen[v.Prefix.Addr()]; dup {
			return r.fail(v.pos, "address %s is listed twice (first at %s)", v.Prefix.Addr(), p)
		}
		seen[v.Prefix.Addr()] = v.pos
		if why := VIPProblem(v.Prefix); why != "" {
			return r.fail(v.pos, "VIP %s %s", v.Prefix, why)
		}
		if v.Dev == "" {
			v.Dev = in.Interface
		}
		if v.Label != "" && v.Label != v.Dev && !hasPrefixColon(v.Label, v.Dev) {
			return r.fail(v.pos, "label %q must be the device name %q or start with %q", v.Label, v.Dev, v.Dev+":")
		}
		switch {
		case i < len(d.vips) && i < fit:
			in.VIPs = append(in.VIPs, v.VIP)
		case i < len(d.vips):
			if i == fit {
				r.warn(v.pos, "%d VIPs, more than an advertisement carries on %s (%d at MTU %d, VRRPv%d over %v): "+
					"this one and the %d after it are added on MASTER but not advertised (as virtual_ipaddress_excluded), as keepalived does",
					len(d.vips), in.Interface, fit, mtu, in.Version, in.Family, len(d.vips)-fit-1)
			}
			in.ExcludedVIPs = append(in.ExcludedVIPs, v.VIP)
		default:
			in.ExcludedVIPs = append(in.ExcludedVIPs, v.VIP)
		}
	}
	return nil
}

// announcements: the global settings, overridden per instance.
func (r *resolver) announcements() error {
	r.in.GARP = r.g.garp
	applyGARP(&r.in.GARP, r.d.garp)
	return nil
}

// advertHandling: how the instance treats and writes advertisements. Strict mode forces
// lower_prio_no_advert on, as keepalived does.
func (r *resolver) advertHandling() error {
	d, in := r.d, &r.in
	in.LowerPrioNoAdvert = r.g.lowerPrioNoAdvert || in.Strict
	if d.lowerPrioNoAdvert != nil {
		in.LowerPrioNoAdvert = *d.lowerPrioNoAdvert
	}
	if in.Strict && !in.LowerPrioNoAdvert {
		r.warn(r.or(d.lpnaPos), "strict mode requires lower_prio_no_advert; setting it")
		in.LowerPrioNoAdvert = true
	}
	in.OwnerIgnoreAdverts = r.g.ownerIgnoreAdverts
	if d.ownerIgnoreAdverts != nil {
		in.OwnerIgnoreAdverts = *d.ownerIgnoreAdverts
	}
	in.V3ChecksumAsV2 = r.g.v3ChecksumAsV2
	if d.v3ChecksumAsV2 != nil {
		in.V3ChecksumAsV2 = *d.v3ChecksumAsV2
	}
	in.HandoverOnly = d.handoverOnly
	in.BreakFirstPreempt = d.breakFirstPreempt
	return nil
}

func hasPrefixColon(label, dev string) bool {
	return len(label) > len(dev) && label[:len(dev)] == dev && label[len(dev)] == ':'
}

// Validate checks the instances against each other: two instances with one name, or two on
// one interface with one VRID and family (they would answer each other's advertisements,
// and the daemon routes packets by that triple), make the whole configuration invalid.
// Every source of a Config (the two file formats, Kubernetes mode) and the daemon before it
// applies one go through this one check.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("no configuration")
	}
	type key struct {
		iface  string
		vrid   uint8
		family Family
	}
	names := map[string]Position{}
	ids := map[key]Instance{}
	for _, in := range c.Instances {
		if p, dup := names[in.Name]; dup {
			return &Error{Pos: in.Source, Message: fmt.Sprintf("duplicate instance name %q (first defined at %s)", in.Name, p)}
		}
		names[in.Name] = in.Source
		k := key{in.Interface, in.VRID, in.Family}
		if o, dup := ids[k]; dup {
			return &Error{Pos: in.Source, Message: fmt.Sprintf("(%s) interface %s, VRID %d, %s is already used by instance %s at %s", in.Name, in.Interface, in.VRID, in.Family, o.Name, o.Source)}
		}
		ids[k] = in
	}
	return nil
}
