package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/route"
)

// The readers of a route and a policy rule line in keepalived's syntax, which
// keepalived.conf (keepalived_routes.go) and YAML (yaml_routes.go) both use.

// A line's error is of one of two kinds. keepalived skips a route or rule line it cannot
// read, with a message, and runs the rest (alloc_route and alloc_rule in keepalived
// 2.2.7's vrrp_iproute.c and vrrp_iprule.c): so does keepalived.conf's reader here, with
// a warning naming the line. A line keepalived reads and vrrpd cannot apply as written
// (an option, type or action vrrpd does not support, or one vrrpd's own checks refuse)
// is a lineApplyError and stays an error: skipping it would run the host without a route
// its file asks for.
type lineApplyError struct{ error }

func (e lineApplyError) Unwrap() error { return e.error }

// applyError marks err, if any, as a line vrrpd cannot apply.
func applyError(err error) error {
	if err == nil {
		return nil
	}
	return lineApplyError{err}
}

func applyErrorf(format string, a ...any) error { return applyError(fmt.Errorf(format, a...)) }

// skippable reports whether keepalived skips a line with error err and runs the rest.
func skippable(err error) bool {
	var a lineApplyError
	return err != nil && !errors.As(err, &a)
}

// unsupportedRouteOptions are keepalived's route options vrrpd does not apply. A line
// using one is an error, not a warning: the route vrrpd would add is not the route the
// file asks for.
var unsupportedRouteOptions = map[string]bool{
	"from": true, "tos": true, "dsfield": true, "encap": true, "expires": true, "mtu": true,
	"hoplimit": true, "advmss": true, "rtt": true, "rttvar": true, "reordering": true,
	"window": true, "cwnd": true, "ssthresh": true, "realms": true, "rto_min": true,
	"initcwnd": true, "initrwnd": true, "features": true, "quickack": true, "congctl": true,
	"pref": true, "ttl-propagate": true, "fastopen_no_cookie": true,
	"vrf": true, "as": true, "track_group": true,
}

// lineWords walks the words of one route or rule line, with the notes about words
// accepted without effect and the family the words name so far (0 unset, 4, 6).
type lineWords struct {
	w     []string
	i     int
	notes []string
	fam   int
}

func (ws *lineWords) next() (string, bool) {
	if ws.i >= len(ws.w) {
		return "", false
	}
	ws.i++
	return ws.w[ws.i-1], true
}

// value returns the value of option opt.
func (ws *lineWords) value(opt string) (string, error) {
	v, ok := ws.next()
	if !ok {
		return "", fmt.Errorf("%q needs a value", opt)
	}
	return v, nil
}

// walkLine is the one loop of a route and a rule line (what says which): the words both
// read alike (inet and inet6, no_track, an option vrrpd refuses) here, every other word
// through word, which reads the values its option takes. The first error ends the line.
func walkLine(w []string, what string, refused map[string]bool, word func(ws *lineWords, opt string) error) (*lineWords, error) {
	ws := &lineWords{w: w}
	for {
		opt, ok := ws.next()
		var err error
		switch {
		case !ok:
			return ws, nil
		case opt == "inet" || opt == "inet6":
			err = setFamilyWord(opt, &ws.fam, what)
		case opt == "no_track":
			// keepalived's tracking takes an instance out of MASTER when its route or rule
			// is deleted; vrrpd puts it back instead, as it does a VIP.
		case refused[opt]:
			err = applyErrorf("%s option %q is not supported by vrrpd", what, opt)
		default:
			err = word(ws, opt)
		}
		if err != nil {
			return ws, err
		}
	}
}

// family sets *fam (0 unset, 4, 6) from a, or fails on a mix.
func setFamily(fam *int, a netip.Addr) error {
	f := 4
	if a.Is6() {
		f = 6
	}
	if *fam != 0 && *fam != f {
		return fmt.Errorf("mixes IPv4 and IPv6 addresses")
	}
	*fam = f
	return nil
}

