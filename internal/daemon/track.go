package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/notify"
	"github.com/vrrp-operator/vrrp-operator/internal/proc"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// This file ties keepalived's scripts to the loop: vrrp_script results (package track,
// which runs them off the loop) become each tracking instance's effective priority or
// FAULT through the state machine's SetPriority and SetFault, and transitions become
// notify hooks (package notify, also off the loop).

// scriptState is one vrrp_script as the loop knows it.
type scriptState struct {
	spec   config.Script
	gen    uint64 // the runner's copy whose results count
	status track.Status
	// disabled says why the script is not run (enable_script_security, an unknown user):
	// keepalived then stops tracking it.
	disabled error
	runs     uint64
	failures uint64
	timeouts uint64
}

// tracking is the daemon's share of scripts: the runner, the results channel the loop
// reads, and the notifier.
type tracking struct {
	runner  *track.Runner
	events  chan track.Event
	scripts map[string]*scriptState
	// names are the keys of scripts in order, for snapshots: sorting hundreds of names
	// at every publication cost more than the rest of it.
	names    []string
	notifier *notify.Notifier
	settings config.ScriptSettings
	// defaultCred is who runs scripts and hooks that name nobody (nil: root), for the
	// settings credSet says it was computed from; defaultErr, when set, says why they
	// do not run at all (never root in place of an unknown user).
	defaultCred *syscall.Credential
	defaultErr  error
	credSet     bool
	// fifos are the open notify_fifo and vrrp_notify_fifo, by path.
	fifos map[string]*notify.FIFO
	// other are the tracked interfaces and files and the sync groups (synctrack.go).
	other otherTrackers
}

// errNoCommand disables a script without a command (only a hand-built Config has one).
var errNoCommand = errors.New("no command")

// notifyStopWait bounds how long a stopping daemon waits for queued notify hooks
// (notify_stop among them).
const notifyStopWait = 10 * time.Second

func (d *Daemon) initTracking() {
	d.trk.events = make(chan track.Event, 64)
	d.trk.runner = track.NewRunner(d.trk.events)
	d.trk.scripts = map[string]*scriptState{}
	d.trk.notifier = notify.New(d.opts.NotifyTimeout, d.log)
}

// stopTracking stops the scripts and lets the queued hooks finish, within
// notifyStopWait.
func (d *Daemon) stopTracking() {
	d.trk.runner.Stop()
	for _, f := range d.trk.fifos {
		f.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyStopWait)
	defer cancel()
	d.trk.notifier.Close(ctx)
}

// setScripts makes cfg's scripts the running ones: unchanged scripts keep running and
// keep their status, changed ones start again from init. The instances are retracked by
// the caller.
func (d *Daemon) setScripts(cfg *config.Config) {
	t := &d.trk
	if !t.credSet || t.settings != cfg.ScriptSettings {
		t.settings = cfg.ScriptSettings
		t.defaultCred, t.defaultErr = d.defaultScriptCred(cfg)
		if t.defaultErr != nil && (len(cfg.Scripts) > 0 || hasHooks(cfg)) {
			d.log.Warn("scripts and hooks that name no user are not run", "err", t.defaultErr)
		}
		t.credSet = true
		d.openFIFOs()
	}
	var run []track.Script
	keep := map[string]bool{}
	for _, sc := range cfg.Scripts {
		keep[sc.Name] = true
		st := t.scripts[sc.Name]
		if st == nil {
			st = &scriptState{status: track.NewState(sc.Rise, sc.Fall, sc.InitFail).Status()}
			t.scripts[sc.Name] = st
		}
		st.spec = sc
		st.disabled = nil
		ts, err := d.runnable(sc)
		if err != nil {
			st.disabled = err
			d.log.Warn(fmt.Sprintf("VRRP_Script(%s) disabled", sc.Name), "err", err)
			continue
		}
		run = append(run, ts)
	}
	t.runner.Set(run)
	for name, st := range t.scripts {
		if !keep[name] {
			delete(t.scripts, name)
			continue
		}
		// A copy a reload restarted keeps the status it had until its first result, as
		// keepalived's SCRIPT_INIT_STATE_INIT_RELOAD does: a reload does not put the
		// instances tracking it through init (FAULT for weight 0).
		st.gen = t.runner.Gen(name)
		if st.disabled != nil {
			st.status = track.StatusDisabled
		} else if st.status == track.StatusDisabled {
			st.status = track.NewState(st.spec.Rise, st.spec.Fall, st.spec.InitFail).Status()
		}
	}
	t.names = slices.Sorted(maps.Keys(t.scripts))
}

