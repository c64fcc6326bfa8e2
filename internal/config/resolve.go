package config

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// globals are the host-wide settings an instance inherits: keepalived's global_defs, or
// the defaults section of the YAML file.
type globals struct {
	routerID       string
	version        vrrp.Version // 0: keepalived's default
	advertInterval time.Duration
	garp           GARP
	mcast4, mcast6 netip.Addr
}

func defaultGlobals() globals {
	return globals{
		version:        DefaultVersion,
		advertInterval: DefaultAdvertInterval,
		garp:           DefaultGARP(),
		mcast4:         vrrp.MulticastIPv4,
		mcast6:         vrrp.MulticastIPv6,
	}
}

// draftVIP is a VIP with where it was written.
type draftVIP struct {
	VIP
	pos Position
}

// draft is an instance as written, before defaults and validation: both file formats fill
// one, so both follow exactly the same rules. Pointer and zero fields mean "not set".
type draft struct {
	pos          Position
	name         string
	iface        string
	vrid         *uint8
	priority     *uint8
	version      vrrp.Version
	versionPos   Position
	advert       time.Duration
	advertPos    Position
	preempt      *bool
	preemptPos   Position
	preemptDelay time.Duration
	delayPos     Position
	accept       *bool
	state        string
	src          netip.Addr
	srcPos       Position
	peers        []draftVIP // Prefix holds the single address
	auth         *vrrp.AuthType
	authPass     string
	authPos      Position
	vips         []draftVIP
	evips        []draftVIP
	mcast        netip.Addr
	mcastPos     Position
	garp         garpDraft
}

// garpDraft holds the per-instance announcement overrides.
type garpDraft struct {
	masterDelay         *time.Duration
	masterRepeat        *int
	masterRefresh       *time.Duration
	masterRefreshRepeat *int
}

// maxVIPs is the most addresses an advertisement can carry (an 8-bit count).
const maxVIPs = 255