// parseRouteWords reads a route in keepalived's syntax ([to] [TYPE] DST [src ADDR]
// [via ADDR [or ADDR]] [dev IF] [table T] [metric N] [scope S] [protocol P] [onlink]
// ... [nexthop [via ADDR] [dev IF] [weight N] [onlink]]...). It returns notes about words
// accepted without effect.
func parseRouteWords(w []string) (route.Route, []string, error) {
	l := routeLine{r: route.Route{Protocol: route.Protocol}}
	ws, err := walkLine(w, "route", unsupportedRouteOptions, func(ws *lineWords, opt string) error {
		return l.word(ws, opt)
	})
	if err == nil {
		err = l.end(ws.fam)
	}
	return l.r, ws.notes, err
}

// routeLine is a route line as read so far: the route, its destination word, the
// gateway keepalived's "or" gives as the alternative to via's, and the paths its
// "nexthop" clauses give, which end the line (keepalived reads every word after the
// first nexthop as a nexthop's).
type routeLine struct {
	r        route.Route
	dst      string
	or       netip.Addr
	nexthops []route.Nexthop
}

// word reads one option of a route line with its value, or the destination.
func (l *routeLine) word(ws *lineWords, opt string) error {
	if len(l.nexthops) > 0 || opt == "nexthop" {
		return l.nexthopWord(ws, opt)
	}
	r := &l.r
	var v string
	var err error
	switch opt {
	case "src":
		if v, err = ws.value(opt); err == nil {
			err = parseAddrInto(&r.Src, v, "src", &ws.fam)
		}
	case "via", "gw":
		err = l.via(ws, opt)
	case "or":
		err = l.alternative(ws)
	case "dev", "oif":
		r.Dev, err = ws.value(opt)
	case "table":
		if v, err = ws.value(opt); err == nil {
			r.Table, err = route.ParseTable(v)
		}
	case "metric", "priority", "preference":
		if v, err = ws.value(opt); err == nil {
			n, perr := strconv.ParseUint(v, 10, 32)
			if r.Metric = uint32(n); perr != nil {
				err = fmt.Errorf("bad %s %q", opt, v)
			}
		}
	case "scope":
		if v, err = ws.value(opt); err == nil {
			r.Scope, err = route.ParseScope(v)
		}
	case "protocol", "proto":
		if v, err = ws.value(opt); err == nil {
			r.Protocol, err = route.ParseProtocol(v)
		}
	case "onlink":
		r.OnLink = true
	case "add":
	case "prepend", "append":
		ws.notes = append(ws.notes, fmt.Sprintf("%q is not supported: vrrpd adds a route only when the table has none to its destination with its metric (ip route add), and leaves one it finds there alone", opt))
	default:
		return routeDestination(r, &l.dst, ws, opt)
	}
	return err
}

// via reads "via [inet|inet6] ADDR" (opt is via or its deprecated gw).
func (l *routeLine) via(ws *lineWords, opt string) error {
	if opt == "gw" {
		ws.notes = append(ws.notes, `"gw" is deprecated in keepalived; read as "via"`)
	}
	if l.or.IsValid() {
		// keepalived moves via's gateway into the first path when it reads "or": a via
		// after it would be the route's own gateway besides its two paths, which the
		// kernel refuses.
		return applyErrorf("%q after \"or\": vrrpd cannot apply a route with a gateway besides its two paths (write via GW1 or GW2)", opt)
	}
	v, err := ws.value(opt)
	if err == nil && (v == "inet" || v == "inet6") {
		v, err = ws.value(opt)
	}
	if err == nil {
		err = parseAddrInto(&l.r.Via, v, "via", &ws.fam)
	}
	return err
}

