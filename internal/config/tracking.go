package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// This file is keepalived's trackers beyond scripts: track_interface, track_file blocks
// (vrrp_track_file is their old name) and an instance's track_file entries,
// dont_track_primary, and vrrp_sync_group with its own trackers and notify hooks. The
// rules are keepalived 2.2.7's (vrrp_track.c, track_file.c, vrrp_sync.c and
// vrrp_complete_instance in vrrp.c); the daemon applies them (package track has the
// arithmetic).

// TrackInterface is an instance's track_interface entry: weight 0 puts the instance in
// FAULT while the interface is down; otherwise the weight counts as a script's does (a
// positive one while up, a negative one while down; reverse turns both around).
type TrackInterface struct {
	Interface string
	Weight    int
	Reverse   bool
}

// TrackFile is an instance's track_file entry: the name of a TrackFileSpec and the
// weight it applies (the entry's own, else the file's).
type TrackFile struct {
	File    string
	Weight  int
	Reverse bool
}

// TrackFileSpec is a track_file block: a file holding a number that, times Weight, is
// added to the priority of the instances tracking it (package track's FileEffect).
type TrackFileSpec struct {
	Name string
	Path string
	// Weight (-254..254, default 1) and Reverse are the defaults of the entries.
	Weight  int
	Reverse bool
	// Init is init_file: the file is created with InitValue when it does not exist, or
	// written over at start when Overwrite is set.
	Init      bool
	InitValue int
	Overwrite bool
	Source    Position
}

// SyncGroup is a vrrp_sync_group: members that change state together. Its trackers are
// already added to each member's; Notify are its hooks, called with GROUP.
type SyncGroup struct {
	Name    string
	Members []string
	Notify  Notify
	Source  Position
}

// ifTrackRef and fileTrackRef are track_interface and track_file entries as written.
type ifTrackRef struct {
	name    string
	weight  int
	reverse bool
	pos     Position
}

type fileTrackRef struct {
	name    string
	weight  *int
	reverse *bool
	pos     Position
}

// syncDraft is a vrrp_sync_group as written.
type syncDraft struct {
	name           string
	pos            Position
	members        []string
	membersPos     Position
	ifTracks       []ifTrackRef
	fileTracks     []fileTrackRef
	scriptTracks   []trackRef
	notify         Notify
	trackingWeight bool // sync_group_tracking_weight
}

// trackTables holds the track_file blocks and the sync groups (behind a pointer in
// Globals, which stay comparable).
type trackTables struct {
	files  map[string]*TrackFileSpec
	groups []*syncDraft
}

func (g *Globals) tables() *trackTables {
	if g.trk == nil {
		g.trk = &trackTables{files: map[string]*TrackFileSpec{}}
	}
	return g.trk
}

// groupOf returns the sync group that claims instance name first, or nil.
func (t *trackTables) groupOf(name string) *syncDraft {
	if t == nil {
		return nil
	}
	for _, sg := range t.groups {
		if slices.Contains(sg.members, name) {
			return sg
		}
	}
	return nil
}

// trackWeight reads "weight W [reverse|noreverse]" after a tracked name (words[0]):
// keepalived's range is -254..254, ±254 taken as ±253 for interfaces.
func trackWeight(what string, words []string, iface bool) (w *int, rev *bool, notes []string, err error) {
	if len(words) < 2 {
		return nil, nil, nil, nil
	}
	if words[1] != "weight" {
		return nil, nil, nil, fmt.Errorf("%s %s: unknown option %q", what, words[0], words[1])
	}
	if len(words) < 3 {
		return nil, nil, nil, fmt.Errorf("%s %s: weight needs a value", what, words[0])
	}
	v, perr := strconv.Atoi(words[2])
	if perr != nil || v < -254 || v > 254 {
		return nil, nil, nil, fmt.Errorf("%s %s: weight %q is not a number between -254 and 254", what, words[0], words[2])
	}
	if iface && (v == 254 || v == -254) {
		notes = append(notes, fmt.Sprintf("%s %s: weight cannot be ±254; using ±253, as keepalived does", what, words[0]))
		v = v / 254 * 253
	}
	w = &v
	if len(words) > 3 {
		r := false
		switch words[3] {
		case "reverse":
			r = true
		case "noreverse":
		default:
			return nil, nil, nil, fmt.Errorf("%s %s: unknown weight option %q", what, words[0], words[3])
		}
		rev = &r
		if len(words) > 4 {
			notes = append(notes, fmt.Sprintf("%s %s: ignoring %q", what, words[0], strings.Join(words[4:], " ")))
		}
	}
	return w, rev, notes, nil
}

