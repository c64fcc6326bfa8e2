package config

import (
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// Resolve's step for track_script entries, the scripts a Config runs, and the check of
// every user a script or hook names.

// tracking resolves the instance's track_script entries against the scripts: an unknown
// name is ignored with a warning, as keepalived does; an address owner cannot have a
// weighted script (keepalived drops it with an error and runs on).
func (r *resolver) tracking() error {
	r.in.Notify = r.d.notify
	for _, t := range r.d.tracks {
		sc, ok := r.g.scripts.get(t.name)
		if ok && sc.IsCheck() != t.check {
			ok = false
		}
		if !ok && t.check {
			r.warn(t.pos, "track_check %s: no vrrpd_http_check or vrrpd_tcp_check of that name; ignored", t.name)
			continue
		}
		if !ok {
			r.warn(t.pos, "track_script %s: no vrrp_script of that name; ignored", t.name)
			continue
		}
		ts := t.resolve(sc)
		if r.in.Priority == track.OwnerPriority && ts.Weight != 0 {
			r.warn(t.pos, "track_script %s: an address owner (priority 255) cannot have a weighted script; ignored, as keepalived does", t.name)
			continue
		}
		if slices.ContainsFunc(r.in.TrackScripts, func(o TrackScript) bool { return o.Script == t.name }) {
			r.warn(t.pos, "track_script %s is listed twice; the second is ignored", t.name)
			continue
		}
		r.in.TrackScripts = append(r.in.TrackScripts, ts)
	}
	return nil
}

// usedScripts returns the scripts some instance tracks, in name order: keepalived runs
// no other.
func usedScripts(g Globals, ins []Instance) []Script {
	return used(ins, func(in Instance) []string {
		names := make([]string, len(in.TrackScripts))
		for i, t := range in.TrackScripts {
			names[i] = t.Script
		}
		return names
	}, func(name string) Script { sc, _ := g.scripts.get(name); return *sc },
		func(sc Script) string { return sc.Name })
}

// used collects, once each and sorted by name, the definitions the instances refer to:
// refs lists an instance's references, get looks one up (every reference was resolved
// when the instance was), name sorts them.
func used[T any](ins []Instance, refs func(Instance) []string, get func(string) T, name func(T) string) []T {
	var out []T
	seen := map[string]bool{}
	for _, in := range ins {
		for _, r := range refs(in) {
			if !seen[r] {
				seen[r] = true
				out = append(out, get(r))
			}
		}
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	return out
}

// scriptUserErrors checks every user the scripts, the hooks and script_user name, where
// the parser did not (the YAML form): one error per unknown user, at its place.
func scriptUserErrors(g Globals, drafts []Draft) []error {
	var errs []error
	add := func(pos Position, what, user, group string) {
		if err := knownUser(what, user, group); err != nil {
			errs = append(errs, errAt(pos, "%v", err))
		}
	}
	add(g.scriptUserPos, "script_user", g.scriptSettings.User, g.scriptSettings.Group)
	if g.scripts != nil {
		names := make([]string, 0, len(g.scripts.byName))
		for name := range g.scripts.byName {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			sc := g.scripts.byName[name]
			add(sc.Source, "vrrp_script "+name+": user", sc.User, sc.Group)
		}
	}
	hooks := func(pos Position, owner string, n Notify) {
		for _, c := range n.Commands() {
			if len(c.Args) > 0 {
				add(pos, owner+": notify script "+c.Args[0]+": user", c.User, c.Group)
			}
		}
	}
	for _, d := range drafts {
		hooks(d.pos, d.name, d.notify)
	}
	if g.trk != nil {
		for _, sd := range g.trk.groups {
			hooks(sd.pos, "vrrp_sync_group "+sd.name, sd.notify)
		}
	}
	return errs
}