// openFIFOs opens the configured notify FIFOs that are not open yet and closes the
// others. One that cannot be opened is left out with a warning, as keepalived does.
func (d *Daemon) openFIFOs() {
	want := map[string]bool{}
	for _, p := range []string{d.trk.settings.NotifyFIFO, d.trk.settings.VRRPNotifyFIFO} {
		if p != "" {
			want[p] = true
		}
	}
	if d.trk.fifos == nil {
		d.trk.fifos = map[string]*notify.FIFO{}
	}
	for p, f := range d.trk.fifos {
		if !want[p] {
			f.Close()
			delete(d.trk.fifos, p)
		}
	}
	for p := range want {
		if d.trk.fifos[p] != nil {
			continue
		}
		f, err := notify.OpenFIFO(p)
		if err != nil {
			d.log.Warn("notify fifo not used", "err", err)
			continue
		}
		d.trk.fifos[p] = f
	}
}

// defaultScriptCred is keepalived's choice of script user: script_user, else
// keepalived_script if it exists, else root, with a warning; but with
// enable_script_security and neither, nobody: keepalived 2.2.7 then refuses to run the
// scripts that name no user as root, and so does vrrpd (ErrNoDefaultUser). An unknown
// script_user is a config error at load; should it vanish before the daemon applies the
// configuration, those scripts are not run either. Never root by failure.
func (d *Daemon) defaultScriptCred(cfg *config.Config) (*syscall.Credential, error) {
	s := cfg.ScriptSettings
	if s.User != "" {
		cred, err := track.LookupCredential(s.User, s.Group)
		if err != nil {
			return nil, fmt.Errorf("script_user %s: %w", s.User, err)
		}
		return cred, nil
	}
	if cred, err := track.LookupCredential(track.DefaultScriptUser, ""); err == nil {
		return cred, nil
	}
	if s.Security {
		return nil, track.ErrNoDefaultUser
	}
	if len(cfg.Scripts) > 0 || hasHooks(cfg) {
		d.log.Warn("no script_user and no user " + track.DefaultScriptUser + "; scripts run as root, as keepalived does")
	}
	return nil, nil
}

func hasHooks(cfg *config.Config) bool {
	for _, in := range cfg.Instances {
		if !in.Notify.Empty() {
			return true
		}
	}
	for _, sg := range cfg.SyncGroups {
		if !sg.Notify.Empty() {
			return true
		}
	}
	return false
}

// credFor returns the credential of user and group, or the default when user is empty.
// An error means the script must not run.
func (d *Daemon) credFor(user, group string) (*syscall.Credential, error) {
	if user == "" {
		return d.trk.defaultCred, d.trk.defaultErr
	}
	return track.LookupCredential(user, group)
}

// command resolves a script or hook to what runs: its user, and the file the security
// check walked (track.Resolve). With enable_script_security a path someone else could
// change, or one that cannot be walked, is refused; without it, it is only warned about,
// and one that cannot be walked runs as written (and fails, as keepalived's would).
func (d *Daemon) command(args []string, user, group string) (proc.Command, error) {
	if len(args) == 0 {
		return proc.Command{}, errNoCommand
	}
	cred, err := d.credFor(user, group)
	if err != nil {
		return proc.Command{}, err
	}
	c := proc.Command{Args: args, Cred: cred}
	r, err := track.Resolve(args[0], cred)
	switch {
	case err != nil && d.trk.settings.Security:
		return c, fmt.Errorf("enable_script_security: %w", err)
	case err != nil:
		d.log.Warn("script "+args[0]+" cannot be checked", "err", err)
		return c, nil
	case r.Insecure != nil && d.trk.settings.Security:
		return c, fmt.Errorf("enable_script_security: %w", r.Insecure)
	case r.Insecure != nil:
		d.log.Warn("unsafe permissions for script "+args[0], "err", r.Insecure)
	}
	c.Path = r.Path
	return c, nil
}

