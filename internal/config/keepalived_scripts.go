package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// keepalived.conf's scripts: vrrp_script blocks, an instance's track_script and notify
// hooks, and the global script_user and enable_script_security.

// splitScript reads a script value as keepalived does: the first word (one quoted
// string, usually) split into the command and its arguments; later words are the
// user and group for hooks, ignored with a note for vrrp_script.
func splitScript(s *statement) ([]string, error) {
	if len(s.Args) == 0 || s.Args[0] == "" {
		return nil, fmt.Errorf("%s needs a script", s.Key)
	}
	args, err := track.SplitCommand(s.Args[0])
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", s.Key, s.Args[0], err)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("%s needs a script", s.Key)
	}
	return args, nil
}

// scriptSeconds reads interval or timeout: whole seconds, 0 taken as 1 with a note.
func scriptSeconds(s *statement) (time.Duration, error) {
	v, err := s.Uint(0, maxScriptSeconds)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		s.Note("%s must be greater than 0; using 1", s.Key)
		v = 1
	}
	return time.Duration(v) * time.Second, nil
}

// weight reads "weight W [reverse]".
func weight(s *statement) (int, bool, error) {
	if len(s.Args) == 0 {
		return 0, false, fmt.Errorf("weight needs a value")
	}
	w, err := strconv.Atoi(s.Args[0])
	if err != nil || w < -253 || w > 253 {
		return 0, false, fmt.Errorf("weight %q is not a number between -253 and 253", s.Args[0])
	}
	reverse := false
	for _, a := range s.Args[1:] {
		if a == "reverse" {
			reverse = true
			continue
		}
		s.Note("unknown weight option %q; ignored", a)
	}
	return w, reverse, nil
}

// userGroup reads "user USER [GROUP]"; both must exist (knownUser).
func userGroup(s *statement) (string, string, error) {
	if len(s.Args) == 0 {
		return "", "", fmt.Errorf("%s needs a user name", s.Key)
	}
	g := ""
	if len(s.Args) > 1 {
		g = s.Args[1]
	}
	if len(s.Args) > 2 {
		s.Note("%s takes a user and a group; ignoring %q", s.Key, strings.Join(s.Args[2:], " "))
	}
	if err := knownUser(s.Key, s.Args[0], g); err != nil {
		return "", "", err
	}
	return s.Args[0], g, nil
}

// set applies one keyword of a vrrp_script block.
func (sc *Script) set(s *statement) error {
	var err error
	switch s.Key {
	case "script":
		sc.Command, err = splitScript(s)
		if len(s.Args) > 1 {
			s.Note("script: ignoring %q after the command (quote the whole command line)", strings.Join(s.Args[1:], " "))
		}
	case "interval":
		sc.Interval, err = scriptSeconds(s)
	case "timeout":
		sc.Timeout, err = scriptSeconds(s)
	case "weight":
		sc.Weight, sc.Reverse, err = weight(s)
	case "rise", "fall":
		var v uint64
		if v, err = s.Uint(1, 1<<31-1); err == nil {
			if s.Key == "rise" {
				sc.Rise = int(v)
			} else {
				sc.Fall = int(v)
			}
		}
	case "init_fail":
		s.NoValue()
		sc.InitFail = true
	case "user":
		sc.User, sc.Group, err = userGroup(s)
	default:
		return ErrUnknownKeyword
	}
	return err
}

// hook reads a notify_* value: the command, then an optional user and group.
func hook(s *statement) (Command, error) {
	args, err := splitScript(s)
	if err != nil {
		return Command{}, err
	}
	c := Command{Args: args}
	if len(s.Args) > 1 {
		c.User = s.Args[1]
	}
	if len(s.Args) > 2 {
		c.Group = s.Args[2]
	}
	if err := knownUser(s.Key+" "+args[0]+": user", c.User, c.Group); err != nil {
		return Command{}, err
	}
	if len(s.Args) > 3 {
		s.Note("%s: ignoring %q after the user and group", s.Key, strings.Join(s.Args[3:], " "))
	}
	return c, nil
}

// setNotify applies one notify keyword; false when key is none.
func (n *Notify) set(s *statement) (bool, error) {
	var dst *Command
	switch s.Key {
	case "notify_master":
		dst = &n.Master
	case "notify_backup":
		dst = &n.Backup
	case "notify_fault":
		dst = &n.Fault
	case "notify_stop":
		dst = &n.Stop
	case "notify":
		dst = &n.Generic
	default:
		return false, nil
	}
	c, err := hook(s)
	if err == nil {
		*dst = c
	}
	return true, err
}

