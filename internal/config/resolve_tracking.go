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
		in.TrackFiles = append(in.TrackFiles, t.resolve(spec))
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
	if g.trk == nil {
		return nil, nil
	}
	sr := &syncResolver{g: g, ins: ins, index: map[string]int{}}
	for i, in := range ins {
		sr.index[in.Name] = i
	}
	var out []SyncGroup
	for _, sd := range g.trk.groups {
		sg, owner, ok := sr.members(sd)
		if !ok {
			continue
		}
		for _, m := range sg.Members {
			in := &ins[sr.index[m]]
			sr.addInterfaces(sd, in, owner)
			sr.addFiles(sd, in, owner)
			sr.addScripts(sd, in, owner)
		}
		out = append(out, sg)
	}
	return out, sr.ws
}

// syncResolver carries syncGroups: the instances by name, and the warnings so far.
type syncResolver struct {
	g     Globals
	ins   []Instance
	index map[string]int
	ws    []Warning
}

func (sr *syncResolver) warn(pos Position, format string, a ...any) {
	sr.ws = append(sr.ws, Warning{Pos: pos, Message: fmt.Sprintf(format, a...)})
}

// members claims the group's members, each for one group only; owner says a member is
// the address owner. false: no member is left, and the group is removed.
func (sr *syncResolver) members(sd *syncDraft) (sg SyncGroup, owner, ok bool) {
	sg = SyncGroup{Name: sd.name, Notify: sd.notify, Source: sd.pos}
	nonOwner := false
	for _, m := range sd.members {
		i, ok := sr.index[m]
		switch {
		case !ok:
			sr.warn(sd.membersPos, "virtual router %s in sync group %s doesn't exist; ignored", m, sd.name)
			continue
		case sr.ins[i].SyncGroup != "":
			sr.warn(sd.membersPos, "virtual router %s cannot be in more than one sync group; ignoring it in %s", m, sd.name)
			continue
		}
		sr.ins[i].SyncGroup = sd.name
		sg.Members = append(sg.Members, m)
		if sr.ins[i].Priority == track.OwnerPriority {
			owner = true
		} else {
			nonOwner = true
		}
	}
	switch len(sg.Members) {
	case 0:
		sr.warn(sd.pos, "sync group %s: no matching virtual router found; removed", sd.name)
		return sg, false, false
	case 1:
		sr.warn(sd.pos, "sync group %s has only 1 virtual router(s) - this probably isn't what you want", sd.name)
	}
	if owner && nonOwner {
		sr.warn(sd.pos, "sync group %s has some member(s) as address owner and some not as address owner. This won't work.", sd.name)
	}
	return sg, owner, true
}

// addInterfaces adds the group's track_interface entries to member in.
func (sr *syncResolver) addInterfaces(sd *syncDraft, in *Instance, owner bool) {
	for _, t := range sd.ifTracks {
		w := t.weight
		if owner && w != 0 {
			sr.warn(t.pos, "(%s) cannot have weighted track interface %s with member having priority 255 - clearing weight", sd.name, t.name)
			w = 0
		}
		if j := slices.IndexFunc(in.TrackInterfaces, func(o TrackInterface) bool { return o.Interface == t.name }); j >= 0 {
			sr.warn(t.pos, "(%s) track_interface %s is configured on VRRP instance and sync group. Remove vrrp instance or sync group config", in.Name, t.name)
			if in.TrackInterfaces[j].Weight != 0 {
				in.TrackInterfaces[j].Weight, in.TrackInterfaces[j].Reverse = w, t.reverse
			}
			continue
		}
		in.TrackInterfaces = append(in.TrackInterfaces, TrackInterface{Interface: t.name, Weight: w, Reverse: t.reverse})
	}
}

// addFiles adds the group's track_file entries to member in.
func (sr *syncResolver) addFiles(sd *syncDraft, in *Instance, owner bool) {
	for _, t := range sd.fileTracks {
		spec, ok := sr.g.trk.file(t.name)
		if !ok {
			sr.warn(t.pos, "(%s) track file %s not found; ignored", sd.name, t.name)
			continue
		}
		tf := t.resolve(spec)
		sr.ownerUnweighted(owner, &tf.Weight, t.pos, "(%s) cannot have weighted track file %s with member having priority 255 - setting weight 0", sd.name, t.name)
		if j := slices.IndexFunc(in.TrackFiles, func(o TrackFile) bool { return o.File == t.name }); j >= 0 {
			if in.TrackFiles[j].Weight != 0 {
				in.TrackFiles[j].Weight, in.TrackFiles[j].Reverse = tf.Weight, tf.Reverse
			}
			continue
		}
		in.TrackFiles = append(in.TrackFiles, tf)
	}
}

// ownerUnweighted clears *weight, with keepalived's warning, for a member whose priority is
// 255: an address owner's priority cannot move, so a weight on it would mean nothing.
func (sr *syncResolver) ownerUnweighted(owner bool, weight *int, pos Position, format string, a ...any) {
	if owner && *weight != 0 {
		sr.warn(pos, format, a...)
		*weight = 0
	}
}

// addScripts adds the group's track_script entries to member in.
func (sr *syncResolver) addScripts(sd *syncDraft, in *Instance, owner bool) {
	for _, t := range sd.scriptTracks {
		sc, ok := sr.g.scripts.get(t.name)
		if !ok {
			sr.warn(t.pos, "(%s) track_script %s: no vrrp_script of that name; ignored", sd.name, t.name)
			continue
		}
		ts := t.resolve(sc)
		sr.ownerUnweighted(owner, &ts.Weight, t.pos, "(%s) cannot have weighted track script %s with member having priority 255 - clearing weight", sd.name, t.name)
		if slices.ContainsFunc(in.TrackScripts, func(o TrackScript) bool { return o.Script == t.name }) {
			continue
		}
		in.TrackScripts = append(in.TrackScripts, ts)
	}
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