// hooksFor resolves an instance's hooks, each as its own user (keepalived's notify_*
// SCRIPT [USER [GROUP]]); a hook whose user is unknown or that fails the security check
// is dropped with a warning, the others stay.
func (d *Daemon) hooksFor(ic config.Instance) notify.Scripts {
	n := ic.Notify
	var s notify.Scripts
	for i, h := range s.Hooks() {
		c := n.Commands()[i]
		if len(c.Args) == 0 {
			continue
		}
		cmd, err := d.command(c.Args, c.User, c.Group)
		if err != nil {
			d.log.Warn(fmt.Sprintf("(%s) notify script disabled", ic.Name), "script", c.Args[0], "user", c.User, "err", err)
			continue
		}
		*h = cmd
	}
	return s
}

// maxResultsPerTurn bounds how many queued results one turn of the loop takes, so that
// packets and reloads still get their turns while hundreds of trackers report at once.
const maxResultsPerTurn = 64

// scriptResults takes ev and the results queued behind it, and publishes once if any
// changed a status. Hundreds of trackers started together change together (their first
// results, or a host-wide stall that made all time out): one publication per change
// would be a snapshot of every instance per tracker, hundreds of milliseconds of loop.
func (d *Daemon) scriptResults(ev track.Event, now time.Time) {
	changed := d.scriptResult(ev, now)
	for n, more := 1, true; more && n < maxResultsPerTurn; n++ {
		select {
		case ev := <-d.trk.events:
			changed = d.scriptResult(ev, now) || changed
		default:
			more = false
		}
	}
	if changed {
		d.publish(now)
	}
}

// scriptResult takes one run's result from the runner and reports whether it changed
// the script's status (the instances tracking it are retracked).
func (d *Daemon) scriptResult(ev track.Event, now time.Time) bool {
	st := d.trk.scripts[ev.Script]
	if st == nil || ev.Gen != st.gen {
		return false // a copy a reload replaced
	}
	st.runs++
	if !ev.OK {
		st.failures++
	}
	if ev.TimedOut {
		st.timeouts++
	}
	d.dirty = true
	if ev.Changed {
		st.status = ev.Status
		verdict := "succeeded"
		switch {
		case ev.TimedOut:
			verdict = "timed_out"
		case !ev.OK:
			verdict = "failed"
		}
		d.log.Info(fmt.Sprintf("VRRP_Script(%s) %s", ev.Script, verdict), "err", errString(ev.Err))
		for _, in := range d.instances {
			if in.tracks(ev.Script) {
				d.retrack(in, now)
			}
		}
	}
	return ev.Changed
}

func (in *instance) tracks(script string) bool {
	for _, t := range in.cfg.TrackScripts {
		if t.Script == script {
			return true
		}
	}
	return false
}

// trackedPriority computes an instance's effective priority, whether a weight-0 script
// holds it in FAULT, and whether only scripts without a first result do (waiting).
func (d *Daemon) trackedPriority(ic config.Instance) (p uint8, fault, waiting bool) {
	sum, failing := 0, false
	for _, t := range ic.TrackScripts {
		status := track.StatusDisabled
		if st := d.trk.scripts[t.Script]; st != nil {
			status = st.status
		}
		if t.Weight == 0 {
			if track.Faults(t.Reverse, status) {
				fault = true
				failing = failing || status != track.StatusInit
			}
		} else {
			sum += track.Contribution(t.Weight, t.Reverse, status)
		}
	}
	osum, ofault := d.otherTracked(ic)
	sum += osum
	failing = failing || ofault
	fault = fault || ofault
	return track.Effective(ic.Priority, sum), fault, fault && !failing
}

// reasonWaiting is the FAULT of an instance waiting for its weight-0 scripts' first
// results. keepalived keeps such an instance in INIT and tells its hooks nothing, so
// vrrpd's FAULT for it is not notified; a script failing then is.
const reasonWaiting vrrp.Reason = "waiting for track scripts"

