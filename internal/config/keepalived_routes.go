package config

import (
	"errors"
	"fmt"
)

// keepalived.conf's routing keywords: per instance virtual_routes, virtual_rules and
// track_src_ip; at the top level static_ipaddress, static_routes and static_rules; in
// global_defs net_namespace. Lines are read by values_routes.go's readers, as YAML's are.

// routeGlobal applies net_namespace from global_defs; false for other keywords. It is
// read here rather than in Globals.SetKeyword, which a KeepalivedGroup's verbatimConfig
// also reaches: a group must not move vrrpd out of its pod's namespace.
func (p *kaParser) routeGlobal(n node) (bool, error) {
	if n.key() != "net_namespace" {
		return false, nil
	}
	st := newStatement(n.key(), n.args(), n.pos)
	name, err := st.One()
	p.notes(st)
	if err == nil && !validNetns(name) {
		err = fmt.Errorf("net_namespace %q is not a namespace name (a file name in /run/netns)", name)
	}
	if err != nil {
		return true, errAt(n.pos, "%v", err)
	}
	p.g.hostSettings().netns = name
	return true, nil
}

// staticBlock reads a top-level static_ipaddress, static_routes or static_rules block;
// false for other keywords.
func (p *kaParser) staticBlock(n node) (bool, error) {
	switch n.key() {
	case "static_ipaddress", "static_routes", "static_rules":
	default:
		return false, nil
	}
	if err := p.needBlock(n); err != nil {
		return true, err
	}
	s := &p.g.hostSettings().static
	for _, c := range n.children {
		if c.hasBlock {
			return true, errAt(c.pos, "unexpected block in %s", n.key())
		}
		var err error
		switch n.key() {
		case "static_ipaddress":
			var v VIP
			switch v, err = p.staticAddress(c); err {
			case nil:
				s.Addresses = append(s.Addresses, v)
			case errSkipped:
				err = nil
			}
		case "static_routes":
			err = blockLine(p, c, n.key(), parseRouteWords, &s.Routes)
		case "static_rules":
			err = blockLine(p, c, n.key(), parseRuleWords, &s.Rules)
		}
		if err != nil {
			return true, err
		}
	}
	return true, nil
}

// errSkipped says a line was skipped, with a warning.
var errSkipped = errors.New("line skipped")

// staticAddress reads one static_ipaddress line: a VIP line whose dev is required
// (there is no instance interface to fall back on).
func (p *kaParser) staticAddress(c node) (VIP, error) {
	v, ws, err := parseVIPWords(c.words)
	if err != nil {
		// keepalived (alloc_ipaddress) reports a line it cannot read and skips it.
		p.warn(c.pos, "static_ipaddress: %v; line skipped, as keepalived skips it", err)
		return v, errSkipped
	}
	for _, w := range ws {
		p.warn(c.pos, "static_ipaddress: %s", w)
	}
	if v.Dev == "" {
		return v, errAt(c.pos, "static_ipaddress %s: no dev given (a static address belongs to no instance's interface)", v.Prefix)
	}
	if m := VIPProblem(v.Prefix); m != "" {
		return v, errAt(c.pos, "static_ipaddress %s: %s", v.Prefix, m)
	}
	return v, nil
}

// blockLine parses one line of block with parse, its notes grouped by what they say, and
// appends it to dst. A line keepalived would skip (see skippable) is skipped with a
// warning, as keepalived skips it; any other error is returned.
func blockLine[T any](p *kaParser, c node, block string, parse func([]string) (T, []string, error), dst *[]T) error {
	v, notes, err := parse(c.words)
	for _, m := range notes {
		p.warnGroup(block+" "+m, c.pos, "%s: %s", block, m)
	}
	switch {
	case skippable(err):
		p.warn(c.pos, "%s: %v; line skipped, as keepalived skips it", block, err)
	case err != nil:
		return errAt(c.pos, "%s: %v", block, err)
	default:
		*dst = append(*dst, v)
	}
	return nil
}

// instanceRoutes applies an instance's virtual_routes or virtual_rules block, or
// track_src_ip; false for other keywords.
func (p *kaParser) instanceRoutes(c node, d *Draft) (bool, error) {
	switch c.key() {
	case "track_src_ip":
		st := newStatement(c.key(), c.args(), c.pos)
		st.NoValue()
		p.notes(st)
		d.routing.trackSrcIP, d.routing.trackPos = true, c.pos
		return true, nil
	case "virtual_routes", "virtual_rules":
	default:
		return false, nil
	}
	if err := p.needBlock(c); err != nil {
		return true, err
	}
	for _, e := range c.children {
		if e.hasBlock {
			return true, errAt(e.pos, "unexpected block in %s", c.key())
		}
		var err error
		if c.key() == "virtual_routes" {
			err = blockLine(p, e, c.key(), parseRouteWords, &d.routing.routes)
		} else {
			err = blockLine(p, e, c.key(), parseRuleWords, &d.routing.rules)
		}
		if err != nil {
			return true, err
		}
	}
	return true, nil
}
