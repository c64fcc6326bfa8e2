package config

import (
	"strconv"

	yamlv3 "go.yaml.in/yaml/v3"
)

// The YAML form of routes.go. Top level: netNamespace, staticAddresses (as vips),
// staticRoutes, staticRules. Per instance: routes, rules, trackSourceIP. A route or rule
// is keepalived's line as a string, or a mapping of the same words; both are read by
// parseRouteWords and parseRuleWords, so both follow keepalived.conf's rules.

type yamlHostRouting struct {
	NetNamespace    string      `yaml:"netNamespace"`
	StaticAddresses []yamlVIP   `yaml:"staticAddresses"`
	StaticRoutes    []yamlRoute `yaml:"staticRoutes"`
	StaticRules     []yamlRule  `yaml:"staticRules"`
}

type yamlInstanceRouting struct {
	Routes        []yamlRoute `yaml:"routes"`
	Rules         []yamlRule  `yaml:"rules"`
	TrackSourceIP bool        `yaml:"trackSourceIP"`
}

// yamlWord is a value written as a string or a number (a table, a mark).
type yamlWord string

func (w *yamlWord) UnmarshalYAML(n *yamlv3.Node) error {
	switch n.ShortTag() {
	case "!!str":
		*w = yamlWord(n.Value)
	case "!!int":
		// As the YAML library resolves it (0x10, 0o20 and 020 are 16), in decimal.
		var i int64
		var u uint64
		if n.Decode(&i) == nil {
			*w = yamlWord(strconv.FormatInt(i, 10))
		} else if n.Decode(&u) == nil {
			*w = yamlWord(strconv.FormatUint(u, 10))
		} else {
			*w = yamlWord(n.Value)
		}
	case "!!float":
		*w = yamlWord(n.Value)
	default:
		return yamlTypeError(n, "config.yamlWord")
	}
	return nil
}

// yamlRoute and yamlRule are keepalived's line, or a mapping of its words.
type (
	yamlRoute = textOrKeys[yamlRouteKeys]
	yamlRule  = textOrKeys[yamlRuleKeys]
)

type yamlRouteKeys struct {
	To       string   `yaml:"to"`
	Type     string   `yaml:"type"`
	Src      string   `yaml:"src"`
	Via      string   `yaml:"via"`
	Dev      string   `yaml:"dev"`
	Table    yamlWord `yaml:"table"`
	Metric   yamlWord `yaml:"metric"`
	Scope    yamlWord `yaml:"scope"`
	Protocol yamlWord `yaml:"protocol"`
	OnLink   bool     `yaml:"onlink"`
	// Nexthops are a multipath route's paths, keepalived's nexthop clauses.
	Nexthops []yamlNexthop `yaml:"nexthops"`
}

// yamlNexthop is one path of a multipath route.
type yamlNexthop struct {
	Via    string   `yaml:"via"`
	Dev    string   `yaml:"dev"`
	Weight yamlWord `yaml:"weight"`
	OnLink bool     `yaml:"onlink"`
}

// words are the route's keepalived words.
func (r yamlRouteKeys) words() []string {
	var w []string
	if r.Type != "" {
		w = append(w, r.Type)
	}
	if r.To != "" {
		w = append(w, r.To)
	}
	w = appendOpts(w, "src", r.Src, "via", r.Via, "dev", r.Dev, "table", string(r.Table),
		"metric", string(r.Metric), "scope", string(r.Scope), "protocol", string(r.Protocol))
	if r.OnLink {
		w = append(w, "onlink")
	}
	// Last, as in keepalived.conf: every word after the first nexthop is a path's.
	for _, n := range r.Nexthops {
		w = appendOpts(append(w, "nexthop"), "via", n.Via, "dev", n.Dev, "weight", string(n.Weight))
		if n.OnLink {
			w = append(w, "onlink")
		}
	}
	return w
}

type yamlRuleKeys struct {
	From     string   `yaml:"from"`
	To       string   `yaml:"to"`
	Not      bool     `yaml:"not"`
	Fwmark   yamlWord `yaml:"fwmark"`
	IIF      string   `yaml:"iif"`
	OIF      string   `yaml:"oif"`
	Priority yamlWord `yaml:"priority"`
	Table    yamlWord `yaml:"table"`
	// Type is blackhole, unreachable or prohibit instead of a table.
	Type     string   `yaml:"type"`
	Protocol yamlWord `yaml:"protocol"`
	// Family "inet6" makes a rule without addresses IPv6.
	Family string `yaml:"family"`
}

