package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// keepalived.conf blocks that keepalived knows and vrrpd does not run: one warning for the
// whole block, not one per line inside it.
var unsupportedBlocks = map[string]bool{
	"vrrp_sync_group": true, "vrrp_script": true, "virtual_server": true,
	"virtual_server_group": true, "static_ipaddress": true, "static_routes": true,
	"static_rules": true, "vrrp_track_file": true, "track_file": true,
	"vrrp_track_process": true, "linkbeat_interfaces": true, "garp_group": true,
	"bfd_instance": true, "track_interface": true, "track_script": true,
	"track_process": true, "track_bfd": true, "virtual_routes": true, "virtual_rules": true,
	"notification_email": true,
}

// kaParser interprets a keepalived.conf tree.
type kaParser struct {
	g        globals
	drafts   []draft
	warnings []Warning
}

func (p *kaParser) warn(pos Position, format string, a ...any) {
	p.warnings = append(p.warnings, Warning{Pos: pos, Message: fmt.Sprintf(format, a...)})
}

// ignore warns about a keyword vrrpd does not implement, once for a whole block.
func (p *kaParser) ignore(n node, where string) {
	switch {
	case unsupportedBlocks[n.key()] || n.hasBlock:
		p.warn(n.pos, "%q block%s is not supported by vrrpd; ignored", n.key(), where)
	default:
		p.warn(n.pos, "unknown keyword %q%s; ignored", n.key(), where)
	}
}

// parseKeepalived turns the statements of a keepalived.conf into globals and drafts.
func parseKeepalived(tree []node) (*kaParser, error) {
	p := &kaParser{g: defaultGlobals()}
	for _, n := range tree {
		switch n.key() {
		case "global_defs":
			if !n.hasBlock {
				return nil, &Error{Pos: n.pos, Message: "global_defs needs a { ... } block"}
			}
			if err := p.globalDefs(n.children); err != nil {
				return nil, err
			}
		case "vrrp_instance":
			if err := p.instance(n); err != nil {
				return nil, err
			}
		default:
			p.ignore(n, "")
		}
	}
	return p, nil
}