// trackList reads a track_interface or track_file block into refs. keepalived ignores a
// bad entry with a message; so does vrrpd (a warning), so that files keepalived runs load.
func (p *kaParser) trackList(c node, iface bool, ifs *[]ifTrackRef, files *[]fileTrackRef) error {
	if err := p.needBlock(c); err != nil {
		return err
	}
	for _, e := range c.children {
		words := append([]string{e.key()}, e.args()...)
		w, rev, notes, err := trackWeight(c.key(), words, iface)
		for _, m := range notes {
			p.warn(e.pos, "%s", m)
		}
		if err != nil {
			p.warn(e.pos, "%v; entry ignored, as keepalived does", err)
			continue
		}
		if iface {
			r := ifTrackRef{name: e.key(), pos: e.pos}
			if w != nil {
				r.weight = *w
			}
			if rev != nil {
				r.reverse = *rev
			}
			*ifs = append(*ifs, r)
		} else {
			*files = append(*files, fileTrackRef{name: e.key(), weight: w, reverse: rev, pos: e.pos})
		}
	}
	return nil
}

// instanceTracking applies an instance's track_interface, track_file, dont_track_primary
// and notify_deleted; false for other keywords.
func (p *kaParser) instanceTracking(c node, d *Draft) (bool, error) {
	switch c.key() {
	case "track_interface":
		return true, p.trackList(c, true, &d.ifTracks, nil)
	case "track_file":
		return true, p.trackList(c, false, nil, &d.fileTracks)
	case "dont_track_primary":
		st := &statement{key: c.key(), args: c.args(), pos: c.pos}
		st.noValue()
		p.notes(st)
		d.dontTrackPrimary = true
		return true, nil
	case "notify_deleted":
		// keepalived: with a script, it runs on removal; with or without, the hooks and
		// the FIFO hear DELETED instead of the FAULT they heard before 2.1.
		if d.notify.NotifyDeleted {
			p.warn(c.pos, "notify_deleted is already set; ignored, as keepalived does")
			return true, nil
		}
		d.notify.NotifyDeleted = true
		if len(c.args()) > 0 {
			st := &statement{key: c.key(), args: c.args(), pos: c.pos}
			cmd, err := hook(st)
			p.notes(st)
			if err != nil {
				return true, errAt(c.pos, "%v", err)
			}
			d.notify.Deleted = cmd
		}
		return true, nil
	}
	return false, nil
}

// trackRoot reads the top-level track_file / vrrp_track_file and vrrp_sync_group
// blocks; false for other keywords.
func (p *kaParser) trackRoot(n node) (bool, error) {
	switch n.key() {
	case "track_file", "vrrp_track_file":
		return true, p.trackFileBlock(n)
	case "vrrp_sync_group":
		return true, p.syncGroup(n)
	}
	return false, nil
}

