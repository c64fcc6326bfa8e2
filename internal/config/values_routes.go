package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/route"
)

// The readers of a route and a policy rule line in keepalived's syntax, which
// keepalived.conf (keepalived_routes.go) and YAML (yaml_routes.go) both use.

// unsupportedRouteOptions are keepalived's route options vrrpd does not apply. A line
// using one is an error, not a warning: the route vrrpd would add is not the route the
// file asks for.
var unsupportedRouteOptions = map[string]bool{
	"from": true, "tos": true, "dsfield": true, "encap": true, "expires": true, "mtu": true,
	"hoplimit": true, "advmss": true, "rtt": true, "rttvar": true, "reordering": true,
	"window": true, "cwnd": true, "ssthresh": true, "realms": true, "rto_min": true,
	"initcwnd": true, "initrwnd": true, "features": true, "quickack": true, "congctl": true,
	"pref": true, "ttl-propagate": true, "fastopen_no_cookie": true, "or": true,
	"nexthop": true, "vrf": true, "as": true, "track_group": true,
}

// words walks the words of one route or rule line.
type words struct {
	w     []string
	i     int
	notes []string
}

func (ws *words) next() (string, bool) {
	if ws.i >= len(ws.w) {
		return "", false
	}
	ws.i++
	return ws.w[ws.i-1], true
}