func (p *kaParser) globalDefs(ns []node) error {
	for _, n := range ns {
		if n.hasBlock && !unsupportedBlocks[n.key()] {
			p.ignore(n, " in global_defs")
			continue
		}
		var err error
		switch n.key() {
		case "router_id":
			p.g.routerID, err = p.one(n)
		case "vrrp_version":
			var v uint64
			if v, err = p.uint(n, 2, 3); err == nil {
				p.g.version = vrrp.Version(v)
			}
		case "vrrp_garp_master_delay":
			p.g.garp.MasterDelay, err = p.seconds(n)
		case "vrrp_garp_master_repeat":
			p.g.garp.MasterRepeat, err = p.repeat(n)
		case "vrrp_garp_master_refresh":
			p.g.garp.MasterRefresh, err = p.seconds(n)
		case "vrrp_garp_master_refresh_repeat":
			p.g.garp.MasterRefreshRepeat, err = p.repeat(n)
		case "vrrp_garp_interval":
			p.g.garp.Interval, err = p.decimal(n, 0, 1000*time.Second)
		case "vrrp_gna_interval":
			p.g.garp.NAInterval, err = p.decimal(n, 0, 1000*time.Second)
		case "vrrp_mcast_group4":
			p.g.mcast4, err = p.multicast(n, IPv4)
		case "vrrp_mcast_group6":
			p.g.mcast6, err = p.multicast(n, IPv6)
		default:
			p.ignore(n, " in global_defs")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *kaParser) instance(n node) error {
	if len(n.args()) == 0 {
		return &Error{Pos: n.pos, Message: "vrrp_instance needs a name"}
	}
	if !n.hasBlock {
		return &Error{Pos: n.pos, Message: fmt.Sprintf("vrrp_instance %s needs a { ... } block", n.args()[0])}
	}
	if len(n.args()) > 1 {
		p.warn(n.pos, "vrrp_instance takes one name; ignoring %q", strings.Join(n.args()[1:], " "))
	}
	d := draft{pos: n.pos, name: n.args()[0]}
	where := " in vrrp_instance " + d.name
	yes, no := true, false
	for _, c := range n.children {
		var err error
		switch c.key() {
		case "state":
			var s string
			if s, err = p.one(c); err == nil {
				if s != StateMaster && s != StateBackup {
					return errAt(c.pos, "state must be MASTER or BACKUP, not %q", s)
				}
				d.state = s
			}
		case "interface":
			d.iface, err = p.one(c)
			if err == nil && len(d.iface) > 15 {
				return errAt(c.pos, "interface name %q is longer than 15 characters", d.iface)
			}
		case "virtual_router_id":
			var v uint64
			if v, err = p.uint(c, 1, 255); err == nil {
				b := uint8(v)
				d.vrid = &b
			}
		case "priority":
			var v uint64
			if v, err = p.uint(c, 1, 255); err == nil {
				b := uint8(v)
				d.priority = &b
			}
		case "advert_int":
			d.advert, err = p.decimal(c, 10*time.Millisecond, 255*time.Second)
			d.advertPos = c.pos
		case "version":
			var v uint64
			if v, err = p.uint(c, 2, 3); err == nil {
				d.version, d.versionPos = vrrp.Version(v), c.pos
			}
		case "nopreempt":
			p.noValue(c)
			d.preempt, d.preemptPos = &no, c.pos
		case "preempt":
			p.noValue(c)
			d.preempt, d.preemptPos = &yes, c.pos
		case "preempt_delay":
			d.preemptDelay, err = p.decimal(c, 0, vrrp.MaxPreemptDelay)
			d.delayPos = c.pos
		case "accept":
			p.noValue(c)
			d.accept = &yes
		case "no_accept":
			p.noValue(c)
			d.accept = &no
		case "unicast_src_ip", "mcast_src_ip":
			var s string
			if s, err = p.one(c); err == nil {
				d.src, err = parseAddr(c.pos, s)
				d.srcPos = c.pos
			}
		case "mcast_dst_ip":
			var s string
			if s, err = p.one(c); err == nil {
				d.mcast, err = parseAddr(c.pos, s)
				d.mcastPos = c.pos
				if err == nil && !d.mcast.IsMulticast() {
					err = errAt(c.pos, "mcast_dst_ip %s is not a multicast address", s)
				}
			}
		case "unicast_peer":
			err = p.peers(c, &d)
		case "authentication":
			err = p.auth(c, &d)
		case "virtual_ipaddress":
			d.vips, err = p.vips(c, d.vips)
		case "virtual_ipaddress_excluded":
			d.evips, err = p.vips(c, d.evips)
		case "garp_master_delay":
			var v time.Duration
			if v, err = p.seconds(c); err == nil {
				d.garp.masterDelay = &v
			}
		case "garp_master_repeat":
			var v int
			if v, err = p.repeat(c); err == nil {
				d.garp.masterRepeat = &v
			}
		case "garp_master_refresh":
			var v time.Duration
			if v, err = p.seconds(c); err == nil {
				d.garp.masterRefresh = &v
			}
		case "garp_master_refresh_repeat":
			var v int
			if v, err = p.repeat(c); err == nil {
				d.garp.masterRefreshRepeat = &v
			}
		default:
			p.ignore(c, where)
		}
		if err != nil {
			return err
		}
		if c.hasBlock && !blockKeyword[c.key()] && !unsupportedBlocks[c.key()] && isKnownInstanceKeyword(c.key()) {
			p.warn(c.pos, "%q takes no block; its contents are ignored", c.key())
		}
	}
	p.drafts = append(p.drafts, d)
	return nil
}

// blockKeyword are the instance keywords whose values come in a block.
var blockKeyword = map[string]bool{
	"unicast_peer": true, "authentication": true, "virtual_ipaddress": true,
	"virtual_ipaddress_excluded": true,
}

func isKnownInstanceKeyword(k string) bool {
	switch k {
	case "state", "interface", "virtual_router_id", "priority", "advert_int", "version",
		"nopreempt", "preempt", "preempt_delay", "accept", "no_accept", "unicast_src_ip",
		"mcast_src_ip", "mcast_dst_ip", "garp_master_delay", "garp_master_repeat",
		"garp_master_refresh", "garp_master_refresh_repeat":
		return true
	}
	return false
}

func (p *kaParser) needBlock(n node) error {
	if !n.hasBlock {
		return errAt(n.pos, "%s needs a { ... } block", n.key())
	}
	if len(n.args()) > 0 {
		p.warn(n.pos, "%s: ignoring %q before the block", n.key(), strings.Join(n.args(), " "))
	}
	return nil
}

func (p *kaParser) peers(n node, d *draft) error {
	if err := p.needBlock(n); err != nil {
		return err
	}
	for _, c := range n.children {
		if c.hasBlock {
			return errAt(c.pos, "unexpected block in unicast_peer")
		}
		a, err := parseAddr(c.pos, c.key())
		if err != nil {
			return err
		}
		if len(c.args()) > 0 {
			// keepalived 2.2 also allows min_ttl/max_ttl here; vrrpd does not check them.
			p.warn(c.pos, "unicast_peer %s: options %q are not supported; ignored", c.key(), strings.Join(c.args(), " "))
		}
		d.peers = append(d.peers, draftVIP{VIP: VIP{Prefix: netip.PrefixFrom(a, a.BitLen())}, pos: c.pos})
	}
	return nil
}

func (p *kaParser) auth(n node, d *draft) error {
	if err := p.needBlock(n); err != nil {
		return err
	}
	d.authPos = n.pos
	for _, c := range n.children {
		switch c.key() {
		case "auth_type":
			s, err := p.one(c)
			if err != nil {
				return err
			}
			switch s {
			case "PASS":
				t := vrrp.AuthSimple
				d.auth = &t
			case "AH":
				return errAt(c.pos, "auth_type AH (IPsec authentication header) is not supported by vrrpd; use PASS or none")
			default:
				return errAt(c.pos, "unknown auth_type %q (want PASS)", s)
			}
		case "auth_pass":
			s, err := p.one(c)
			if err != nil {
				return err
			}
			if len(s) > maxAuthPass {
				p.warn(c.pos, "truncating auth_pass to %d characters", maxAuthPass)
				s = s[:maxAuthPass]
			}
			d.authPass = s
		default:
			p.ignore(c, " in authentication")
		}
	}
	return nil
}

// vips parses a virtual_ipaddress block: one address per line, keepalived style.
func (p *kaParser) vips(n node, out []draftVIP) ([]draftVIP, error) {
	if err := p.needBlock(n); err != nil {
		return nil, err
	}
	for _, c := range n.children {
		if c.hasBlock {
			return nil, errAt(c.pos, "unexpected block in %s", n.key())
		}
		v, ws, err := parseVIPWords(c.words)
		if err != nil {
			return nil, &Error{Pos: c.pos, Message: err.Error()}
		}
		for _, w := range ws {
			p.warn(c.pos, "%s", w)
		}
		out = append(out, draftVIP{VIP: v, pos: c.pos})
	}
	return out, nil
}

// parseVIPWords parses "addr[/len] [dev DEV] [label LABEL] [brd X] [scope S] ...". It
// returns warnings for options keepalived knows that vrrpd does not apply.
func parseVIPWords(words []string) (VIP, []string, error) {
	var v VIP
	var ws []string
	if len(words) == 0 {
		return v, nil, fmt.Errorf("empty VIP")
	}
	pfx, err := parsePrefix(words[0])
	if err != nil {
		return v, nil, err
	}
	v.Prefix = pfx
	for i := 1; i < len(words); i++ {
		opt := words[i]
		value := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("VIP %s: %q needs a value", words[0], opt)
			}
			i++
			return words[i], nil
		}
		switch opt {
		case "dev":
			if v.Dev, err = value(); err != nil {
				return v, nil, err
			}
			if len(v.Dev) > 15 {
				return v, nil, fmt.Errorf("VIP %s: interface name %q is longer than 15 characters", words[0], v.Dev)
			}
		case "label":
			if v.Label, err = value(); err != nil {
				return v, nil, err
			}
			if len(v.Label) > 15 {
				return v, nil, fmt.Errorf("VIP %s: label %q is longer than 15 characters", words[0], v.Label)
			}
		case "scope":
			s, err := value()
			if err != nil {
				return v, nil, err
			}
			// vrrpd adds addresses with the kernel's default, global scope.
			if s != "global" && s != "0" {
				ws = append(ws, fmt.Sprintf("VIP %s: scope %s is not supported; the address gets scope global", words[0], s))
			}
		case "brd", "broadcast", "peer", "preferred_lft", "track_group":
			s, err := value()
			if err != nil {
				return v, nil, err
			}
			ws = append(ws, fmt.Sprintf("VIP %s: option %q %q is not supported; ignored", words[0], opt, s))
		case "no_track", "home", "nodad", "-nodad", "noprefixroute", "autojoin":
			ws = append(ws, fmt.Sprintf("VIP %s: option %q is not supported; ignored", words[0], opt))
		default:
			ws = append(ws, fmt.Sprintf("VIP %s: unknown option %q; ignored", words[0], opt))
		}
	}
	return v, ws, nil
}

