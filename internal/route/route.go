package route

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Protocol is the routing protocol number vrrpd marks its routes and rules with unless
// told otherwise: keepalived's RTPROT_KEEPALIVED.
const Protocol = 18

// Type is a route's type (ip route's TYPE) or a rule's action (ip rule's table / TYPE).
type Type uint8

// Route and rule types. TypeUnicast is a route to a next hop or device; for a rule it is
// "look up the table".
const (
	TypeUnicast     Type = iota // the zero value
	TypeBlackhole               // silently dropped
	TypeUnreachable             // ICMP unreachable
	TypeProhibit                // ICMP administratively prohibited
	TypeThrow                   // routes only: continue with the next rule
)

var typeNames = [...]string{"unicast", "blackhole", "unreachable", "prohibit", "throw"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "type" + strconv.Itoa(int(t))
}

// ParseType returns the type called s (ip route's names), or false.
func ParseType(s string) (Type, bool) {
	for i, n := range typeNames {
		if n == s {
			return Type(i), true
		}
	}
	return 0, false
}

// Table numbers with names (iproute2's built-in rt_tables).
const (
	TableDefault = 253
	TableMain    = 254
	TableLocal   = 255
)

// ParseTable reads a routing table: a number (1..2^32-1) or one of iproute2's built-in
// names. Names from /etc/iproute2/rt_tables are the caller's business.
func ParseTable(s string) (uint32, error) {
	switch s {
	case "main":
		return TableMain, nil
	case "local":
		return TableLocal, nil
	case "default":
		return TableDefault, nil
	}
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("routing table %q is not a number 1..4294967295 or main, local, default", s)
	}
	return uint32(n), nil
}

// Scopes (ip route's scope names).
const (
	ScopeUniverse = 0
	ScopeSite     = 200
	ScopeLink     = 253
	ScopeHost     = 254
	ScopeNowhere  = 255
)

// ParseScope reads a scope name or number.
func ParseScope(s string) (uint8, error) {
	switch s {
	case "global", "universe":
		return ScopeUniverse, nil
	case "site":
		return ScopeSite, nil
	case "link":
		return ScopeLink, nil
	case "host":
		return ScopeHost, nil
	case "nowhere":
		return ScopeNowhere, nil
	}
	n, err := strconv.ParseUint(s, 0, 8)
	if err != nil {
		return 0, fmt.Errorf("scope %q is not global, site, link, host, nowhere or 0..255", s)
	}
	return uint8(n), nil
}

// ParseProtocol reads a routing protocol: a number or one of iproute2's common names.
func ParseProtocol(s string) (uint8, error) {
	names := map[string]uint8{"redirect": 1, "kernel": 2, "boot": 3, "static": 4, "keepalived": Protocol,
		"dhcp": 16, "bird": 12, "zebra": 11, "bgp": 186, "ospf": 188}
	if n, ok := names[s]; ok {
		return n, nil
	}
	n, err := strconv.ParseUint(s, 0, 8)
	if err != nil {
		return 0, fmt.Errorf("protocol %q is not a number 0..255 or a known name", s)
	}
	return uint8(n), nil
}

// Route is one route as vrrpd adds it. Zero fields are the kernel's defaults (table main,
// scope global, metric 0 or IPv6's 1024), except Protocol, which Resolve sets.
type Route struct {
	// Dst is the destination (0.0.0.0/0 or ::/0 for default).
	Dst netip.Prefix `json:"dst"`
	// Src is the preferred source address (ip route's src): often a VIP, so the route is
	// added after the addresses.
	Src netip.Addr `json:"src,omitzero"`
	// Via is the gateway; invalid for a route straight onto Dev or of a non-unicast type.
	Via netip.Addr `json:"via,omitzero"`
	// Dev is the output interface, empty to let the kernel pick it from Via.
	Dev      string `json:"dev,omitempty"`
	Table    uint32 `json:"table,omitempty"`
	Metric   uint32 `json:"metric,omitempty"`
	Scope    uint8  `json:"scope,omitempty"`
	Type     Type   `json:"type,omitempty"`
	Protocol uint8  `json:"protocol"`
	OnLink   bool   `json:"onlink,omitempty"`
	// Nexthops are a multipath route's paths (keepalived's "via A or B"); then Via, Dev
	// and OnLink are unset, each path has its own. A record written before multipath
	// routes has no "nexthops" and reads as a route without.
	Nexthops Nexthops `json:"nexthops,omitzero"`
}

// IPv6 reports whether r is an IPv6 route.
func (r Route) IPv6() bool { return r.Dst.Addr().Is6() }

// table is r's table with the default filled in.
func (r Route) table() uint32 {
	if r.Table == 0 {
		return TableMain
	}
	return r.Table
}

// metric is r's metric as the kernel stores it: IPv6 routes without one get 1024.
func (r Route) metric() uint32 {
	if r.Metric == 0 && r.IPv6() {
		return 1024
	}
	return r.Metric
}

