package config

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// This file is the part of a Draft and of Globals that every source shares: keepalived's
// keywords mapped onto settings (used by keepalived.conf and by a KeepalivedGroup's
// verbatim keywords), and setters for what Kubernetes mode reads from the group's status
// rather than from keywords.

// ErrUnknownKeyword is returned by SetKeyword for a keyword vrrpd does not implement.
var ErrUnknownKeyword = errors.New("keyword not implemented by vrrpd")

// SetKeyword applies one keepalived global_defs keyword with its values (the words after
// the keyword). It returns notes about values it adjusted or ignored, and an error for a
// bad value (then g is unchanged) or ErrUnknownKeyword. keepalived.conf's global_defs and
// a KeepalivedGroup's spec.verbatimConfig both go through it.
func (g *Globals) SetKeyword(key string, args []string) ([]string, error) {
	s := &statement{key: key, args: args}
	err := g.set(s)
	return s.notes, err
}

func (g *Globals) set(s *statement) error {
	var err error
	n := *g
	switch s.key {
	case "router_id":
		n.routerID, err = s.one()
	case "vrrp_version":
		var v uint64
		v, err = s.uint(2, 3)
		n.version = vrrp.Version(v)
	case "vrrp_garp_master_delay":
		n.garp.MasterDelay, err = s.delay()
	case "vrrp_garp_master_repeat":
		n.garp.MasterRepeat, err = s.repeat()
	case "vrrp_garp_master_refresh":
		n.garp.MasterRefresh, err = s.refresh()
	case "vrrp_garp_master_refresh_repeat":
		n.garp.MasterRefreshRepeat, err = s.repeat()
	case "vrrp_garp_interval":
		n.garp.Interval, err = s.decimal(0, MaxGARPInterval)
	case "vrrp_gna_interval":
		n.garp.NAInterval, err = s.decimal(0, MaxGARPInterval)
	case "vrrp_mcast_group4":
		n.mcast4, err = s.multicast(IPv4)
	case "vrrp_mcast_group6":
		n.mcast6, err = s.multicast(IPv6)
	case "vrrp_strict":
		// keepalived takes no value here (its handler ignores any).
		s.noValue()
		n.strict = true
	case "vrrp_lower_prio_no_advert":
		n.lowerPrioNoAdvert, err = s.flag()
	case "v3_checksum_as_v2":
		// keepalived >= 2.2.8; like vrrp_strict it ignores any value.
		s.noValue()
		n.v3ChecksumAsV2 = true
	default:
		return ErrUnknownKeyword
	}
	if err == nil {
		*g = n
	}
	return err
}

// NewDraft starts an instance called name, defined at pos: every warning and error about
// it names both.
func NewDraft(name string, pos Position) *Draft {
	return &Draft{name: name, pos: pos}
}

// Clone returns a copy of d called name, for one source entry that becomes several
// instances (Kubernetes mode's one virtual router per address family).
func (d *Draft) Clone(name string) *Draft {
	c := *d
	c.name = name
	c.peers = slices.Clone(d.peers)
	c.vips = slices.Clone(d.vips)
	c.evips = slices.Clone(d.evips)
	c.tracks = slices.Clone(d.tracks)
	c.routing = d.routing.clone()
	return &c
}

// SetKeyword applies one keepalived vrrp_instance keyword that takes no block, with its
// values (the words after the keyword). It returns notes about values it adjusted or
// ignored, and an error for a bad value (then d is unchanged) or ErrUnknownKeyword.
// keepalived.conf's vrrp_instance and a Service's verbatim keywords both go through it.
func (d *Draft) SetKeyword(key string, args []string) ([]string, error) {
	s := &statement{key: key, args: args, pos: d.pos}
	err := d.set(s)
	return s.notes, err
}