// one returns the single value of a statement.
func (p *kaParser) one(n node) (string, error) {
	if len(n.args()) == 0 {
		return "", errAt(n.pos, "%s needs a value", n.key())
	}
	if len(n.args()) > 1 {
		p.warn(n.pos, "%s takes one value; ignoring %q", n.key(), strings.Join(n.args()[1:], " "))
	}
	return n.args()[0], nil
}

func (p *kaParser) noValue(n node) {
	if len(n.args()) > 0 {
		p.warn(n.pos, "%s takes no value; ignoring %q", n.key(), strings.Join(n.args(), " "))
	}
}

func (p *kaParser) uint(n node, lo, hi uint64) (uint64, error) {
	s, err := p.one(n)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, errAt(n.pos, "%s %q is not a number between %d and %d", n.key(), s, lo, hi)
	}
	return v, nil
}

// seconds reads a whole number of seconds (keepalived's garp delays and refreshes).
func (p *kaParser) seconds(n node) (time.Duration, error) {
	v, err := p.uint(n, 0, 1<<31-1)
	return time.Duration(v) * time.Second, err
}

// repeat reads a repeat count; 0 becomes 1 with a warning, as in keepalived.
func (p *kaParser) repeat(n node) (int, error) {
	v, err := p.uint(n, 0, 1<<31-1)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		p.warn(n.pos, "%s must be greater than 0; using 1", n.key())
		v = 1
	}
	return int(v), nil
}