// alternative reads "or ADDR": keepalived's deprecated second gateway, which makes the
// route a multipath one with a path through each gateway (alloc_route in keepalived
// 2.2.7's vrrp_iproute.c).
func (l *routeLine) alternative(ws *lineWords) error {
	v, err := ws.value("or")
	switch {
	case err != nil:
		return err
	case l.or.IsValid():
		// keepalived reports a second "or" and ignores it.
		ws.notes = append(ws.notes, fmt.Sprintf(`a second "or" (%s) is ignored, as keepalived ignores it`, v))
		return nil
	case !l.r.Via.IsValid():
		// keepalived would make a first path without a gateway, which the kernel refuses.
		return applyErrorf(`"or" %s needs a via before it (write via GW1 or GW2)`, v)
	}
	a, ok := parseAddr(v)
	if !ok {
		return fmt.Errorf(`bad "or" address %q`, v) // keepalived skips the line
	}
	if err := setFamily(&ws.fam, a); err != nil {
		// keepalived hands the kernel an IPv4 route's IPv6 path as RTA_VIA; vrrpd's
		// routes keep to one family.
		return applyErrorf(`"or" %s: route %v`, v, err)
	}
	ws.notes = append(ws.notes, `"or" is deprecated in keepalived; read as a multipath route with a nexthop through each gateway`)
	l.or = a
	return nil
}

// nexthopWord reads a word of the line's nexthop clauses ("nexthop [via [inet|inet6]
// ADDR] [dev IF] [weight N] [onlink]", as many as there are paths; parse_nexthops in
// keepalived 2.2.7's vrrp_iproute.c). keepalived adds the route with the paths it read
// before a word it cannot read there: so every error here is one vrrpd cannot apply,
// since the route would lack a path the file gives.
func (l *routeLine) nexthopWord(ws *lineWords, opt string) error {
	if opt == "nexthop" {
		if l.or.IsValid() {
			// keepalived reports it, and skips the line as trailing nonsense.
			return fmt.Errorf(`"nexthop" after "or": a route takes one or the other`)
		}
		l.nexthops = append(l.nexthops, route.Nexthop{})
		return nil
	}
	n := &l.nexthops[len(l.nexthops)-1]
	var v string
	var err error
	switch opt {
	case "via":
		if v, err = ws.value(opt); err == nil && (v == "inet" || v == "inet6") {
			v, err = ws.value(opt)
		}
		if err == nil {
			err = parseAddrInto(&n.Via, v, "nexthop via", &ws.fam)
		}
	case "dev":
		n.Dev, err = ws.value(opt)
	case "weight":
		if v, err = ws.value(opt); err == nil {
			w, perr := strconv.ParseUint(v, 10, 16)
			if perr != nil || w < 1 || w > route.MaxWeight {
				err = fmt.Errorf("bad nexthop weight %q (1..%d)", v, route.MaxWeight)
			}
			n.Weight = uint16(w)
		}
	case "onlink":
		n.OnLink = true
	default:
		err = fmt.Errorf("%q is not a nexthop option (via, dev, weight, onlink), and no route option may follow the nexthops", opt)
	}
	return applyError(err)
}

// end sets the route's destination, of the family its words name, makes the paths of an
// "or" or "nexthop" route, and checks the route.
func (l *routeLine) end(fam int) error {
	if len(l.nexthops) > 0 {
		r := &l.r
		if r.Via.IsValid() || r.Dev != "" || r.OnLink {
			// keepalived would send them for the route as a whole, which the kernel takes
			// only if they match the first path's.
			return applyErrorf("a route with nexthops takes via, dev and onlink in each nexthop, not before them")
		}
		r.Nexthops = route.NewNexthops(l.nexthops...)
	}
	if l.or.IsValid() {
		// The route's dev and onlink go to each path: keepalived sends them for the
		// route as a whole, where the kernel refuses the dev beside paths without one
		// ("Nexthop device index does not match RTA_OIF") and does not apply onlink to
		// the paths; on each path they are what the line means.
		r := &l.r
		first := route.Nexthop{Via: r.Via, Dev: r.Dev, OnLink: r.OnLink}
		second := first
		second.Via = l.or
		r.Nexthops = route.NewNexthops(first, second)
		r.Via, r.Dev, r.OnLink = netip.Addr{}, "", false
	}
	return routeEnd(&l.r, l.dst, fam)
}

