package config

import (
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/route"
)

// Routing keywords as written: an instance's virtual_routes, virtual_rules and
// track_src_ip, and the host's net_namespace and static blocks.

// hostSettings are the settings of the whole host rather than of instances: what
// global_defs's net_namespace and the static blocks set. Globals holds them behind a
// pointer so that Globals stay comparable.
type hostSettings struct {
	netns  string
	static Static
}

func (g *Globals) hostSettings() *hostSettings {
	if g.host == nil {
		g.host = &hostSettings{}
	}
	return g.host
}

// routeDraft is an instance's routing keywords as written.
type routeDraft struct {
	routes     []route.Route
	rules      []route.Rule
	trackSrcIP bool
	trackPos   Position
}

func (r routeDraft) clone() routeDraft {
	r.routes, r.rules = slices.Clone(r.routes), slices.Clone(r.rules)
	return r
}

// validNetns reports whether name can be a file in /run/netns.
func validNetns(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00") && len(name) <= 255
}