// String writes r as ip route would take it.
func (r Route) String() string {
	var b strings.Builder
	if r.Type != TypeUnicast {
		b.WriteString(r.Type.String() + " ")
	}
	b.WriteString(r.Dst.String())
	if r.Via.IsValid() {
		b.WriteString(" via " + r.Via.String())
	}
	if r.Dev != "" {
		b.WriteString(" dev " + r.Dev)
	}
	if r.Src.IsValid() {
		b.WriteString(" src " + r.Src.String())
	}
	if r.Table != 0 && r.Table != TableMain {
		fmt.Fprintf(&b, " table %d", r.Table)
	}
	if r.Metric != 0 {
		fmt.Fprintf(&b, " metric %d", r.Metric)
	}
	if r.Scope != 0 {
		fmt.Fprintf(&b, " scope %d", r.Scope)
	}
	if r.OnLink {
		b.WriteString(" onlink")
	}
	fmt.Fprintf(&b, " proto %d", r.Protocol)
	for _, n := range r.Nexthops.List() {
		b.WriteString(" " + n.String())
	}
	return b.String()
}

// Validate checks what the kernel would refuse in ways a configuration can say plainly.
func (r Route) Validate() error {
	if !r.Dst.IsValid() {
		return errors.New("route has no destination")
	}
	if r.Dst != r.Dst.Masked() {
		return fmt.Errorf("route destination %s has host bits set (did you mean %s?)", r.Dst, r.Dst.Masked())
	}
	v6 := r.IPv6()
	for _, a := range []netip.Addr{r.Src, r.Via} {
		if a.IsValid() && a.Is6() != v6 {
			return fmt.Errorf("route %s mixes IPv4 and IPv6 addresses", r.Dst)
		}
	}
	multipath := !r.Nexthops.IsZero()
	if r.Type != TypeUnicast && (r.Via.IsValid() || r.Dev != "" || multipath) {
		return fmt.Errorf("a %s route takes no via, dev or nexthop", r.Type)
	}
	if multipath {
		if r.Via.IsValid() || r.Dev != "" || r.OnLink {
			return errMultipathTop
		}
		return r.Nexthops.validate(r.Dst)
	}
	if r.Type == TypeUnicast && !r.Via.IsValid() && r.Dev == "" {
		return fmt.Errorf("route %s needs via or dev", r.Dst)
	}
	if len(r.Dev) > 15 {
		return fmt.Errorf("interface name %q is longer than 15 characters", r.Dev)
	}
	return nil
}

// Rule is one policy routing rule (ip rule) as vrrpd adds it.
type Rule struct {
	// IPv6 is the rule's family: that of From and To, or chosen with inet6.
	IPv6 bool `json:"ipv6,omitempty"`
	// From and To are the source and destination selectors; invalid for "all".
	From netip.Prefix `json:"from,omitzero"`
	To   netip.Prefix `json:"to,omitzero"`
	// Priority (ip rule's preference) orders the rules; HasPriority false leaves it to
	// the kernel.
	Priority    uint32 `json:"priority,omitempty"`
	HasPriority bool   `json:"has_priority,omitempty"`
	// Mark and Mask select by firewall mark (fwmark MARK[/MASK]) when HasMark.
	Mark    uint32 `json:"fwmark,omitempty"`
	Mask    uint32 `json:"fwmask,omitempty"`
	HasMark bool   `json:"has_fwmark,omitempty"`
	// IIF and OIF select by input and output interface.
	IIF string `json:"iif,omitempty"`
	OIF string `json:"oif,omitempty"`
	// Invert is ip rule's not.
	Invert bool `json:"not,omitempty"`
	// Type is the action: TypeUnicast looks Table up, the others answer themselves.
	Type     Type   `json:"type,omitempty"`
	Table    uint32 `json:"table,omitempty"`
	Protocol uint8  `json:"protocol"`
}

// String writes r as ip rule would take it.
func (r Rule) String() string {
	var b strings.Builder
	if r.HasPriority {
		fmt.Fprintf(&b, "pref %d ", r.Priority)
	}
	if r.Invert {
		b.WriteString("not ")
	}
	b.WriteString("from ")
	if r.From.IsValid() {
		b.WriteString(r.From.String())
	} else {
		b.WriteString("all")
	}
	if r.To.IsValid() {
		b.WriteString(" to " + r.To.String())
	}
	if r.HasMark {
		fmt.Fprintf(&b, " fwmark %#x", r.Mark)
		if r.Mask != 0 {
			fmt.Fprintf(&b, "/%#x", r.Mask)
		}
	}
	if r.IIF != "" {
		b.WriteString(" iif " + r.IIF)
	}
	if r.OIF != "" {
		b.WriteString(" oif " + r.OIF)
	}
	if r.Type == TypeUnicast {
		fmt.Fprintf(&b, " table %d", r.Table)
	} else {
		b.WriteString(" " + r.Type.String())
	}
	if r.IPv6 {
		b.WriteString(" (inet6)")
	}
	fmt.Fprintf(&b, " proto %d", r.Protocol)
	return b.String()
}

// Validate checks what the kernel would refuse in ways a configuration can say plainly.
func (r Rule) Validate() error {
	for _, p := range []netip.Prefix{r.From, r.To} {
		if p.IsValid() && p.Addr().Is6() != r.IPv6 {
			return errors.New("rule mixes IPv4 and IPv6")
		}
	}
	switch r.Type {
	case TypeUnicast:
		if r.Table == 0 {
			return errors.New("rule has no action (table N, blackhole, unreachable or prohibit)")
		}
	case TypeBlackhole, TypeUnreachable, TypeProhibit:
		if r.Table != 0 {
			return fmt.Errorf("a %s rule takes no table", r.Type)
		}
	default:
		return fmt.Errorf("%s is not a rule action", r.Type)
	}
	if len(r.IIF) > 15 || len(r.OIF) > 15 {
		return errors.New("interface name longer than 15 characters")
	}
	return nil
}