// routeDestination reads "[to] [TYPE] DST": the one word of a route line that is no
// option.
func routeDestination(r *route.Route, dst *string, ws *lineWords, opt string) error {
	var err error
	if opt == "to" {
		if opt, err = ws.value("to"); err != nil {
			return err
		}
	}
	if t, ok := route.ParseType(opt); ok {
		r.Type = t
		if opt, err = ws.value(opt); err != nil {
			return err
		}
	} else if isUnsupportedRouteType(opt) {
		return applyErrorf("route type %q is not supported by vrrpd (unicast, blackhole, unreachable, prohibit and throw are)", opt)
	}
	if *dst != "" {
		return fmt.Errorf("unknown route keyword %q (the destination is %s)", opt, *dst)
	}
	*dst = opt
	return nil
}

// routeEnd sets the route's destination, of the family its words name, and checks it.
func routeEnd(r *route.Route, dst string, fam int) error {
	switch {
	case dst == "":
		return fmt.Errorf("route has no destination")
	case dst == "default" || dst == "all":
		if fam == 6 {
			r.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		} else {
			r.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		}
	default:
		p, err := parsePrefix(dst)
		if err != nil {
			return fmt.Errorf("unknown route keyword or bad destination %q", dst)
		}
		if err := setFamily(&fam, p.Addr()); err != nil {
			return fmt.Errorf("route %s %v", dst, err)
		}
		r.Dst = p
	}
	return applyError(r.Validate())
}

func isUnsupportedRouteType(s string) bool {
	switch s {
	case "local", "broadcast", "anycast", "multicast", "nat", "xresolve":
		return true
	}
	return false
}

// parseAddrInto parses the address of option opt into *dst and checks its family.
func parseAddrInto(dst *netip.Addr, v, opt string, fam *int) error {
	a, ok := parseAddr(v)
	if !ok {
		return fmt.Errorf("bad %s address %q", opt, v)
	}
	if err := setFamily(fam, a); err != nil {
		return fmt.Errorf("%s %s: route %v", opt, v, err)
	}
	*dst = a
	return nil
}

// unsupportedRuleOptions are keepalived's rule options vrrpd does not apply (an error,
// as for routes).
var unsupportedRuleOptions = map[string]bool{
	"tos": true, "dsfield": true, "realms": true, "suppress_prefixlength": true, "sup_pl": true,
	"suppress_ifgroup": true, "sup_group": true, "tunnel-id": true, "uidrange": true,
	"l3mdev": true, "ipproto": true, "sport": true, "dport": true, "goto": true, "nop": true,
	"track_group": true,
}

// parseRuleWords reads a policy rule in keepalived's syntax ([from P] [to P] [not]
// [fwmark M[/MASK]] [iif IF] [oif IF] [priority N] table T | blackhole | unreachable |
// prohibit).
func parseRuleWords(w []string) (route.Rule, []string, error) {
	r := route.Rule{Protocol: route.Protocol}
	action := ""
	ws, err := walkLine(w, "rule", unsupportedRuleOptions, func(ws *lineWords, opt string) error {
		return ruleWord(&r, &action, ws, opt)
	})
	r.IPv6 = ws.fam == 6
	switch {
	case err != nil:
	case action == "":
		err = fmt.Errorf("rule has no action (table N, blackhole, unreachable or prohibit)")
	default:
		err = applyError(r.Validate())
	}
	return r, ws.notes, err
}

