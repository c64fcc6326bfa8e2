package config

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/keyword"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// keepalived.conf blocks that keepalived knows and vrrpd does not run: one warning for the
// whole block, not one per line inside it.
var unsupportedBlocks = map[string]bool{
	"virtual_server": true, "virtual_server_group": true,
	"vrrp_track_process": true, "linkbeat_interfaces": true, "garp_group": true,
	"bfd_instance": true, "track_process": true, "track_bfd": true,
	"notification_email": true,
}

// kaParser interprets a keepalived.conf tree.
type kaParser struct {
	g        Globals
	drafts   []Draft
	warnings []Warning
}

func (p *kaParser) warn(pos Position, format string, a ...any) {
	p.warnings = append(p.warnings, Warning{Pos: pos, Message: fmt.Sprintf(format, a...)})
}

// warnGroup is warn for a warning that repeats under group (see groupWarnings).
func (p *kaParser) warnGroup(group string, pos Position, format string, a ...any) {
	p.warnings = append(p.warnings, Warning{Pos: pos, Message: fmt.Sprintf(format, a...), group: group})
}

// ignore warns about a keyword vrrpd does not implement, once for a whole block: a
// keyword that changes what keepalived does says what vrrpd does instead.
func (p *kaParser) ignore(n node, where string) {
	group := "ignore " + blockKind(where) + " " + n.key()
	block := unsupportedBlocks[n.key()] || n.hasBlock
	switch m := unsupportedMessage(n.key(), where, block); {
	case m != "":
		p.warnGroup(group, n.pos, "%s", m)
	case block:
		p.warnGroup(group, n.pos, "%q block%s is not supported by vrrpd; ignored", n.key(), where)
	default:
		p.warnGroup(group, n.pos, "unknown keyword %q%s; ignored", n.key(), where)
	}
}

// parseKeepalived turns the statements of a keepalived.conf into globals and drafts.
func parseKeepalived(tree []node) (*kaParser, error) {
	p := &kaParser{g: DefaultGlobals()}
	names := map[string]Position{}
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
			// keepalived reports a second instance of one name and skips its block.
			if len(n.args()) > 0 {
				if first, dup := names[n.args()[0]]; dup {
					p.warn(n.pos, "vrrp_instance %s is already defined at %s; this block is ignored, as keepalived does", n.args()[0], first)
					continue
				}
				names[n.args()[0]] = n.pos
			}
			if err := p.instance(n); err != nil {
				return nil, err
			}
		case "vrrp_script":
			if err := p.vrrpScript(n); err != nil {
				return nil, err
			}
		case KeywordHTTPCheck, KeywordTCPCheck:
			if err := p.nativeCheck(n); err != nil {
				return nil, err
			}
		default:
			if ok, err := p.staticBlock(n); ok || err != nil {
				if err != nil {
					return nil, err
				}
				continue
			}
			if ok, err := p.trackRoot(n); ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			p.ignore(n, "")
		}
	}
	return p, nil
}

func (p *kaParser) globalDefs(ns []node) error {
	for _, n := range ns {
		if ok, err := p.routeGlobal(n); ok || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		if ok, err := p.scriptGlobal(n); ok || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		if n.hasBlock && !unsupportedBlocks[n.key()] {
			p.ignore(n, " in global_defs")
			continue
		}
		err := p.setOrSkip(keyword.Global, newStatement(n.key(), n.args(), n.pos), p.g.set)
		switch {
		case errors.Is(err, ErrUnknownKeyword):
			p.ignore(n, " in global_defs")
		case err != nil:
			return &Error{Pos: n.pos, Message: err.Error()}
		}
	}
	return nil
}

