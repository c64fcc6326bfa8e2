package config

import (
	"slices"

	"github.com/vrrp-operator/vrrp-operator/internal/route"
)

// The model of the host's static addresses, routes and rules.

// Static are the host's own entries (keepalived's static_ipaddress, static_routes and
// static_rules): added when vrrpd starts, whatever the instances' states, and removed
// when it stops, as keepalived does.
type Static struct {
	Addresses []VIP
	Routes    []route.Route
	Rules     []route.Rule
}

// Empty reports whether s has no entries.
func (s Static) Empty() bool { return len(s.Addresses)+len(s.Routes)+len(s.Rules) == 0 }

// Equal reports whether a and b hold the same entries in the same order.
func (a Static) Equal(b Static) bool {
	return slices.Equal(a.Addresses, b.Addresses) && slices.Equal(a.Routes, b.Routes) && slices.Equal(a.Rules, b.Rules)
}
