package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// This file is keepalived's scripts: vrrp_script blocks, an instance's track_script and
// notify hooks, and the global script_user and enable_script_security. Only
// keepalived.conf and the YAML file set them; Kubernetes mode never does (a Service's
// owner must not make vrrpd run a process).

// Script is a vrrp_script: a check run every Interval whose result moves the priority of
// the instances that track it (Weight), or puts them in FAULT (weight 0).
type Script struct {
	Name string
	// Command is the program and its arguments, split as keepalived splits them.
	Command  []string
	Interval time.Duration
	// Timeout bounds one run; zero means Interval, as in keepalived.
	Timeout time.Duration
	// Weight (-253..253) and Reverse are the defaults of the instances tracking it.
	Weight  int
	Reverse bool
	Rise    int
	Fall    int
	// InitFail starts the script failed rather than waiting for its first result.
	InitFail bool
	// User and Group run it; empty means the global script user.
	User, Group string
	// Check makes it a native check (checks.go): no Command, no user.
	Check  track.Check
	Source Position
}

// TrackScript is an instance's track_script entry, its weight and reverse resolved
// (the entry's own, else the script's).
type TrackScript struct {
	Script  string
	Weight  int
	Reverse bool
}

// Command is a hook: a program with its arguments, and the user it runs as (empty for
// the global script user).
type Command struct {
	Args        []string
	User, Group string
}

func (c Command) equal(o Command) bool {
	return slices.Equal(c.Args, o.Args) && c.User == o.User && c.Group == o.Group
}

// Notify are an instance's notify hooks; a nil Args means none.
type Notify struct {
	Master, Backup, Fault, Stop Command
	// Generic is keepalived's notify: called on every transition with INSTANCE, the
	// name, the state and the priority appended.
	Generic Command
	// Deleted is notify_deleted's script, run when a reload removes the instance;
	// NotifyDeleted (notify_deleted with or without a script) makes the hooks and the FIFO
	// hear DELETED then rather than keepalived's older FAULT.
	Deleted       Command
	NotifyDeleted bool
}

// Commands returns the hooks in the order of notify.Scripts.Hooks: master, backup,
// fault, stop, the generic notify, deleted.
func (n Notify) Commands() []Command {
	return []Command{n.Master, n.Backup, n.Fault, n.Stop, n.Generic, n.Deleted}
}

// Empty reports whether there is no hook.
func (n Notify) Empty() bool {
	for _, c := range n.Commands() {
		if len(c.Args) > 0 {
			return false
		}
	}
	return true
}

// Equal reports whether a and b are the same hooks.
func (a Notify) Equal(b Notify) bool {
	return a.Master.equal(b.Master) && a.Backup.equal(b.Backup) && a.Fault.equal(b.Fault) &&
		a.Stop.equal(b.Stop) && a.Generic.equal(b.Generic) && a.Deleted.equal(b.Deleted) &&
		a.NotifyDeleted == b.NotifyDeleted
}

// ScriptSettings are the global script settings.
type ScriptSettings struct {
	// User and Group are script_user: who runs scripts that name nobody. Empty means
	// keepalived's default: keepalived_script if that user exists, else root (warned).
	User, Group string
	// Security is enable_script_security: a script a non-root user could change is
	// not run.
	Security bool
	// NotifyFIFO and VRRPNotifyFIFO are notify_fifo and vrrp_notify_fifo: FIFOs that
	// get a line per transition (keepalived writes both when both are set).
	NotifyFIFO, VRRPNotifyFIFO string
}

// scriptDefaults are keepalived's vrrp_script defaults.
func newScript(name string, pos Position) *Script {
	return &Script{Name: name, Interval: time.Second, Rise: 1, Fall: 1, Source: pos}
}

// maxScriptSeconds bounds interval and timeout (keepalived: UINT_MAX / TIMER_HZ).
const maxScriptSeconds = 4294

// splitScript reads a script value as keepalived does: the first word (one quoted
// string, usually) split into the command and its arguments; later words are the
// user and group for hooks, ignored with a note for vrrp_script.
func splitScript(s *statement) ([]string, error) {
	if len(s.args) == 0 || s.args[0] == "" {
		return nil, fmt.Errorf("%s needs a script", s.key)
	}
	args, err := track.SplitCommand(s.args[0])
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", s.key, s.args[0], err)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("%s needs a script", s.key)
	}
	return args, nil
}

// scriptSeconds reads interval or timeout: whole seconds, 0 taken as 1 with a note.
func scriptSeconds(s *statement) (time.Duration, error) {
	v, err := s.uint(0, maxScriptSeconds)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		s.note("%s must be greater than 0; using 1", s.key)
		v = 1
	}
	return time.Duration(v) * time.Second, nil
}

// weight reads "weight W [reverse]".
func weight(s *statement) (int, bool, error) {
	if len(s.args) == 0 {
		return 0, false, fmt.Errorf("weight needs a value")
	}
	w, err := strconv.Atoi(s.args[0])
	if err != nil || w < -253 || w > 253 {
		return 0, false, fmt.Errorf("weight %q is not a number between -253 and 253", s.args[0])
	}
	reverse := false
	for _, a := range s.args[1:] {
		if a == "reverse" {
			reverse = true
			continue
		}
		s.note("unknown weight option %q; ignored", a)
	}
	return w, reverse, nil
}