// value returns the value of option opt.
func (ws *words) value(opt string) (string, error) {
	v, ok := ws.next()
	if !ok {
		return "", fmt.Errorf("%q needs a value", opt)
	}
	return v, nil
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
// [via ADDR] [dev IF] [table T] [metric N] [scope S] [protocol P] [onlink] ...). It
// returns notes about words accepted without effect.
func parseRouteWords(w []string) (route.Route, []string, error) {
	r := route.Route{Protocol: route.Protocol}
	ws := &words{w: w}
	fam := 0
	var dst string
	for {
		opt, ok := ws.next()
		if !ok {
			break
		}
		var v string
		var err error
		switch {
		case opt == "inet" || opt == "inet6":
			if err := setFamilyWord(opt, &fam, "route"); err != nil {
				return r, ws.notes, err
			}
		case opt == "src":
			if v, err = ws.value(opt); err == nil {
				err = parseAddrInto(&r.Src, v, "src", &fam)
			}
		case opt == "via" || opt == "gw":
			if opt == "gw" {
				ws.notes = append(ws.notes, `"gw" is deprecated in keepalived; read as "via"`)
			}
			if v, err = ws.value(opt); err == nil && (v == "inet" || v == "inet6") {
				v, err = ws.value(opt)
			}
			if err == nil {
				err = parseAddrInto(&r.Via, v, "via", &fam)
			}
		case opt == "dev" || opt == "oif":
			if v, err = ws.value(opt); err == nil {
				r.Dev = v
			}
		case opt == "table":
			if v, err = ws.value(opt); err == nil {
				r.Table, err = route.ParseTable(v)
			}
		case opt == "metric" || opt == "priority" || opt == "preference":
			if v, err = ws.value(opt); err == nil {
				var n uint64
				n, err = strconv.ParseUint(v, 10, 32)
				r.Metric = uint32(n)
				if err != nil {
					err = fmt.Errorf("bad %s %q", opt, v)
				}
			}
		case opt == "scope":
			if v, err = ws.value(opt); err == nil {
				r.Scope, err = route.ParseScope(v)
			}
		case opt == "protocol" || opt == "proto":
			if v, err = ws.value(opt); err == nil {
				r.Protocol, err = route.ParseProtocol(v)
			}
		case opt == "onlink":
			r.OnLink = true
		case opt == "no_track":
			// keepalived's tracking takes an instance out of MASTER when its route is
			// deleted; vrrpd puts the route back instead, as it does a VIP.
		case opt == "add":
		case opt == "prepend" || opt == "append":
			ws.notes = append(ws.notes, fmt.Sprintf("%q is not supported: vrrpd adds a route only when the table has none to its destination with its metric (ip route add), and leaves one it finds there alone", opt))
		case unsupportedRouteOptions[opt]:
			return r, ws.notes, fmt.Errorf("route option %q is not supported by vrrpd", opt)
		default:
			if opt == "to" {
				if opt, err = ws.value("to"); err != nil {
					return r, ws.notes, err
				}
			}
			if t, ok := route.ParseType(opt); ok {
				r.Type = t
				if opt, err = ws.value(opt); err != nil {
					return r, ws.notes, err
				}
			} else if isUnsupportedRouteType(opt) {
				return r, ws.notes, fmt.Errorf("route type %q is not supported by vrrpd (unicast, blackhole, unreachable, prohibit and throw are)", opt)
			}
			if dst != "" {
				return r, ws.notes, fmt.Errorf("unknown route keyword %q (the destination is %s)", opt, dst)
			}
			dst = opt
		}
		if err != nil {
			return r, ws.notes, err
		}
	}
	if dst == "" {
		return r, ws.notes, fmt.Errorf("route has no destination")
	}
	if dst == "default" || dst == "all" {
		if fam == 6 {
			r.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		} else {
			r.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		}
	} else {
		p, err := parsePrefix(dst)
		if err != nil {
			return r, ws.notes, fmt.Errorf("unknown route keyword or bad destination %q", dst)
		}
		if err := setFamily(&fam, p.Addr()); err != nil {
			return r, ws.notes, fmt.Errorf("route %s %v", dst, err)
		}
		r.Dst = p
	}
	if err := r.Validate(); err != nil {
		return r, ws.notes, err
	}
	return r, ws.notes, nil
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
	ws := &words{w: w}
	fam := 0
	action := ""
	setAction := func(a string) error {
		if action != "" {
			return fmt.Errorf("rule has two actions (%s and %s)", action, a)
		}
		action = a
		return nil
	}
	for {
		opt, ok := ws.next()
		if !ok {
			break
		}
		var v string
		var err error
		switch {
		case opt == "inet" || opt == "inet6":
			if err := setFamilyWord(opt, &fam, "rule"); err != nil {
				return r, ws.notes, err
			}
		case opt == "from" || opt == "to":
			if v, err = ws.value(opt); err != nil || v == "all" {
				break
			}
			var p netip.Prefix
			if p, err = parsePrefix(v); err != nil {
				err = fmt.Errorf("bad rule %s %q", opt, v)
				break
			}
			if err = setFamily(&fam, p.Addr()); err != nil {
				err = fmt.Errorf("rule %v", err)
				break
			}
			if p != p.Masked() {
				err = fmt.Errorf("rule %s %s has host bits set (did you mean %s?)", opt, p, p.Masked())
				break
			}
			if opt == "from" {
				r.From = p
			} else {
				r.To = p
			}
		case opt == "table" || opt == "lookup":
			if v, err = ws.value(opt); err == nil {
				if r.Table, err = route.ParseTable(v); err == nil {
					err = setAction("table")
				}
			}
		case opt == "not":
			r.Invert = true
		case opt == "preference" || opt == "order" || opt == "priority" || opt == "pref":
			if v, err = ws.value(opt); err == nil {
				var n uint64
				if n, err = strconv.ParseUint(v, 0, 32); err != nil {
					err = fmt.Errorf("bad rule %s %q", opt, v)
				}
				r.Priority, r.HasPriority = uint32(n), true
			}
		case opt == "fwmark":
			if v, err = ws.value(opt); err == nil {
				err = parseMark(&r, v)
			}
		case opt == "dev" || opt == "iif":
			r.IIF, err = ws.value(opt)
		case opt == "oif":
			r.OIF, err = ws.value(opt)
		case opt == "protocol":
			if v, err = ws.value(opt); err == nil {
				r.Protocol, err = route.ParseProtocol(v)
			}
		case opt == "no_track":
		case opt == "type":
			if v, err = ws.value(opt); err == nil {
				err = ruleType(&r, v, setAction)
			}
		case unsupportedRuleOptions[opt]:
			return r, ws.notes, fmt.Errorf("rule option %q is not supported by vrrpd", opt)
		default:
			if _, known := route.ParseType(opt); known {
				err = ruleType(&r, opt, setAction)
			} else {
				err = fmt.Errorf("unknown rule keyword %q", opt)
			}
		}
		if err != nil {
			return r, ws.notes, err
		}
	}
	r.IPv6 = fam == 6
	if action == "" {
		return r, ws.notes, fmt.Errorf("rule has no action (table N, blackhole, unreachable or prohibit)")
	}
	if err := r.Validate(); err != nil {
		return r, ws.notes, err
	}
	return r, ws.notes, nil
}

// ruleType reads a rule action word other than table.
func ruleType(r *route.Rule, v string, setAction func(string) error) error {
	t, ok := route.ParseType(v)
	if !ok || t == route.TypeUnicast || t == route.TypeThrow {
		return fmt.Errorf("rule action %q is not supported by vrrpd (table, blackhole, unreachable and prohibit are)", v)
	}
	r.Type = t
	return setAction(v)
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