// setOrSkip applies st with set, and its notes as warnings. A bad value of a keyword
// keepalived 2.2.7 skips with a message and goes on without (the table's Skip) is a
// warning saying what is used instead, and its Fallback, if any, is applied in its place;
// any other bad value is set's error. A missing value stays an error.
func (p *kaParser) setOrSkip(b keyword.Block, st *statement, set func(*statement) error) error {
	err := set(st)
	p.notes(st)
	if err == nil || errors.Is(err, ErrUnknownKeyword) || len(st.Args) == 0 {
		return err
	}
	k, ok := keyword.Lookup(b, st.Key)
	if !ok || k.Skip == "" {
		return err
	}
	p.warn(st.pos, "%v; line skipped, as keepalived skips it: %s", err, k.Skip)
	if k.Fallback == "" {
		return nil
	}
	fb := newStatement(st.Key, []string{k.Fallback}, st.pos)
	err = set(fb)
	p.notes(fb)
	return err
}

// notes turns a statement's notes into warnings at its position.
func (p *kaParser) notes(st *statement) {
	for _, m := range st.Notes {
		p.warn(st.pos, "%s", m)
	}
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
	d := Draft{pos: n.pos, name: n.args()[0]}
	where := " in vrrp_instance " + d.name
	vipsSeen := map[netip.Addr]Position{}
	for _, c := range n.children {
		if ok, err := p.instanceRoutes(c, &d); ok || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		if ok, err := p.instanceTracking(c, &d); ok || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		if ok, err := p.instanceScripts(c, &d); ok || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		var err error
		switch c.key() {
		case "unicast_peer":
			err = p.peers(c, &d)
		case "authentication":
			err = p.auth(c, &d)
		case "virtual_ipaddress":
			d.vips, err = p.vips(c, d.vips, vipsSeen)
		case "virtual_ipaddress_excluded":
			d.evips, err = p.vips(c, d.evips, vipsSeen)
		case "state":
			c = p.state(c, &d)
			fallthrough
		default:
			if c.key() == "unicast_src_ip" || c.key() == "mcast_src_ip" {
				c = p.stripSource(c)
			}
			err = p.setOrSkip(keyword.Instance, newStatement(c.key(), c.args(), c.pos), d.set)
			if errors.Is(err, ErrUnknownKeyword) {
				p.ignore(c, where)
				err = nil
			} else if err != nil {
				err = &Error{Pos: c.pos, Message: err.Error()}
			}
		}
		if err != nil {
			return err
		}
		if c.hasBlock && !blockKeyword[c.key()] && !unsupportedBlocks[c.key()] && isKnownInstanceKeyword(c.key()) {
			p.warn(c.pos, "%q takes no block; its contents are ignored", c.key())
		}
	}
	p.skipOtherFamily(&d)
	p.drafts = append(p.drafts, d)
	return nil
}

// blockKeyword are the instance keywords whose values come in a block.
var blockKeyword = map[string]bool{
	"unicast_peer": true, "authentication": true, "virtual_ipaddress": true,
	"virtual_ipaddress_excluded": true,
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

func (p *kaParser) peers(n node, d *Draft) error {
	if err := p.needBlock(n); err != nil {
		return err
	}
	for _, c := range n.children {
		if c.hasBlock {
			return errAt(c.pos, "unexpected block in unicast_peer")
		}
		a, ok := parseAddr(p.stripAddr(c, "unicast_peer", c.key()))
		if !ok {
			// keepalived (alloc_vrrp_unicast_peer) reports a malformed peer and skips it.
			p.warn(c.pos, "unicast_peer: bad IP address %q; line skipped, as keepalived skips it", c.key())
			continue
		}
		if len(c.args()) > 0 {
			// keepalived 2.2 also allows min_ttl/max_ttl here; vrrpd does not check them.
			p.warn(c.pos, "unicast_peer %s: options %q are not supported; ignored", c.key(), strings.Join(c.args(), " "))
		}
		d.peers = append(d.peers, draftVIP{VIP: VIP{Prefix: netip.PrefixFrom(a, a.BitLen())}, pos: c.pos})
	}
	return nil
}

func (p *kaParser) auth(n node, d *Draft) error {
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
			var note string
			if d.authPass, note = truncateAuthPass(s, "auth_pass"); note != "" {
				p.warn(c.pos, "%s", note)
			}
		default:
			p.ignore(c, " in authentication")
		}
	}
	return nil
}

