package config

import (
	"slices"
)

// Resolve's step for routes, rules and track_src_ip, and the host settings of a Config.

// routing resolves the instance's routes, rules and track_src_ip.
func (r *resolver) routing() error {
	d, in := r.d, &r.in
	in.Routes, in.Rules = slices.Clone(d.routing.routes), slices.Clone(d.routing.rules)
	if d.routing.trackSrcIP {
		// keepalived clears it when the source is not configured: it then follows the
		// interface's primary address anyway.
		if !in.UnicastSrc.IsValid() {
			r.warn(r.or(d.routing.trackPos), "track_src_ip without unicast_src_ip or mcast_src_ip has no effect (the source follows the interface's address anyway), as in keepalived")
		} else {
			in.TrackSrcIP = true
		}
	}
	return nil
}

// applyHost copies the host settings of g into cfg.
func applyHost(cfg *Config, g Globals) {
	if g.host != nil {
		cfg.NetNamespace, cfg.Static = g.host.netns, g.host.static
	}
}