// decimal reads fractional seconds such as 0.05, exactly (no float rounding).
func (p *kaParser) decimal(n node, lo, hi time.Duration) (time.Duration, error) {
	s, err := p.one(n)
	if err != nil {
		return 0, err
	}
	d, ok := parseDecimalSeconds(s)
	if !ok || d < lo || d > hi {
		return 0, errAt(n.pos, "%s %q is not a number of seconds between %v and %v", n.key(), s, lo, hi)
	}
	return d, nil
}

func (p *kaParser) multicast(n node, f Family) (netip.Addr, error) {
	s, err := p.one(n)
	if err != nil {
		return netip.Addr{}, err
	}
	a, err := parseAddr(n.pos, s)
	if err != nil {
		return a, err
	}
	if vrrp.FamilyOf(a) != f || !a.IsMulticast() {
		return a, errAt(n.pos, "%s %s is not an %s multicast address", n.key(), s, f)
	}
	return a, nil
}

// parseDecimalSeconds parses "1", "0.05", "2.5" (up to microseconds, as keepalived).
func parseDecimalSeconds(s string) (time.Duration, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 6 || len(whole) > 9 {
		return 0, false
	}
	var d time.Duration
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, false
		}
		d = d*10 + time.Duration(c-'0')
	}
	d *= time.Second
	unit := 100 * time.Millisecond
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
		d += time.Duration(c-'0') * unit
		unit /= 10
	}
	return d, true
}

func parseAddr(pos Position, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, errAt(pos, "bad IP address %q", s)
	}
	return a.Unmap(), nil
}

// parsePrefix parses addr or addr/len; a bare address is a host prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("bad address %q (want addr or addr/prefix)", s)
		}
		if p.Addr().Is4In6() {
			return netip.Prefix{}, fmt.Errorf("bad address %q: IPv4-mapped IPv6 addresses are not allowed", s)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("bad address %q (want addr or addr/prefix)", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func errAt(pos Position, format string, a ...any) *Error {
	return &Error{Pos: pos, Message: fmt.Sprintf(format, a...)}
}
