package config

import (
	"fmt"
	"slices"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// Resolve's step for track_interface and track_file entries, and the sync groups made out
// of the resolved instances, with keepalived 2.2.7's rules (vrrp_track.c, track_file.c,
// vrrp_sync.c and vrrp_complete_instance in vrrp.c); the daemon applies them (package
// track has the arithmetic).

// moreTracking resolves the instance's track_interface and track_file entries, and
// applies keepalived's rules for an address owner and for members of a sync group
// without sync_group_tracking_weight (vrrp_complete_instance): weighted interfaces lose
// their weight in a sync group and are not tracked by an owner; weighted scripts are
// dropped; a file with the default weight (1) becomes weight 0 and any other weight is
// dropped.
func (r *resolver) moreTracking() error {
	d, in := r.d, &r.in
	in.DontTrackPrimary = d.dontTrackPrimary
	for _, t := range d.ifTracks {
		if slices.ContainsFunc(in.TrackInterfaces, func(o TrackInterface) bool { return o.Interface == t.name }) {
			r.warn(t.pos, "duplicate track_interface %s; ignored", t.name)
			continue
		}
		in.TrackInterfaces = append(in.TrackInterfaces, TrackInterface{Interface: t.name, Weight: t.weight, Reverse: t.reverse})
	}
	for _, t := range d.fileTracks {
		spec, ok := r.g.trk.file(t.name)
		if !ok {
			r.warn(t.pos, "track file %s not found; ignored", t.name)
			continue
		}
		if slices.ContainsFunc(in.TrackFiles, func(o TrackFile) bool { return o.File == t.name }) {
			r.warn(t.pos, "duplicate track_file %s; ignored", t.name)
			continue
		}
		tf := TrackFile{File: t.name, Weight: spec.Weight, Reverse: spec.Reverse}
		if t.weight != nil {
			tf.Weight = *t.weight
		}
		if t.reverse != nil {
			tf.Reverse = *t.reverse
		}
		in.TrackFiles = append(in.TrackFiles, tf)
	}
	sg := r.g.trk.groupOf(d.name)
	inSync := sg != nil && !sg.trackingWeight
	owner := in.Priority == track.OwnerPriority
	if !inSync && !owner {
		return nil
	}
	why := "address owner"
	if inSync {
		why = "SYNC group"
	}
	in.TrackInterfaces = slices.DeleteFunc(in.TrackInterfaces, func(t TrackInterface) bool {
		if t.Weight == 0 {
			return false
		}
		r.warn(r.d.pos, "ignoring weight of tracked interface %s due to %s, as keepalived does", t.Interface, why)
		return !inSync
	})
	for i := range in.TrackInterfaces {
		in.TrackInterfaces[i].Weight = 0
	}
	in.TrackScripts = slices.DeleteFunc(in.TrackScripts, func(t TrackScript) bool {
		if t.Weight != 0 {
			r.warn(r.d.pos, "ignoring tracked script %s with weights due to %s, as keepalived does", t.Script, why)
			return true
		}
		return false
	})
	in.TrackFiles = slices.DeleteFunc(in.TrackFiles, func(t TrackFile) bool {
		if t.Weight == 1 {
			r.warn(r.d.pos, "ignoring weight from tracked file %s due to %s; specify weight 0", t.File, why)
			return false
		}
		if t.Weight != 0 {
			r.warn(r.d.pos, "ignoring tracked file %s with weight %d due to %s, as keepalived does", t.File, t.Weight, why)
			return true
		}
		return false
	})
	for i := range in.TrackFiles {
		in.TrackFiles[i].Weight = 0
	}
	return nil
}

// syncGroups makes the sync groups of g out of the resolved instances, as
// vrrp_sync_set_group and sync_group_tracking_init do: an unknown member or one already
// in another group is left out with a warning, a group left without members is removed,
// one of a single member is kept with keepalived's warning. The group's trackers are added
// to each member's (weights cleared when a member is the address owner).
func syncGroups(g Globals, ins []Instance) ([]SyncGroup, []Warning) {
	var ws []Warning
	warn := func(pos Position, format string, a ...any) {
		ws = append(ws, Warning{Pos: pos, Message: fmt.Sprintf(format, a...)})
	}
	if g.trk == nil {
		return nil, nil
	}
	index := map[string]int{}
	for i, in := range ins {
		index[in.Name] = i
	}
	var out []SyncGroup
	for _, sd := range g.trk.groups {
		sg := SyncGroup{Name: sd.name, Notify: sd.notify, Source: sd.pos}
		owner, nonOwner := false, false
		for _, m := range sd.members {
			i, ok := index[m]
			switch {
			case !ok:
				warn(sd.membersPos, "virtual router %s in sync group %s doesn't exist; ignored", m, sd.name)
				continue
			case ins[i].SyncGroup != "":
				warn(sd.membersPos, "virtual router %s cannot be in more than one sync group; ignoring it in %s", m, sd.name)
				continue
			}
			ins[i].SyncGroup = sd.name
			sg.Members = append(sg.Members, m)
			if ins[i].Priority == track.OwnerPriority {
				owner = true
			} else {
				nonOwner = true
			}
		}
		switch len(sg.Members) {
		case 0:
			warn(sd.pos, "sync group %s: no matching virtual router found; removed", sd.name)
			continue
		case 1:
			warn(sd.pos, "sync group %s has only 1 virtual router(s) - this probably isn't what you want", sd.name)
		}
		if owner && nonOwner {
			warn(sd.pos, "sync group %s has some member(s) as address owner and some not as address owner. This won't work.", sd.name)
		}
		for _, m := range sg.Members {
			in := &ins[index[m]]
			for _, t := range sd.ifTracks {
				w := t.weight
				if owner && w != 0 {
					warn(t.pos, "(%s) cannot have weighted track interface %s with member having priority 255 - clearing weight", sd.name, t.name)
					w = 0
				}
				if j := slices.IndexFunc(in.TrackInterfaces, func(o TrackInterface) bool { return o.Interface == t.name }); j >= 0 {
					warn(t.pos, "(%s) track_interface %s is configured on VRRP instance and sync group. Remove vrrp instance or sync group config", in.Name, t.name)
					if in.TrackInterfaces[j].Weight != 0 {
						in.TrackInterfaces[j].Weight, in.TrackInterfaces[j].Reverse = w, t.reverse
					}
					continue
				}
				in.TrackInterfaces = append(in.TrackInterfaces, TrackInterface{Interface: t.name, Weight: w, Reverse: t.reverse})
			}
			for _, t := range sd.fileTracks {
				spec, ok := g.trk.file(t.name)
				if !ok {
					warn(t.pos, "(%s) track file %s not found; ignored", sd.name, t.name)
					continue
				}
				tf := TrackFile{File: t.name, Weight: spec.Weight, Reverse: spec.Reverse}
				if t.weight != nil {
					tf.Weight = *t.weight
				}
				if t.reverse != nil {
					tf.Reverse = *t.reverse
				}
				if owner && tf.Weight != 0 {
					warn(t.pos, "(%s) cannot have weighted track file %s with member having priority 255 - setting weight 0", sd.name, t.name)
					tf.Weight = 0
				}
				if j := slices.IndexFunc(in.TrackFiles, func(o TrackFile) bool { return o.File == t.name }); j >= 0 {
					if in.TrackFiles[j].Weight != 0 {
						in.TrackFiles[j].Weight, in.TrackFiles[j].Reverse = tf.Weight, tf.Reverse
					}
					continue
				}
				in.TrackFiles = append(in.TrackFiles, tf)
			}
			for _, t := range sd.scriptTracks {
				sc, ok := g.scripts.get(t.name)
				if !ok {
					warn(t.pos, "(%s) track_script %s: no vrrp_script of that name; ignored", sd.name, t.name)
					continue
				}
				ts := TrackScript{Script: t.name, Weight: sc.Weight, Reverse: sc.Reverse}
				if t.weight != nil {
					ts.Weight, ts.Reverse = *t.weight, t.reverse
				} else if t.reverse {
					ts.Reverse = true
				}
				if owner && ts.Weight != 0 {
					warn(t.pos, "(%s) cannot have weighted track script %s with member having priority 255 - clearing weight", sd.name, t.name)
					ts.Weight = 0
				}
				if slices.ContainsFunc(in.TrackScripts, func(o TrackScript) bool { return o.Script == t.name }) {
					continue
				}
				in.TrackScripts = append(in.TrackScripts, ts)
			}
		}
		out = append(out, sg)
	}
	return out, ws
}

// usedTrackFiles returns the track files some instance tracks, in name order: keepalived
// forgets the others.
func usedTrackFiles(g Globals, ins []Instance) []TrackFileSpec {
	return used(ins, func(in Instance) []string {
		names := make([]string, len(in.TrackFiles))
		for i, t := range in.TrackFiles {
			names[i] = t.File
		}
		return names
	}, func(name string) TrackFileSpec { f, _ := g.trk.file(name); return *f },
		func(f TrackFileSpec) string { return f.Name })
}
