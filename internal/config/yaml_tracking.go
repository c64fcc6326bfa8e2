package config

import (
	"fmt"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// The YAML form of tracking.go: top-level trackFiles and syncGroups; per instance
// trackInterfaces, trackFiles, dontTrackPrimary and notify.deleted / notify.reportDeleted.
// The rules are the keepalived.conf ones: both end in the same Draft and Globals.

type yamlTrackFileSpec struct {
	Name    string `yaml:"name"`
	File    string `yaml:"file"`
	Weight  *int   `yaml:"weight"`
	Reverse bool   `yaml:"reverse"`
	// Init is init_file: the value written when the file does not exist (or at every
	// start, with overwrite).
	Init *struct {
		Value     int  `yaml:"value"`
		Overwrite bool `yaml:"overwrite"`
	} `yaml:"init"`
}

type yamlTrackInterface struct {
	Name    string `yaml:"name"`
	Weight  int    `yaml:"weight"`
	Reverse bool   `yaml:"reverse"`
}

type yamlTrackFile struct {
	Name    string `yaml:"name"`
	Weight  *int   `yaml:"weight"`
	Reverse *bool  `yaml:"reverse"`
}

type yamlSyncGroup struct {
	Name            string               `yaml:"name"`
	Members         []string             `yaml:"members"`
	TrackInterfaces []yamlTrackInterface `yaml:"trackInterfaces"`
	TrackFiles      []yamlTrackFile      `yaml:"trackFiles"`
	TrackScripts    []yamlTrackScript    `yaml:"trackScripts"`
	Notify          *yamlNotify          `yaml:"notify"`
	// TrackingWeight is sync_group_tracking_weight: members keep their own weights.
	TrackingWeight bool `yaml:"trackingWeight"`
}

// yamlInstanceTracking are an instance's tracking fields beyond trackScripts.
type yamlInstanceTracking struct {
	TrackInterfaces  []yamlTrackInterface `yaml:"trackInterfaces"`
	TrackFiles       []yamlTrackFile      `yaml:"trackFiles"`
	DontTrackPrimary bool                 `yaml:"dontTrackPrimary"`
}

// trackFiles reads the top-level trackFiles into g.
func (ix yamlIndex) trackFiles(parts []yamlPart[yamlTrackFileSpec], g *Globals) error {
	for i, p := range parts {
		y := p.v
		if p.err != nil {
			return ix.decodeError(p.err, []any{"trackFiles", i}, fmt.Sprintf("trackFiles[%d]", i))
		}
		pos := ix.at("trackFiles", i)
		if y.Name == "" || y.File == "" {
			return errAt(pos, "trackFiles[%d]: name and file are required", i)
		}
		t := g.tables()
		if _, dup := t.files[y.Name]; dup {
			return errAt(ix.at("trackFiles", i, "name"), "track file %s is defined twice", y.Name)
		}
		f := &TrackFileSpec{Name: y.Name, Path: y.File, Weight: 1, Reverse: y.Reverse, Source: pos}
		if y.Weight != nil {
			if *y.Weight < -254 || *y.Weight > 254 {
				return errAt(ix.at("trackFiles", i, "weight"), "track file %s: weight %d is not between -254 and 254", y.Name, *y.Weight)
			}
			f.Weight = *y.Weight
		}
		if y.Init != nil {
			f.Init, f.InitValue, f.Overwrite = true, y.Init.Value, y.Init.Overwrite
		}
		t.files[y.Name] = f
	}
	return nil
}

// ifTracks and fileTracks read trackInterfaces and trackFiles entries at base.
func (ix yamlIndex) ifTracks(ys []yamlTrackInterface, base ...any) ([]ifTrackRef, error) {
	var out []ifTrackRef
	for j, y := range ys {
		pos := ix.at(append(base, "trackInterfaces", j)...)
		if y.Name == "" {
			return nil, errAt(pos, "trackInterfaces[%d]: name is required", j)
		}
		if y.Weight < -253 || y.Weight > 253 {
			return nil, errAt(pos, "trackInterfaces[%d]: weight %d is not between -253 and 253", j, y.Weight)
		}
		out = append(out, ifTrackRef{name: y.Name, weight: y.Weight, reverse: y.Reverse, pos: pos})
	}
	return out, nil
}

func (ix yamlIndex) fileTracks(ys []yamlTrackFile, base ...any) ([]fileTrackRef, error) {
	var out []fileTrackRef
	for j, y := range ys {
		pos := ix.at(append(base, "trackFiles", j)...)
		if y.Name == "" {
			return nil, errAt(pos, "trackFiles[%d]: name is required", j)
		}
		if y.Weight != nil && (*y.Weight < -254 || *y.Weight > 254) {
			return nil, errAt(pos, "trackFiles[%d]: weight %d is not between -254 and 254", j, *y.Weight)
		}
		out = append(out, fileTrackRef{name: y.Name, weight: y.Weight, reverse: y.Reverse, pos: pos})
	}
	return out, nil
}

// instanceTracking reads an instance's trackInterfaces, trackFiles and dontTrackPrimary.
func (ix yamlIndex) instanceTracking(i int, y yamlInstanceTracking, d *Draft) error {
	var err error
	if d.ifTracks, err = ix.ifTracks(y.TrackInterfaces, "instances", i); err != nil {
		return err
	}
	if d.fileTracks, err = ix.fileTracks(y.TrackFiles, "instances", i); err != nil {
		return err
	}
	d.dontTrackPrimary = y.DontTrackPrimary
	return nil
}

// syncGroups reads the top-level syncGroups into g.
func (ix yamlIndex) syncGroups(parts []yamlPart[yamlSyncGroup], g *Globals) error {
	for i, p := range parts {
		y := p.v
		if p.err != nil {
			return ix.decodeError(p.err, []any{"syncGroups", i}, fmt.Sprintf("syncGroups[%d]", i))
		}
		pos := ix.at("syncGroups", i)
		if y.Name == "" || len(y.Members) == 0 {
			return errAt(pos, "syncGroups[%d]: name and members are required", i)
		}
		t := g.tables()
		for _, o := range t.groups {
			if o.name == y.Name {
				return errAt(ix.at("syncGroups", i, "name"), "sync group %s is defined twice", y.Name)
			}
		}
		sg := &syncDraft{name: y.Name, pos: pos, members: y.Members, membersPos: ix.at("syncGroups", i, "members"), trackingWeight: y.TrackingWeight}
		var err error
		if sg.ifTracks, err = ix.ifTracks(y.TrackInterfaces, "syncGroups", i); err != nil {
			return err
		}
		if sg.fileTracks, err = ix.fileTracks(y.TrackFiles, "syncGroups", i); err != nil {
			return err
		}
		for j, tr := range y.TrackScripts {
			if tr.Name == "" {
				return errAt(ix.at("syncGroups", i, "trackScripts", j), "sync group %s: trackScripts[%d]: name is required", y.Name, j)
			}
			sg.scriptTracks = append(sg.scriptTracks, trackRef{name: tr.Name, weight: tr.Weight, reverse: tr.Reverse, pos: ix.at("syncGroups", i, "trackScripts", j)})
		}
		if y.Notify != nil {
			d := Draft{name: y.Name}
			if err := ix.notify(y.Notify, &d, "syncGroups", i); err != nil {
				return err
			}
			sg.notify = d.notify
		}
		t.groups = append(t.groups, sg)
	}
	return nil
}

// hookCommand splits a notify command of YAML.
func hookCommand(text string) ([]string, bool) {
	args, err := track.SplitCommand(text)
	return args, err == nil && len(args) > 0
}