// ruleWord reads one option of a rule line with its value, or its action.
func ruleWord(r *route.Rule, action *string, ws *lineWords, opt string) error {
	var v string
	var err error
	switch opt {
	case "from", "to":
		if v, err = ws.value(opt); err == nil && v != "all" {
			err = ruleAddr(r, &ws.fam, opt, v)
		}
	case "table", "lookup":
		if v, err = ws.value(opt); err == nil {
			if r.Table, err = route.ParseTable(v); err == nil {
				err = setAction(action, "table")
			}
		}
	case "not":
		r.Invert = true
	case "preference", "order", "priority", "pref":
		if v, err = ws.value(opt); err == nil {
			n, perr := strconv.ParseUint(v, 0, 32)
			if perr != nil {
				err = fmt.Errorf("bad rule %s %q", opt, v)
			}
			r.Priority, r.HasPriority = uint32(n), true
		}
	case "fwmark":
		if v, err = ws.value(opt); err == nil {
			err = parseMark(r, v)
		}
	case "dev", "iif":
		r.IIF, err = ws.value(opt)
	case "oif":
		r.OIF, err = ws.value(opt)
	case "protocol":
		if v, err = ws.value(opt); err == nil {
			r.Protocol, err = route.ParseProtocol(v)
		}
	case "type":
		if v, err = ws.value(opt); err == nil {
			err = ruleType(r, v, action)
		}
	default:
		if _, known := route.ParseType(opt); !known {
			return fmt.Errorf("unknown rule keyword %q", opt)
		}
		err = ruleType(r, opt, action)
	}
	return err
}

// ruleAddr reads the prefix of a rule's from or to (opt).
func ruleAddr(r *route.Rule, fam *int, opt, v string) error {
	p, err := parsePrefix(v)
	if err != nil {
		return fmt.Errorf("bad rule %s %q", opt, v)
	}
	if err := setFamily(fam, p.Addr()); err != nil {
		return fmt.Errorf("rule %v", err)
	}
	if p != p.Masked() {
		return fmt.Errorf("rule %s %s has host bits set (did you mean %s?)", opt, p, p.Masked())
	}
	if opt == "from" {
		r.From = p
	} else {
		r.To = p
	}
	return nil
}

// setAction records a rule's action, which a rule has one of.
func setAction(action *string, a string) error {
	if *action != "" {
		return fmt.Errorf("rule has two actions (%s and %s)", *action, a)
	}
	*action = a
	return nil
}

// ruleType reads a rule action word other than table.
func ruleType(r *route.Rule, v string, action *string) error {
	t, ok := route.ParseType(v)
	if !ok || t == route.TypeUnicast || t == route.TypeThrow {
		err := fmt.Errorf("rule action %q is not supported by vrrpd (table, blackhole, unreachable and prohibit are)", v)
		if ok { // an action keepalived takes
			err = applyError(err)
		}
		return err
	}
	r.Type = t
	return setAction(action, v)
}

// parseMark reads fwmark MARK[/MASK], each decimal or 0x hex.
func parseMark(r *route.Rule, v string) error {
	m, mask, hasMask := strings.Cut(v, "/")
	n, err := strconv.ParseUint(m, 0, 32)
	if err != nil {
		return fmt.Errorf("bad fwmark %q", v)
	}
	r.Mark, r.HasMark = uint32(n), true
	if hasMask {
		k, err := strconv.ParseUint(mask, 0, 32)
		if err != nil {
			return fmt.Errorf("bad fwmark mask %q", v)
		}
		r.Mask = uint32(k)
	}
	return nil
}

// setFamilyWord records the family an inet or inet6 word names (4 or 6) in fam, refusing
// one that contradicts the family already set (what is "route" or "rule").
func setFamilyWord(opt string, fam *int, what string) error {
	f := 4
	if opt == "inet6" {
		f = 6
	}
	if *fam != 0 && *fam != f {
		return fmt.Errorf("%s given for a %s of the other family", opt, what)
	}
	*fam = f
	return nil
}