// smConfig is the state machine's configuration of ic with the effective priority, so
// that a new or reconfigured state machine never advertises the configured one first.
func (d *Daemon) smConfig(ic config.Instance, source netip.Addr) vrrp.Config {
	c := ic.StateMachineConfig(source)
	c.Priority, _, _ = d.trackedPriority(ic)
	return c
}

// retrack gives the state machine the instance's effective priority and its FAULT from
// tracking (combined with the interface's).
func (d *Daemon) retrack(in *instance, now time.Time) {
	p, fault, waiting := d.trackedPriority(in.cfg)
	in.trackFault = fault
	if in.sm == nil {
		return
	}
	if in.quietFault && !waiting && in.sm.Fault() {
		// The FAULT kept quiet while waiting becomes a real one, or ends below.
		in.quietFault = false
		if fault || in.faultErr != nil {
			d.notifyState(in, notify.Fault)
		}
	}
	if old := in.sm.Priority(); p != old {
		d.log.Info(fmt.Sprintf("(%s) Changing effective priority from %d to %d", in.cfg.Name, old, p))
		d.acts = in.sm.SetPriority(now, p, d.acts[:0])
		d.execute(in, now)
	}
	groupFault := d.groupFault(in)
	want := fault || in.faultErr != nil || groupFault
	if want != in.sm.Fault() {
		reason := vrrp.Reason("")
		switch {
		case in.faultErr != nil:
			reason = vrrp.ReasonInterfaceDown
		case groupFault && !fault:
			reason = vrrp.ReasonSyncGroup
		case waiting:
			reason = reasonWaiting
		case fault:
			reason = vrrp.ReasonTrackFault
		}
		in.quietFault = want && reason == reasonWaiting
		d.acts = in.sm.SetFault(now, want, reason, d.acts[:0])
		d.execute(in, now)
	}
}

// notifyTransition queues the instance's hooks for a state change.
func (d *Daemon) notifyTransition(in *instance, to vrrp.State) {
	if in.hooks.Empty() && len(d.trk.fifos) == 0 {
		return
	}
	if to == vrrp.StateFault && in.quietFault {
		return
	}
	var state string
	switch {
	case to == vrrp.StateInit && in.deleted:
		// Removed by a reload: DELETED with notify_deleted, else FAULT, which keepalived
		// sent before it had DELETED (nothing if it was in FAULT already).
		switch {
		case in.cfg.Notify.NotifyDeleted:
			d.notifyState(in, notify.Deleted)
		case in.deletedFrom != vrrp.StateFault:
			d.notifyState(in, notify.Fault)
		}
		return
	}
	switch to {
	case vrrp.StateMaster:
		state = notify.Master
	case vrrp.StateBackup:
		state = notify.Backup
	case vrrp.StateFault:
		state = notify.Fault
	case vrrp.StateInit:
		state = notify.Stop
	default:
		return
	}
	d.notifyState(in, state)
}

// notifyState writes the FIFO line and queues the hooks of the instance for state.
func (d *Daemon) notifyState(in *instance, state string) {
	prio := in.cfg.Priority
	if in.sm != nil {
		prio = in.sm.Priority()
	}
	// The FIFO line first, as keepalived writes it before it starts the scripts.
	for _, f := range d.trk.fifos {
		f.Write(in.cfg.Name, state, prio)
	}
	d.trk.notifier.Notify(in.cfg.Name, in.hooks, state, prio)
}

// trackedSnapshot is the instance's trackers for the published snapshot.
func (d *Daemon) trackedSnapshot(in *instance) []metrics.Tracked {
	var out []metrics.Tracked
	for _, t := range in.cfg.TrackScripts {
		status := track.StatusDisabled
		if st := d.trk.scripts[t.Script]; st != nil {
			status = st.status
		}
		out = append(out, metrics.Tracked{Script: t.Script, Weight: t.Weight, Reverse: t.Reverse, Status: status.String()})
	}
	return out
}

// scriptsSnapshot is every script with its runs, by name.
func (d *Daemon) scriptsSnapshot() []metrics.Script {
	out := make([]metrics.Script, 0, len(d.trk.names))
	for _, name := range d.trk.names {
		st := d.trk.scripts[name]
		out = append(out, metrics.Script{Name: name, Status: st.status.String(), Runs: st.runs, Failures: st.failures, Timeouts: st.timeouts})
	}
	return out
}