func (p *kaParser) trackFileBlock(n node) error {
	if len(n.args()) == 0 || !n.hasBlock {
		return errAt(n.pos, "%s needs a name and a { ... } block", n.key())
	}
	name := n.args()[0]
	if n.key() == "vrrp_track_file" {
		p.warn(n.pos, `"vrrp_track_file" is deprecated, please use "track_file"`)
	}
	t := p.g.tables()
	if first, dup := t.files[name]; dup {
		p.warn(n.pos, "track_file %s is already defined at %s; this block is ignored", name, first.Source)
		return nil
	}
	f := &TrackFileSpec{Name: name, Weight: 1, Source: n.pos}
	for _, c := range n.children {
		switch c.key() {
		case "file":
			if len(c.args()) == 0 {
				return errAt(c.pos, "track_file %s: file needs a path", name)
			}
			if f.Path != "" {
				p.warn(c.pos, "track_file %s: file already set; ignoring %s", name, c.args()[0])
				continue
			}
			f.Path = c.args()[0]
		case "weight":
			w, rev, notes, err := trackWeight("track_file", append([]string{name, "weight"}, c.args()...), false)
			for _, m := range notes {
				p.warn(c.pos, "%s", m)
			}
			if err != nil {
				p.warn(c.pos, "%v; using 1, as keepalived does", err)
				continue
			}
			if w != nil {
				f.Weight = *w
			}
			if rev != nil {
				f.Reverse = *rev
			}
		case "init_file":
			f.Init, f.InitValue = true, 0
			for _, a := range c.args() {
				if a == "overwrite" {
					f.Overwrite = true
					continue
				}
				v, err := strconv.Atoi(a)
				if err != nil {
					p.warn(c.pos, "track_file %s: init_file value %q is not a number; using 0", name, a)
					continue
				}
				if v < -254 || v > 254 {
					p.warn(c.pos, "track_file %s: init_file value %d is outside the sensible range -254..254", name, v)
				}
				f.InitValue = v
			}
		default:
			p.ignore(c, " in track_file "+name)
		}
	}
	if f.Path == "" {
		p.warn(n.pos, "track_file %s has no file; ignored, as keepalived does", name)
		return nil
	}
	t.files[name] = f
	return nil
}

func (p *kaParser) syncGroup(n node) error {
	if len(n.args()) != 1 || !n.hasBlock {
		p.warn(n.pos, "vrrp_sync_group needs one name and a { ... } block; skipped, as keepalived does")
		return nil
	}
	name := n.args()[0]
	t := p.g.tables()
	for _, o := range t.groups {
		if o.name == name {
			p.warn(n.pos, "vrrp_sync_group %s is already defined at %s; this block is ignored", name, o.pos)
			return nil
		}
	}
	sg := &syncDraft{name: name, pos: n.pos}
	where := " in vrrp_sync_group " + name
	for _, c := range n.children {
		var err error
		switch c.key() {
		case "group":
			if sg.members != nil {
				p.warn(c.pos, "sync group %s: group already given; ignored", name)
				continue
			}
			if err = p.needBlock(c); err != nil {
				return err
			}
			sg.members, sg.membersPos = []string{}, c.pos
			for _, e := range c.children {
				sg.members = append(sg.members, append([]string{e.key()}, e.args()...)...)
			}
		case "track_interface":
			err = p.trackList(c, true, &sg.ifTracks, nil)
		case "track_file":
			err = p.trackList(c, false, nil, &sg.fileTracks)
		case "track_script":
			if err = p.needBlock(c); err != nil {
				return err
			}
			for _, e := range c.children {
				tr, notes, terr := parseTrackRef("track_script", append([]string{e.key()}, e.args()...), e.pos)
				for _, m := range notes {
					p.warn(e.pos, "%s", m)
				}
				if terr != nil {
					return errAt(e.pos, "%v", terr)
				}
				sg.scriptTracks = append(sg.scriptTracks, tr)
			}
		case "sync_group_tracking_weight", "global_tracking":
			if c.key() == "global_tracking" {
				p.warn(c.pos, "sync group %s: global_tracking is deprecated; taken as sync_group_tracking_weight, as keepalived does", name)
			}
			sg.trackingWeight = true
		default:
			st := &statement{key: c.key(), args: c.args(), pos: c.pos}
			ok, nerr := sg.notify.set(st)
			p.notes(st)
			switch {
			case nerr != nil:
				return errAt(c.pos, "%v", nerr)
			case !ok:
				p.ignore(c, where)
			}
		}
		if err != nil {
			return err
		}
	}
	if len(sg.members) == 0 {
		p.warn(n.pos, "sync group %s has no virtual router(s); removed, as keepalived does", name)
		return nil
	}
	t.groups = append(t.groups, sg)
	return nil
}

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

func (t *trackTables) file(name string) (*TrackFileSpec, bool) {
	if t == nil {
		return nil, false
	}
	f, ok := t.files[name]
	return f, ok
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
