package config

import (
	"slices"
)

// Trackers as written (track_interface, track_file, vrrp_sync_group), before Resolve
// looks them up and applies keepalived's rules (resolve_tracking.go).

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

func (t *trackTables) file(name string) (*TrackFileSpec, bool) {
	if t == nil {
		return nil, false
	}
	f, ok := t.files[name]
	return f, ok
}

// resolve is the entry's tracking of file spec: the entry's weight and reverse where it
// gives them, else the file's.
func (t fileTrackRef) resolve(spec *TrackFileSpec) TrackFile {
	tf := TrackFile{File: t.name, Weight: spec.Weight, Reverse: spec.Reverse}
	if t.weight != nil {
		tf.Weight = *t.weight
	}
	if t.reverse != nil {
		tf.Reverse = *t.reverse
	}
	return tf
}
