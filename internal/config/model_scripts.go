package config

import (
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// The model of keepalived's scripts, native checks and notify hooks, as a resolved Config
// carries them. Only keepalived.conf and the YAML file set them; Kubernetes mode never does
// (a Service's owner must not make vrrpd run a process).

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

// IsCheck reports whether sc is a native check rather than a process.
func (sc Script) IsCheck() bool { return sc.Check.Kind != track.CheckNone }