// words are the rule's keepalived words.
func (r yamlRuleKeys) words() []string {
	var w []string
	if r.Family != "" {
		w = append(w, r.Family)
	}
	if r.Not {
		w = append(w, "not")
	}
	w = appendOpts(w, "from", r.From, "to", r.To, "fwmark", string(r.Fwmark), "iif", r.IIF, "oif", r.OIF,
		"priority", string(r.Priority), "table", string(r.Table), "protocol", string(r.Protocol))
	if r.Type != "" {
		w = append(w, r.Type)
	}
	return w
}

// appendOpts appends "key value" for each pair whose value is set.
func appendOpts(w []string, kv ...string) []string {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			w = append(w, kv[i], kv[i+1])
		}
	}
	return w
}

// hostRouting reads the top-level routing keys into g.
func (ix yamlIndex) hostRouting(y yamlHostRouting, g *Globals, ws *[]Warning) error {
	h := g.hostSettings()
	if y.NetNamespace != "" {
		if !validNetns(y.NetNamespace) {
			return errAt(ix.at("netNamespace"), "netNamespace %q is not a namespace name (a file name in /run/netns)", y.NetNamespace)
		}
		h.netns = y.NetNamespace
	}
	addrs, err := ix.vips(y.StaticAddresses, nil, "staticAddresses", "staticAddresses", ws)
	if err != nil {
		return err
	}
	for j, a := range addrs {
		if a.Dev == "" {
			return errAt(a.pos, "staticAddresses[%d]: %s has no dev (a static address belongs to no instance's interface)", j, a.Prefix)
		}
		if m := VIPProblem(a.Prefix); m != "" {
			return errAt(a.pos, "staticAddresses[%d]: %s: %s", j, a.Prefix, m)
		}
		h.static.Addresses = append(h.static.Addresses, a.VIP)
	}
	for j, r := range y.StaticRoutes {
		rt, notes, err := parseRouteWords(yamlLineWords(r))
		if err := ix.routingResult([]any{"staticRoutes", j}, "staticRoutes", notes, err, ws); err != nil {
			return err
		}
		h.static.Routes = append(h.static.Routes, rt)
	}
	for j, r := range y.StaticRules {
		ru, notes, err := parseRuleWords(yamlLineWords(r))
		if err := ix.routingResult([]any{"staticRules", j}, "staticRules", notes, err, ws); err != nil {
			return err
		}
		h.static.Rules = append(h.static.Rules, ru)
	}
	return nil
}

// instanceRouting reads an instance's routes, rules and trackSourceIP into d.
func (ix yamlIndex) instanceRouting(i int, y yamlInstanceRouting, d *Draft, ws *[]Warning) error {
	for j, r := range y.Routes {
		rt, notes, err := parseRouteWords(yamlLineWords(r))
		if err := ix.routingResult([]any{"instances", i, "routes", j}, "routes", notes, err, ws); err != nil {
			return err
		}
		d.routing.routes = append(d.routing.routes, rt)
	}
	for j, r := range y.Rules {
		ru, notes, err := parseRuleWords(yamlLineWords(r))
		if err := ix.routingResult([]any{"instances", i, "rules", j}, "rules", notes, err, ws); err != nil {
			return err
		}
		d.routing.rules = append(d.routing.rules, ru)
	}
	if y.TrackSourceIP {
		d.routing.trackSrcIP, d.routing.trackPos = true, ix.at("instances", i, "trackSourceIP")
	}
	return nil
}

// routingResult turns a route or rule's notes into warnings and its error into one at
// its position.
func (ix yamlIndex) routingResult(path []any, key string, notes []string, err error, ws *[]Warning) error {
	pos := ix.at(path...)
	what := key + "[" + strconv.Itoa(path[len(path)-1].(int)) + "]"
	for _, n := range notes {
		*ws = append(*ws, Warning{Pos: pos, Message: what + ": " + n})
	}
	if err != nil {
		return errAt(pos, "%s: %v", what, err)
	}
	return nil
}