// resolve applies defaults to d and checks it the way keepalived's
// vrrp_complete_instance does. Problems keepalived fixes up with a message become
// warnings; problems that make keepalived drop the instance become errors.
func resolve(d draft, g globals) (Instance, []Warning, error) {
	var ws []Warning
	warn := func(pos Position, format string, a ...any) {
		ws = append(ws, Warning{Pos: pos, Message: fmt.Sprintf("(%s) ", d.name) + fmt.Sprintf(format, a...)})
	}
	fail := func(pos Position, format string, a ...any) (Instance, []Warning, error) {
		return Instance{}, ws, &Error{Pos: pos, Message: fmt.Sprintf("(%s) ", d.name) + fmt.Sprintf(format, a...)}
	}

	in := Instance{Name: d.name, Interface: d.iface, Source: d.pos}
	if d.name == "" {
		return Instance{}, nil, &Error{Pos: d.pos, Message: "instance has no name"}
	}
	if d.iface == "" {
		return fail(d.pos, "no interface given")
	}
	if d.vrid == nil {
		return fail(d.pos, "no virtual router ID given (virtual_router_id, 1..255)")
	}
	in.VRID = *d.vrid

	// The family comes from the first VIP, else the unicast addresses; IPv4 otherwise.
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
			return fail(v.pos, "VIP %s is %s but the instance is %s: one instance carries one family (use virtual_ipaddress_excluded or a second instance)", v.Prefix, f, in.Family)
		}
	}
	if d.src.IsValid() && vrrp.FamilyOf(d.src) != in.Family {
		return fail(d.srcPos, "source address %s is not %s like the instance", d.src, in.Family)
	}
	for _, p := range d.peers {
		if vrrp.FamilyOf(p.Prefix.Addr()) != in.Family {
			return fail(p.pos, "unicast peer %s is not %s like the instance", p.Prefix.Addr(), in.Family)
		}
	}

	// Version: the instance's, else the global one; IPv6 is always VRRPv3.
	in.Version = g.version
	if d.version != 0 {
		in.Version = d.version
	}
	if in.Family == IPv6 && in.Version != vrrp.Version3 {
		if d.version == vrrp.Version2 {
			warn(d.versionPos, "VRRP version 2 cannot carry IPv6; using version 3")
		}
		in.Version = vrrp.Version3
	}
	// keepalived tolerates a VRRPv2 IPv4 instance without VIPs; an advertisement with no
	// address has nothing to fail over, and the state machine refuses it, so vrrpd does too.
	if len(d.vips) == 0 {
		return fail(d.pos, "no VIP specified; at least one is required")
	}

	// Priority and initial state derive from each other when only one is given.
	in.InitialState = d.state
	switch {
	case d.priority != nil:
		in.Priority = *d.priority
	case d.state == StateMaster:
		in.Priority = 255
	default:
		in.Priority = DefaultPriority
	}
	if in.InitialState == "" {
		in.InitialState = StateBackup
		if in.Priority == 255 {
			in.InitialState = StateMaster
		}
	}

	// Authentication exists in VRRPv2 only.
	if d.auth != nil && *d.auth != vrrp.AuthNone {
		switch {
		case in.Version == vrrp.Version3:
			warn(d.authPos, "VRRP version 3 does not support authentication; ignoring it")
		case d.authPass == "":
			warn(d.authPos, "authentication specified but no password given; ignoring it")
		default:
			in.AuthType = *d.auth
			in.AuthPass = d.authPass
		}
	}

	// Advertisement interval: whole seconds below 256 s for v2, centiseconds below
	// 40.96 s for v3, rounded with a warning as keepalived does.
	in.AdvertInterval = g.advertInterval
	if d.advert != 0 {
		in.AdvertInterval = d.advert
	}
	pos := d.advertPos
	if pos.File == "" {
		pos = d.pos
	}
	if in.Version == vrrp.Version2 {
		if in.AdvertInterval > maxAdvertIntervalV2 {
			warn(pos, "VRRPv2 advertisement interval %v is out of range; using %v", in.AdvertInterval, maxAdvertIntervalV2)
			in.AdvertInterval = maxAdvertIntervalV2
		} else if in.AdvertInterval%time.Second != 0 {
			r := in.AdvertInterval.Round(time.Second)
			if r == 0 {
				r = time.Second
			}
			warn(pos, "VRRPv2 advertisement interval %v must be whole seconds; rounding to %v", in.AdvertInterval, r)
			in.AdvertInterval = r
		}
	} else {
		const cs = 10 * time.Millisecond
		if in.AdvertInterval > maxAdvertIntervalV3 {
			warn(pos, "VRRPv3 advertisement interval %v is out of range; using %v", in.AdvertInterval, maxAdvertIntervalV3)
			in.AdvertInterval = maxAdvertIntervalV3
		} else if in.AdvertInterval%cs != 0 {
			r := in.AdvertInterval.Round(cs)
			if r == 0 {
				r = cs
			}
			warn(pos, "VRRPv3 advertisement interval %v must be in units of 10ms; rounding to %v", in.AdvertInterval, r)
			in.AdvertInterval = r
		}
	}

	// Preemption.
	in.Preempt = DefaultPreempt
	if d.preempt != nil {
		in.Preempt = *d.preempt
	}
	in.PreemptDelay = d.preemptDelay
	if d.preemptPos.File == "" {
		d.preemptPos = d.pos
	}
	if d.delayPos.File == "" {
		d.delayPos = d.pos
	}
	if !in.Preempt && in.Priority == 255 {
		warn(d.preemptPos, "nopreempt is incompatible with priority 255; preempting anyway")
		in.Preempt = true
	}
	if in.InitialState == StateMaster {
		if !in.Preempt {
			warn(d.preemptPos, "nopreempt does not work with initial state MASTER; preempting anyway")
			in.Preempt = true
		}
		if in.PreemptDelay != 0 {
			warn(d.delayPos, "preempt_delay does not work with initial state MASTER; clearing it")
			in.PreemptDelay = 0
		}
	}
	if in.PreemptDelay != 0 && !in.Preempt {
		warn(d.delayPos, "preempt_delay is incompatible with nopreempt; clearing it")
		in.PreemptDelay = 0
	}

	// keepalived enables accept mode unless told otherwise (outside its strict mode).
	in.AcceptMode = DefaultAcceptMode
	if d.accept != nil {
		in.AcceptMode = *d.accept
	}

	// Transport.
	in.UnicastSrc = d.src
	for _, p := range d.peers {
		in.UnicastPeers = append(in.UnicastPeers, p.Prefix.Addr())
	}
	in.MulticastGroup = g.mcast4
	if in.Family == IPv6 {
		in.MulticastGroup = g.mcast6
	}
	if d.mcast.IsValid() {
		if vrrp.FamilyOf(d.mcast) != in.Family {
			return fail(d.mcastPos, "multicast group %s is not %s like the instance", d.mcast, in.Family)
		}
		in.MulticastGroup = d.mcast
	}

	// Addresses. Excess VIPs move to the excluded list, as keepalived does, since an
	// advertisement cannot list more than 255.
	seen := map[netip.Addr]Position{}
	for i, v := range append(append([]draftVIP(nil), d.vips...), d.evips...) {
		if p, dup := seen[v.Prefix.Addr()]; dup {
			return fail(v.pos, "address %s is listed twice (first at %s)", v.Prefix.Addr(), p)
		}
		seen[v.Prefix.Addr()] = v.pos
		if v.Dev == "" {
			v.Dev = in.Interface
		}
		if v.Label != "" && v.Label != v.Dev && !hasPrefixColon(v.Label, v.Dev) {
			return fail(v.pos, "label %q must be the device name %q or start with %q", v.Label, v.Dev, v.Dev+":")
		}
		switch {
		case i < len(d.vips) && i < maxVIPs:
			in.VIPs = append(in.VIPs, v.VIP)
		case i < len(d.vips):
			if i == maxVIPs {
				warn(v.pos, "more than %d VIPs; the rest are added but not advertised (excluded)", maxVIPs)
			}
			in.ExcludedVIPs = append(in.ExcludedVIPs, v.VIP)
		default:
			in.ExcludedVIPs = append(in.ExcludedVIPs, v.VIP)
		}
	}

	// Announcements: the global settings, overridden per instance.
	in.GARP = g.garp
	if d.garp.masterDelay != nil {
		in.GARP.MasterDelay = *d.garp.masterDelay
	}
	if d.garp.masterRepeat != nil {
		in.GARP.MasterRepeat = *d.garp.masterRepeat
	}
	if d.garp.masterRefresh != nil {
		in.GARP.MasterRefresh = *d.garp.masterRefresh
	}
	if d.garp.masterRefreshRepeat != nil {
		in.GARP.MasterRefreshRepeat = *d.garp.masterRefreshRepeat
	}
	return in, ws, nil
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