func (d *Draft) set(s *statement) error {
	var err error
	n := *d
	yes, no := true, false
	switch s.key {
	case "state":
		var v string
		if v, err = s.one(); err == nil && v != StateMaster && v != StateBackup {
			err = fmt.Errorf("state must be MASTER or BACKUP, not %q", v)
		}
		n.state, n.statePos = v, s.pos
	case "interface":
		n.iface, err = s.one()
		if err == nil && len(n.iface) > 15 {
			err = fmt.Errorf("interface name %q is longer than 15 characters", n.iface)
		}
	case "virtual_router_id":
		var v uint64
		v, err = s.uint(1, 255)
		b := uint8(v)
		n.vrid = &b
	case "priority":
		var v uint64
		v, err = s.uint(1, 255)
		b := uint8(v)
		n.priority = &b
	case "advert_int":
		n.advert, err = s.decimal(10*time.Millisecond, 255*time.Second)
		n.advertPos = s.pos
	case "version":
		var v uint64
		v, err = s.uint(2, 3)
		n.version, n.versionPos = vrrp.Version(v), s.pos
	case "nopreempt":
		s.noValue()
		n.preempt, n.preemptPos = &no, s.pos
	case "preempt":
		s.noValue()
		n.preempt, n.preemptPos = &yes, s.pos
	case "preempt_delay":
		n.preemptDelay, err = s.decimal(0, vrrp.MaxPreemptDelay)
		n.delayPos = s.pos
	case "accept":
		s.noValue()
		n.accept = &yes
	case "no_accept":
		s.noValue()
		n.accept = &no
	case "strict_mode":
		err = setPtr(&n.strict, s.flag)
	case "lower_prio_no_advert":
		var v bool
		v, err = s.flag()
		n.lowerPrioNoAdvert, n.lpnaPos = &v, s.pos
	case "v3_checksum_as_v2":
		err = setPtr(&n.v3ChecksumAsV2, s.flag)
	case "unicast_src_ip", "mcast_src_ip":
		n.src, err = s.addr()
		n.srcPos = s.pos
	case "mcast_dst_ip":
		n.mcast, err = s.multicast(0)
		n.mcastPos = s.pos
	case "garp_master_delay":
		err = setPtr(&n.garp.masterDelay, s.delay)
	case "garp_master_repeat":
		err = setPtr(&n.garp.masterRepeat, s.repeat)
	case "garp_master_refresh":
		err = setPtr(&n.garp.masterRefresh, s.refresh)
	case "garp_master_refresh_repeat":
		err = setPtr(&n.garp.masterRefreshRepeat, s.repeat)
	case "use_vmac":
		s.useVMAC(&n.vmac)
	case "vmac_xmit_base":
		s.noValue()
		n.vmac.xmitBase = true
	default:
		return ErrUnknownKeyword
	}
	if err == nil {
		*d = n
	}
	return err
}

// isKnownInstanceKeyword reports whether SetKeyword implements k.
func isKnownInstanceKeyword(k string) bool {
	err := (&Draft{}).set(&statement{key: k})
	return !errors.Is(err, ErrUnknownKeyword)
}

// Setters for what Kubernetes mode takes from the group's status. Each sets what the
// keepalived keyword of the same meaning sets.

// SetInterface sets the interface (interface).
func (d *Draft) SetInterface(name string) { d.iface = name }

// SetVRID sets the virtual router ID (virtual_router_id).
func (d *Draft) SetVRID(id uint8) { d.vrid = &id }

// SetPriority sets the priority (priority).
func (d *Draft) SetPriority(p uint8) { d.priority = &p }

// SetState sets the initial state, StateMaster or StateBackup (state).
func (d *Draft) SetState(s string) { d.state = s }

// SetVersion sets the VRRP version (version).
func (d *Draft) SetVersion(v vrrp.Version) { d.version = v }

// SetAdvertInterval sets the advertisement interval (advert_int); Resolve rounds it to
// what the version carries.
func (d *Draft) SetAdvertInterval(i time.Duration) { d.advert = i }

// SetV3ChecksumAsV2 sets the VRRPv3 IPv4 checksum form: on, without the pseudo-header
// as RFC 9568 says (v3_checksum_as_v2).
func (d *Draft) SetV3ChecksumAsV2(on bool) { d.v3ChecksumAsV2 = &on }

// SetHandoverOnly makes the instance take over only on a master's handover (no
// keyword: Instance.HandoverOnly).
func (d *Draft) SetHandoverOnly(on bool) { d.handoverOnly = on }

// SetPreempt sets preemption (preempt / nopreempt).
func (d *Draft) SetPreempt(on bool) { d.preempt = &on }

// SetAuthPass asks for VRRPv2 simple password authentication with pass (authentication
// { auth_type PASS; auth_pass ... }). what names the password in the note returned when
// it is longer than VRRPv2 carries and is truncated, as keepalived does.
func (d *Draft) SetAuthPass(pass, what string) (note string) {
	t := vrrp.AuthSimple
	d.auth = &t
	d.authPass, note = truncateAuthPass(pass, what)
	return note
}

// AddVIP adds a virtual address (a virtual_ipaddress line).
func (d *Draft) AddVIP(v VIP) { d.vips = append(d.vips, draftVIP{VIP: v, pos: d.pos}) }

// SetUnicast sets the unicast source and peers (unicast_src_ip, unicast_peer).
func (d *Draft) SetUnicast(src netip.Addr, peers []netip.Addr) {
	d.src = src
	d.peers = d.peers[:0]
	for _, p := range peers {
		d.peers = append(d.peers, draftVIP{VIP: VIP{Prefix: netip.PrefixFrom(p, p.BitLen())}, pos: d.pos})
	}
}

// MulticastGroup is the instance's own multicast group (mcast_dst_ip), invalid if unset.
func (d *Draft) MulticastGroup() netip.Addr { return d.mcast }

// SetMulticastGroup sets (or, with the zero Addr, clears) the instance's own multicast
// group (mcast_dst_ip).
func (d *Draft) SetMulticastGroup(a netip.Addr) { d.mcast = a }

// setPtr sets *dst to what parse reads, or leaves it unset when parse fails.
func setPtr[T any](dst **T, parse func() (T, error)) error {
	v, err := parse()
	if err == nil {
		*dst = &v
	}
	return err
}
