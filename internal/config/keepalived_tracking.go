package config

import (
	"fmt"
	"strconv"
	"strings"
)

// keepalived.conf's trackers beyond scripts: track_interface, track_file blocks
// (vrrp_track_file is their old name) and an instance's track_file entries,
// dont_track_primary, and vrrp_sync_group with its own trackers and notify hooks.

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
		st := newStatement(c.key(), c.args(), c.pos)
		st.NoValue()
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
			st := newStatement(c.key(), c.args(), c.pos)
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
			st := newStatement(c.key(), c.args(), c.pos)
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