// parseTrackRef reads one line of a track_script (or track_check, the block) block:
// NAME [weight W] [reverse].
func parseTrackRef(block string, words []string, pos Position) (trackRef, []string, error) {
	t := trackRef{name: words[0], pos: pos}
	var notes []string
	for i := 1; i < len(words); i++ {
		switch words[i] {
		case "weight":
			if i+1 >= len(words) {
				return t, notes, fmt.Errorf("%s %s: weight needs a value", block, t.name)
			}
			w, err := strconv.Atoi(words[i+1])
			if err != nil || w < -253 || w > 253 {
				return t, notes, fmt.Errorf("%s %s: weight %q is not a number between -253 and 253", block, t.name, words[i+1])
			}
			t.weight = &w
			i++
		case "reverse":
			t.reverse = true
		default:
			notes = append(notes, fmt.Sprintf("%s %s: unknown option %q; ignored", block, t.name, words[i]))
		}
	}
	return t, notes, nil
}

// vrrpScript reads a vrrp_script block. A second block of one name is ignored with a
// warning, as a second vrrp_instance is.
func (p *kaParser) vrrpScript(n node) error {
	sc, err := p.scriptBlock(n, (*Script).set)
	if err != nil || sc == nil {
		return err
	}
	if sc.Command == nil {
		// keepalived drops a script without a command, and the tracking with it.
		p.warn(n.pos, "vrrp_script %s has no script; ignored", sc.Name)
		return nil
	}
	p.g.addScript(sc)
	return nil
}

// scriptBlock reads the block of a vrrp_script or a native check (checks.go) with set:
// nil for a name already taken, which is ignored with a warning. The caller adds it
// to the table once it is complete.
func (p *kaParser) scriptBlock(n node, set func(*Script, *statement) error) (*Script, error) {
	kind := n.key()
	if len(n.args()) == 0 {
		return nil, errAt(n.pos, "%s needs a name", kind)
	}
	if !n.hasBlock {
		return nil, errAt(n.pos, "%s %s needs a { ... } block", kind, n.args()[0])
	}
	name := n.args()[0]
	if first, dup := p.g.scripts.get(name); dup {
		p.warn(n.pos, "%s %s is already defined at %s; this block is ignored", kind, name, first.Source)
		return nil, nil
	}
	sc := newScript(name, n.pos)
	where := " in " + kind + " " + name
	for _, c := range n.children {
		st := newStatement(c.key(), c.args(), c.pos)
		err := set(sc, st)
		p.notes(st)
		switch {
		case err == ErrUnknownKeyword:
			p.ignore(c, where)
		case err != nil:
			return nil, errAt(c.pos, "%s %s: %v", kind, name, err)
		}
	}
	return sc, nil
}

// scriptGlobal applies script_user and enable_script_security from global_defs; false
// for other keywords. They are read here rather than in Globals.SetKeyword, which a
// KeepalivedGroup's verbatimConfig also reaches.
func (p *kaParser) scriptGlobal(n node) (bool, error) {
	st := newStatement(n.key(), n.args(), n.pos)
	var err error
	switch n.key() {
	case "script_user":
		p.g.scriptSettings.User, p.g.scriptSettings.Group, err = userGroup(st)
		p.g.scriptUserPos = n.pos
	case "enable_script_security":
		st.NoValue()
		p.g.scriptSettings.Security = true
	case "notify_fifo", "vrrp_notify_fifo":
		// keepalived takes a user and group for the FIFO's owner; vrrpd leaves it root's.
		var path string
		if len(st.Args) == 0 {
			err = fmt.Errorf("%s needs a path", st.Key)
		} else if path = st.Args[0]; len(st.Args) > 1 {
			st.Note("%s: the owner %q is not applied; the FIFO stays root's", st.Key, strings.Join(st.Args[1:], " "))
		}
		if st.Key == "notify_fifo" {
			p.g.scriptSettings.NotifyFIFO = path
		} else {
			p.g.scriptSettings.VRRPNotifyFIFO = path
		}
	default:
		return false, nil
	}
	p.notes(st)
	if err != nil {
		return true, errAt(n.pos, "%v", err)
	}
	return true, nil
}

// instanceScripts applies an instance's track_script block or notify hook; false for
// other keywords.
func (p *kaParser) instanceScripts(c node, d *Draft) (bool, error) {
	if c.key() == "track_script" || c.key() == KeywordTrackCheck {
		if err := p.needBlock(c); err != nil {
			return true, err
		}
		for _, e := range c.children {
			t, notes, err := parseTrackRef(c.key(), append([]string{e.key()}, e.args()...), e.pos)
			t.check = c.key() == KeywordTrackCheck
			for _, m := range notes {
				p.warn(e.pos, "%s", m)
			}
			if err != nil {
				return true, errAt(e.pos, "%v", err)
			}
			d.tracks = append(d.tracks, t)
		}
		return true, nil
	}
	st := newStatement(c.key(), c.args(), c.pos)
	ok, err := d.notify.set(st)
	p.notes(st)
	if err != nil {
		return true, errAt(c.pos, "%v", err)
	}
	return ok, nil
}