// state reads "state X" as keepalived does: anything but MASTER or BACKUP (SLAVE and
// EQUAL appear in tutorials) is BACKUP with a warning, and BACKUP after MASTER is
// ignored. It returns the statement to apply.
func (p *kaParser) state(c node, d *Draft) node {
	if len(c.args()) == 0 {
		return c
	}
	switch s := c.args()[0]; {
	case s == StateBackup && d.state == StateMaster:
		p.warn(c.pos, "(%s) state previously set as MASTER; ignoring BACKUP, as keepalived does", d.name)
		c.words = []string{"state", StateMaster}
	case s != StateMaster && s != StateBackup:
		p.warnGroup("state "+s, c.pos, "(%s) unknown state %q; using BACKUP, as keepalived does", d.name, s)
		c.words = []string{"state", StateBackup}
	}
	return c
}

// stripAddr strips a "-range" or "/mask" from an address of keyword key, as
// keepalived's inet_stosockaddr does (a range first, then a mask), with a warning.
func (p *kaParser) stripAddr(c node, key, s string) string {
	cut := strings.IndexByte(s, '-')
	if cut < 0 {
		cut = strings.IndexByte(s, '/')
	}
	if cut < 0 {
		return s
	}
	p.warnGroup("strip "+key, c.pos, "%s %s: keepalived ignores the %q; using %s", key, s, s[cut:], s[:cut])
	return s[:cut]
}

// stripSource is stripAddr for unicast_src_ip and mcast_src_ip.
func (p *kaParser) stripSource(c node) node {
	if len(c.args()) == 0 {
		return c
	}
	words := slices.Clone(c.words)
	words[1] = p.stripAddr(c, c.key(), words[1])
	c.words = words
	return c
}

// vips parses a virtual_ipaddress block: one address per line, keepalived style. An
// address the instance already has (in either block) is a warning and skipped:
// keepalived's own sample lists one twice, once with a label, which keepalived adds once
// but advertises twice.
func (p *kaParser) vips(n node, out []draftVIP, seen map[netip.Addr]Position) ([]draftVIP, error) {
	if err := p.needBlock(n); err != nil {
		return nil, err
	}
	for _, c := range n.children {
		if c.hasBlock {
			return nil, errAt(c.pos, "unexpected block in %s", n.key())
		}
		v, ws, err := parseVIPWords(c.words)
		if err != nil {
			// keepalived (alloc_ipaddress) reports an address it cannot read, an option
			// without its value or a label too long, and skips the line.
			p.warn(c.pos, "%s: %v; line skipped, as keepalived skips it", n.key(), err)
			continue
		}
		for _, w := range ws {
			p.warn(c.pos, "%s", w)
		}
		if first, dup := seen[v.Prefix.Addr()]; dup {
			// keepalived keeps both in its advertisements, and a keepalived peer drops
			// an advertisement whose address count differs from its own: vrrpd cannot
			// advertise an address twice, so the fix is on both sides.
			p.warnGroup("vip twice", c.pos, "VIP %s is already listed at %s; this line is ignored (keepalived advertises the address twice, and a keepalived peer with this line ignores advertisements without it: remove it there too)", v.Prefix.Addr(), first)
			continue
		}
		seen[v.Prefix.Addr()] = c.pos
		out = append(out, draftVIP{VIP: v, pos: c.pos})
	}
	return out, nil
}

// one returns the single value of a statement inside a block.
func (p *kaParser) one(n node) (string, error) {
	st := newStatement(n.key(), n.args(), n.pos)
	v, err := st.One()
	p.notes(st)
	if err != nil {
		return "", &Error{Pos: n.pos, Message: err.Error()}
	}
	return v, nil
}