// userGroup reads "user USER [GROUP]"; both must exist (knownUser).
func userGroup(s *statement) (string, string, error) {
	if len(s.args) == 0 {
		return "", "", fmt.Errorf("%s needs a user name", s.key)
	}
	g := ""
	if len(s.args) > 1 {
		g = s.args[1]
	}
	if len(s.args) > 2 {
		s.note("%s takes a user and a group; ignoring %q", s.key, strings.Join(s.args[2:], " "))
	}
	if err := knownUser(s.key, s.args[0], g); err != nil {
		return "", "", err
	}
	return s.args[0], g, nil
}

// knownUser checks that a script's user and group exist on this host. keepalived logs
// an unknown one and then runs the scripts of an unknown script_user as root, or drops
// the hook; vrrpd refuses the whole configuration instead: a script meant to run
// unprivileged never runs as root, and nothing is silently left out.
func knownUser(what, user, group string) error {
	if user == "" {
		return nil
	}
	if _, err := track.LookupCredential(user, group); err != nil {
		return fmt.Errorf("%s %s: %v (a script is never run as root in its place)", what, strings.TrimSpace(user+" "+group), err)
	}
	return nil
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

// set applies one keyword of a vrrp_script block.
func (sc *Script) set(s *statement) error {
	var err error
	switch s.key {
	case "script":
		sc.Command, err = splitScript(s)
		if len(s.args) > 1 {
			s.note("script: ignoring %q after the command (quote the whole command line)", strings.Join(s.args[1:], " "))
		}
	case "interval":
		sc.Interval, err = scriptSeconds(s)
	case "timeout":
		sc.Timeout, err = scriptSeconds(s)
	case "weight":
		sc.Weight, sc.Reverse, err = weight(s)
	case "rise", "fall":
		var v uint64
		if v, err = s.uint(1, 1<<31-1); err == nil {
			if s.key == "rise" {
				sc.Rise = int(v)
			} else {
				sc.Fall = int(v)
			}
		}
	case "init_fail":
		s.noValue()
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
	if len(s.args) > 1 {
		c.User = s.args[1]
	}
	if len(s.args) > 2 {
		c.Group = s.args[2]
	}
	if err := knownUser(s.key+" "+args[0]+": user", c.User, c.Group); err != nil {
		return Command{}, err
	}
	if len(s.args) > 3 {
		s.note("%s: ignoring %q after the user and group", s.key, strings.Join(s.args[3:], " "))
	}
	return c, nil
}

// setNotify applies one notify keyword; false when key is none.
func (n *Notify) set(s *statement) (bool, error) {
	var dst *Command
	switch s.key {
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

// scriptTable holds the vrrp_script blocks by name.
type scriptTable struct{ byName map[string]*Script }

// addScript puts a complete script or native check in g's table, made on first use.
func (g *Globals) addScript(sc *Script) {
	if g.scripts == nil {
		g.scripts = &scriptTable{byName: map[string]*Script{}}
	}
	g.scripts.byName[sc.Name] = sc
}

func (t *scriptTable) get(name string) (*Script, bool) {
	if t == nil {
		return nil, false
	}
	sc, ok := t.byName[name]
	return sc, ok
}

// trackRef is a track_script (or track_check, with check set) entry as written.
type trackRef struct {
	name    string
	weight  *int
	reverse bool
	check   bool
	pos     Position
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
		ts := TrackScript{Script: t.name, Weight: sc.Weight, Reverse: sc.Reverse}
		if t.weight != nil {
			ts.Weight, ts.Reverse = *t.weight, t.reverse
		} else if t.reverse {
			ts.Reverse = true
		}
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
		st := &statement{key: c.key(), args: c.args(), pos: c.pos}
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
	st := &statement{key: n.key(), args: n.args(), pos: n.pos}
	var err error
	switch n.key() {
	case "script_user":
		p.g.scriptSettings.User, p.g.scriptSettings.Group, err = userGroup(st)
		p.g.scriptUserPos = n.pos
	case "enable_script_security":
		st.noValue()
		p.g.scriptSettings.Security = true
	case "notify_fifo", "vrrp_notify_fifo":
		// keepalived takes a user and group for the FIFO's owner; vrrpd leaves it root's.
		var path string
		if len(st.args) == 0 {
			err = fmt.Errorf("%s needs a path", st.key)
		} else if path = st.args[0]; len(st.args) > 1 {
			st.note("%s: the owner %q is not applied; the FIFO stays root's", st.key, strings.Join(st.args[1:], " "))
		}
		if st.key == "notify_fifo" {
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
	st := &statement{key: c.key(), args: c.args(), pos: c.pos}
	ok, err := d.notify.set(st)
	p.notes(st)
	if err != nil {
		return true, errAt(c.pos, "%v", err)
	}
	return ok, nil
}
