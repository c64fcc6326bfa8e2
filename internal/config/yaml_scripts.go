package config

import (
	"fmt"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// minScriptDuration is the shortest script interval or timeout YAML accepts.
const minScriptDuration = 100 * time.Millisecond

// The YAML form of scripts.go: top-level scripts, scriptUser, scriptGroup and
// enableScriptSecurity; per instance trackScripts and notify. Commands are strings split
// as keepalived splits a script line.

type yamlScript struct {
	Name         string `yaml:"name"`
	Command      string `yaml:"command"`
	yamlSchedule `yaml:",inline"`
	User         string `yaml:"user"`
	Group        string `yaml:"group"`
}

// yamlSchedule are the keys a script and a native check (yaml_checks.go) share.
type yamlSchedule struct {
	Interval *yamlDuration `yaml:"interval"`
	Timeout  *yamlDuration `yaml:"timeout"`
	Weight   *int          `yaml:"weight"`
	Reverse  bool          `yaml:"reverse"`
	Rise     *int          `yaml:"rise"`
	Fall     *int          `yaml:"fall"`
	InitFail bool          `yaml:"initFail"`
}

type yamlTrackScript struct {
	Name    string `yaml:"name"`
	Weight  *int   `yaml:"weight"`
	Reverse bool   `yaml:"reverse"`
}

type yamlNotify struct {
	Master string `yaml:"master"`
	Backup string `yaml:"backup"`
	Fault  string `yaml:"fault"`
	Stop   string `yaml:"stop"`
	// All is keepalived's notify: every transition, with the four arguments.
	All string `yaml:"all"`
	// Deleted is notify_deleted's script; ReportDeleted (implied by Deleted) makes the
	// hooks and the FIFO hear DELETED when a reload removes the instance.
	Deleted       string `yaml:"deleted"`
	ReportDeleted bool   `yaml:"reportDeleted"`
	User          string `yaml:"user"`
	Group         string `yaml:"group"`
}

// scripts reads the top-level scripts into g.
func (ix yamlIndex) scripts(parts []yamlPart[yamlScript], f *yamlFile, g *Globals) error {
	g.scriptSettings = ScriptSettings{User: f.ScriptUser, Group: f.ScriptGroup, Security: f.EnableScriptSecurity, NotifyFIFO: f.NotifyFIFO}
	g.scriptUserPos = ix.at("scriptUser")
	for i, p := range parts {
		y := p.v
		at := func(k string) Position { return ix.at("scripts", i, k) }
		sc, what, err := ix.scriptPart("scripts", i, p.err, y.Name, "script", " is defined twice", g)
		if err != nil {
			return err
		}
		args, err := track.SplitCommand(y.Command)
		if err != nil || len(args) == 0 {
			return errAt(at("command"), "%s: command %q: want a program and its arguments", what, y.Command)
		}
		sc.Command = args
		sc.User, sc.Group = y.User, y.Group
		if err := ix.schedule(y.yamlSchedule, at, what, sc); err != nil {
			return err
		}
		g.addScript(sc)
	}
	return nil
}

// scriptPart starts the script or check of part i of list key for g: a decoding error,
// no name, or a name already taken (dup words it after what) stops it.
func (ix yamlIndex) scriptPart(key string, i int, err error, name, kind, dup string, g *Globals) (*Script, string, error) {
	if err != nil {
		return nil, "", ix.decodeError(err, []any{key, i}, fmt.Sprintf("%s[%d]", key, i))
	}
	if name == "" {
		return nil, "", errAt(ix.at(key, i), "%s[%d]: name is required", key, i)
	}
	what := kind + " " + name
	if _, taken := g.scripts.get(name); taken {
		return nil, what, errAt(ix.at(key, i, "name"), "%s%s", what, dup)
	}
	return newScript(name, ix.at(key, i)), what, nil
}

// instanceScripts reads an instance's trackScripts, trackChecks and notify into d.
func (ix yamlIndex) instanceScripts(i int, tracks, checks []yamlTrackScript, n *yamlNotify, d *Draft) error {
	for _, list := range []struct {
		key   string
		refs  []yamlTrackScript
		check bool
	}{{"trackScripts", tracks, false}, {"trackChecks", checks, true}} {
		for j, t := range list.refs {
			pos := ix.at("instances", i, list.key, j)
			if t.Name == "" {
				return errAt(pos, "%s: %s[%d]: name is required", d.name, list.key, j)
			}
			if t.Weight != nil && (*t.Weight < -253 || *t.Weight > 253) {
				return errAt(ix.at("instances", i, list.key, j, "weight"), "%s: %s[%d]: weight %d is not between -253 and 253", d.name, list.key, j, *t.Weight)
			}
			d.tracks = append(d.tracks, trackRef{name: t.Name, weight: t.Weight, reverse: t.Reverse, check: list.check, pos: pos})
		}
	}
	if n == nil {
		return nil
	}
	return ix.notify(n, d, "instances", i)
}

// notify reads a notify mapping at base into d.notify.
func (ix yamlIndex) notify(n *yamlNotify, d *Draft, base ...any) error {
	at := func(k string) Position { return ix.at(append(append([]any{}, base...), "notify", k)...) }
	d.notify.NotifyDeleted = n.ReportDeleted || n.Deleted != ""
	for _, h := range []struct {
		key, text string
		dst       *Command
	}{{"master", n.Master, &d.notify.Master}, {"backup", n.Backup, &d.notify.Backup},
		{"fault", n.Fault, &d.notify.Fault}, {"stop", n.Stop, &d.notify.Stop}, {"all", n.All, &d.notify.Generic},
		{"deleted", n.Deleted, &d.notify.Deleted}} {
		if h.text == "" {
			continue
		}
		args, ok := hookCommand(h.text)
		if !ok {
			return errAt(at(h.key), "%s: notify.%s %q: want a program and its arguments", d.name, h.key, h.text)
		}
		*h.dst = Command{Args: args, User: n.User, Group: n.Group}
	}
	return nil
}

// schedule applies the keys scripts and checks share to sc.
func (ix yamlIndex) schedule(y yamlSchedule, at func(string) Position, what string, sc *Script) error {
	for _, d := range []struct {
		key string
		v   *yamlDuration
		dst *int64
	}{{"interval", y.Interval, (*int64)(&sc.Interval)}, {"timeout", y.Timeout, (*int64)(&sc.Timeout)}} {
		if d.v == nil {
			continue
		}
		v, err := d.v.value()
		// keepalived.conf takes whole seconds; YAML may go below, but not so far that a
		// script is started over and over without a pause.
		if err != nil || v < minScriptDuration || v > maxScriptSeconds*time.Second {
			return errAt(at(d.key), "%s: %s must be between %v and %ds", what, d.key, minScriptDuration, maxScriptSeconds)
		}
		*d.dst = int64(v)
	}
	if y.Weight != nil {
		if *y.Weight < -253 || *y.Weight > 253 {
			return errAt(at("weight"), "%s: weight %d is not between -253 and 253", what, *y.Weight)
		}
		sc.Weight = *y.Weight
	}
	sc.Reverse, sc.InitFail = y.Reverse, y.InitFail
	for _, c := range []struct {
		key string
		v   *int
		dst *int
	}{{"rise", y.Rise, &sc.Rise}, {"fall", y.Fall, &sc.Fall}} {
		if c.v == nil {
			continue
		}
		if *c.v < 1 {
			return errAt(at(c.key), "%s: %s must be at least 1", what, c.key)
		}
		*c.dst = *c.v
	}
	return nil
}
