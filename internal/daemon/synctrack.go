package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/notify"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
	"golang.org/x/sys/unix"
)

// This file is keepalived's trackers beyond scripts and its sync groups, tied to the
// loop: track_interface (link state from the same netlink watch and poll that drive the
// instances' own interfaces), track_file (read on every interface check, so at least
// once per poll interval: one second; vrrpd polls rather than using inotify, which cannot
// see a file replaced through a bind mount or a symlink swap and costs a goroutine), and
// vrrp_sync_group (members share FAULT and leave MASTER together; the group has its
// own hooks, called with GROUP).

// otherTrackers is the loop's state of tracked interfaces, files and sync groups.
type otherTrackers struct {
	// ifUp is the link state of every tracked interface; an interface missing when the
	// configuration was applied is not tracked (keepalived ignores it with an error).
	ifUp map[string]bool
	// files are the track files by name.
	files map[string]*fileState
	// groups are the sync groups by name; syncing is set while one is being synced, and
	// dirty lists the groups whose members changed state meanwhile.
	groups  map[string]*groupState
	syncing bool
	dirty   []*groupState
	// applied is set once a configuration was applied: later ones are reloads.
	applied bool
}

type fileState struct {
	spec  config.TrackFileSpec
	value int64
	// refused says why the last read found something other than a regular file at the
	// path, to warn once per change rather than at every read.
	refused error
}

type groupState struct {
	cfg   config.SyncGroup
	hooks notify.Scripts
	state string // the notify state last reported, "" before the first
	// left lists the members that left MASTER for BACKUP since the last sync.
	left []*instance
}

// setTrackers makes cfg's interfaces, files and sync groups the tracked ones.
func (d *Daemon) setTrackers(cfg *config.Config) {
	o := &d.trk.other
	o.ifUp = map[string]bool{}
	for _, ic := range cfg.Instances {
		for _, t := range ic.TrackInterfaces {
			if _, done := o.ifUp[t.Interface]; done {
				continue
			}
			err := d.links.Running(t.Interface)
			if errors.Is(err, transport.ErrNoInterface) {
				d.log.Warn(fmt.Sprintf("(%s) tracked interface %s doesn't exist; not tracked, as keepalived does", ic.Name, t.Interface))
				continue
			}
			o.ifUp[t.Interface] = err == nil
		}
	}
	old := o.files
	o.files = map[string]*fileState{}
	for _, f := range cfg.TrackFiles {
		st := &fileState{spec: f}
		if prev := old[f.Name]; prev != nil && prev.spec.Path == f.Path {
			st.value, st.refused = prev.value, prev.refused
		} else {
			d.initTrackFile(f, o.applied)
			st.value, _, st.refused = readTrackFile(f.Path)
			if st.refused != nil {
				d.log.Warn("track file refused", "track_file", f.Name, "path", f.Path, "err", st.refused)
			}
		}
		o.files[f.Name] = st
	}
	oldGroups := o.groups
	o.groups = map[string]*groupState{}
	for _, sg := range cfg.SyncGroups {
		gs := &groupState{cfg: sg}
		if prev := oldGroups[sg.Name]; prev != nil {
			gs.state = prev.state
		}
		gs.hooks = d.groupHooks(sg)
		o.groups[sg.Name] = gs
	}
	for name := range oldGroups {
		if o.groups[name] == nil {
			d.trk.notifier.ForgetGroup(name)
		}
	}
	o.applied = true
}

// initTrackFile is init_file: the file is written with the initial value when it does
// not exist, or at start (not on a reload) with overwrite, as keepalived does. Like
// keepalived's fopen_safe, it writes a new file beside it and renames that over the path:
// a symbolic link or a FIFO swapped in at the path is replaced, never followed or
// written into, and readers never see a half-written file. Unlike keepalived, which
// looks through a symbolic link already there, vrrpd leaves one alone with a warning.
func (d *Daemon) initTrackFile(f config.TrackFileSpec, reload bool) {
	if !f.Init {
		return
	}
	fi, err := os.Lstat(f.Path)
	switch {
	case err == nil && (!f.Overwrite || reload):
		return
	case err == nil && !fi.Mode().IsRegular():
		d.log.Warn("cannot initialise track file: not a regular file", "track_file", f.Name, "path", f.Path, "type", fi.Mode().Type().String())
		return
	}
	if err := writeFileAtomic(f.Path, []byte(strconv.Itoa(f.InitValue)+"\n")); err != nil {
		d.log.Warn("unable to initialise track file", "track_file", f.Name, "err", err)
	}
}

// writeFileAtomic writes data to a new file in path's directory (created with O_EXCL,
// so never through a link) and renames it to path.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".vrrpd-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes it 0600; readers are often not root
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// errTrackFileType refuses a track file that is not a regular file.
var errTrackFileType = errors.New("not a regular file (a symbolic link, a FIFO, a device): read as 0")

// readTrackFile reads a track file's value: 0 when it is missing or empty; false when it
// holds a number out of range, which keepalived ignores. It runs in the daemon's loop, so
// nothing in it may block: the file is opened O_NONBLOCK (a FIFO's open returns at once),
// O_NOFOLLOW (a symbolic link is refused) and checked with fstat on the open descriptor,
// so whatever is swapped in between the look and the read, only a regular file is read.
// Anything else counts as a missing file (0, refused says why). keepalived reads a FIFO
// non-blocking, and resolves a symbolic link once (realpath) when it loads the
// configuration; vrrpd reads neither: a link planted by whoever may write the directory
// would have root read a file of its choosing.
func readTrackFile(path string) (v int64, ok bool, refused error) {
	var st unix.Stat_t
	// Look first: opening a device could have effects of its own.
	if err := unix.Lstat(path, &st); err != nil {
		return 0, true, nil // missing: 0, as in keepalived
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, true, errTrackFileType
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return 0, true, errTrackFileType
		}
		return 0, true, nil
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, true, errTrackFileType
	}
	buf := make([]byte, 127) // keepalived reads no more
	n, err := unix.Read(fd, buf)
	if err != nil || n < 0 {
		return 0, true, nil
	}
	v, ok = track.FileValue(buf[:n])
	return v, ok, nil
}

// checkTrackers re-reads the tracked interfaces and files, and retracks the instances
// whose trackers changed.
func (d *Daemon) checkTrackers(now time.Time) {
	o := &d.trk.other
	changedIf := map[string]bool{}
	for name, was := range o.ifUp {
		up := d.links.Running(name) == nil
		if up != was {
			o.ifUp[name] = up
			changedIf[name] = true
			state := "down"
			if up {
				state = "up"
			}
			d.log.Info(fmt.Sprintf("tracked interface %s is %s", name, state))
		}
	}
	changedFile := map[string]bool{}
	for name, f := range o.files {
		v, ok, refused := readTrackFile(f.spec.Path)
		if (refused == nil) != (f.refused == nil) {
			if refused != nil {
				d.log.Warn("track file refused", "track_file", name, "path", f.spec.Path, "err", refused)
			}
			f.refused = refused
		}
		if !ok {
			d.log.Info("invalid number read from track file; ignored", "track_file", name)
			continue
		}
		if v != f.value {
			f.value = v
			changedFile[name] = true
			d.log.Info(fmt.Sprintf("track file %s now holds %d", name, v))
		}
	}
	if len(changedIf) == 0 && len(changedFile) == 0 {
		return
	}
	for _, in := range d.instances {
		if slices.ContainsFunc(in.cfg.TrackInterfaces, func(t config.TrackInterface) bool { return changedIf[t.Interface] }) ||
			slices.ContainsFunc(in.cfg.TrackFiles, func(t config.TrackFile) bool { return changedFile[t.File] }) {
			d.retrack(in, now)
		}
	}
	d.publish(now)
}

// otherTracked is what the instance's interfaces and files add to its priority, and
// whether one of them holds it in FAULT.
func (d *Daemon) otherTracked(ic config.Instance) (sum int, fault bool) {
	o := &d.trk.other
	for _, t := range ic.TrackInterfaces {
		up, tracked := o.ifUp[t.Interface]
		if !tracked {
			continue
		}
		off, f := track.InterfaceEffect(up, t.Weight, t.Reverse)
		sum += off
		fault = fault || f
	}
	for _, t := range ic.TrackFiles {
		f := o.files[t.File]
		if f == nil {
			continue
		}
		off, ft := track.FileEffect(f.value, t.Weight, t.Reverse)
		sum += off
		fault = fault || ft
	}
	return sum, fault
}

// groupHooks resolves a sync group's hooks as hooksFor does an instance's.
func (d *Daemon) groupHooks(sg config.SyncGroup) notify.Scripts {
	s := d.hooksFor(config.Instance{Name: sg.Name, Notify: sg.Notify})
	s.Kind = notify.Group
	return s
}

// groupFault reports whether another member of the instance's sync group is in FAULT
// of its own, which holds this one in FAULT too (keepalived's vrrp_sync_fault).
func (d *Daemon) groupFault(in *instance) bool {
	gs := d.trk.other.groups[in.cfg.SyncGroup]
	if gs == nil {
		return false
	}
	for _, m := range gs.cfg.Members {
		if o := d.byName[m]; o != nil && o != in && o.cfg.SyncGroup == gs.cfg.Name && ownFault(o) {
			return true
		}
	}
	return false
}

// ownFault reports whether the member is in FAULT for a reason of its own (its
// interface, its trackers, no socket), not because of its group.
func ownFault(in *instance) bool {
	return in.sm == nil || in.faultErr != nil || in.trackFault
}

// noteSyncTransition records a member's state change for its group's sync, which runs
// once the change's actions are done (syncDirty).
func (d *Daemon) noteSyncTransition(in *instance, from, to vrrp.State) {
	gs := d.trk.other.groups[in.cfg.SyncGroup]
	if gs == nil {
		return
	}
	if from == vrrp.StateMaster && to == vrrp.StateBackup && in.syncReason != vrrp.ReasonSyncGroup {
		gs.left = append(gs.left, in)
	}
	if !slices.Contains(d.trk.other.dirty, gs) {
		d.trk.other.dirty = append(d.trk.other.dirty, gs)
	}
}

// syncDirty syncs the groups whose members changed state, until none changes any more.
func (d *Daemon) syncDirty(now time.Time) {
	o := &d.trk.other
	if o.syncing {
		return
	}
	o.syncing = true
	defer func() { o.syncing = false }()
	for range 16 { // each round settles a group; a bound in case two rules disagree
		if len(o.dirty) == 0 {
			return
		}
		dirty := o.dirty
		o.dirty = nil
		for _, gs := range dirty {
			d.syncGroup(gs, now)
		}
	}
}

// resyncGroups syncs every group after a reload changed groups or members (the caller
// retracked every instance, which released those no group holds any more).
func (d *Daemon) resyncGroups(now time.Time) {
	o := &d.trk.other
	for _, gs := range o.order() {
		if !slices.Contains(o.dirty, gs) {
			o.dirty = append(o.dirty, gs)
		}
	}
	d.syncDirty(now)
}

// members returns the running instances of the group, in the group's order.
func (d *Daemon) members(gs *groupState) []*instance {
	out := make([]*instance, 0, len(gs.cfg.Members))
	for _, m := range gs.cfg.Members {
		if in := d.byName[m]; in != nil && in.cfg.SyncGroup == gs.cfg.Name {
			out = append(out, in)
		}
	}
	return out
}

// syncGroup applies keepalived's sync rules to one group: while any member is in FAULT of
// its own, every member is (vrrp_sync_fault); a member leaving MASTER for BACKUP takes the
// other masters with it (vrrp_sync_backup). The group's hooks hear the group's state: FAULT
// while any member is in FAULT, MASTER while one is master, else BACKUP.
func (d *Daemon) syncGroup(gs *groupState, now time.Time) {
	ms := d.members(gs)
	anyFault := slices.ContainsFunc(ms, ownFault)
	for _, in := range ms {
		if in.sm == nil || ownFault(in) || d.groupFault(in) == in.sm.Fault() {
			continue
		}
		if anyFault {
			d.log.Info(fmt.Sprintf("VRRP_Group(%s) Syncing %s to FAULT state", gs.cfg.Name, in.cfg.Name))
		}
		d.retrack(in, now)
	}
	left := gs.left
	gs.left = nil
	if !anyFault && len(left) > 0 {
		for _, in := range ms {
			if in.sm != nil && in.sm.State() == vrrp.StateMaster {
				d.log.Info(fmt.Sprintf("VRRP_Group(%s) Syncing %s to BACKUP state", gs.cfg.Name, in.cfg.Name))
				in.syncReason = vrrp.ReasonSyncGroup
				d.acts = in.sm.StepDown(now, vrrp.ReasonSyncGroup, d.acts[:0])
				d.execute(in, now)
				in.syncReason = ""
			}
		}
	}
	if len(ms) < len(gs.cfg.Members) {
		return // still starting
	}
	all := func(s vrrp.State) bool {
		return !slices.ContainsFunc(ms, func(in *instance) bool { return in.state != s || in.quietFault })
	}
	switch {
	case slices.ContainsFunc(ms, func(in *instance) bool { return in.state == vrrp.StateFault && !in.quietFault }):
		d.setGroupState(gs, notify.Fault, now)
	case all(vrrp.StateMaster):
		d.setGroupState(gs, notify.Master, now)
	case all(vrrp.StateBackup):
		d.setGroupState(gs, notify.Backup, now)
	}
	// Otherwise the members are on their way (or split): the group keeps its state.
}

// initGroups reports each new group's starting state before its members start, as
// keepalived's vrrp_init_state does: FAULT when a member starts in FAULT, BACKUP unless
// every member is the address owner; nothing while a member waits for its scripts.
func (d *Daemon) initGroups(cfg *config.Config, now time.Time) {
	for _, sg := range cfg.SyncGroups {
		gs := d.trk.other.groups[sg.Name]
		if gs == nil || gs.state != "" {
			continue
		}
		state, owners, waits := notify.Backup, true, false
		for _, m := range sg.Members {
			ic, ok := cfg.Instance(m)
			if !ok {
				continue
			}
			owners = owners && ic.Priority == track.OwnerPriority
			_, fault, waiting := d.trackedPriority(ic)
			waits = waits || waiting
			if fault && !waiting || !ic.DontTrackPrimary && d.links.Running(ic.Interface) != nil {
				state = notify.Fault
			}
		}
		if state == notify.Fault || !owners && !waits {
			d.setGroupState(gs, state, now)
		}
	}
}

// setGroupState reports the group's new state to its hooks and the FIFOs.
func (d *Daemon) setGroupState(gs *groupState, state string, now time.Time) {
	if state == gs.state {
		return
	}
	gs.state = state
	d.log.Info(fmt.Sprintf("VRRP_Group(%s) Entering %s STATE", gs.cfg.Name, state))
	for _, f := range d.trk.fifos {
		f.WriteKind(notify.Group, gs.cfg.Name, state, 0)
	}
	d.trk.notifier.Notify(gs.cfg.Name, gs.hooks, state, 0)
	d.publish(now)
}

// stopGroups tells every group's hooks STOP, after the instances' (notify_shutdown).
func (d *Daemon) stopGroups(now time.Time) {
	for _, sg := range d.trk.other.order() {
		d.setGroupState(sg, notify.Stop, now)
	}
}

// order returns the groups by name, for stable notifications.
func (o *otherTrackers) order() []*groupState {
	out := make([]*groupState, 0, len(o.groups))
	for _, g := range o.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *groupState) int {
		switch {
		case a.cfg.Name < b.cfg.Name:
			return -1
		case a.cfg.Name > b.cfg.Name:
			return 1
		}
		return 0
	})
	return out
}

// trackersSnapshot is the instance's interfaces and files for the published snapshot.
func (d *Daemon) trackersSnapshot(in *instance) []metrics.Tracker {
	o := &d.trk.other
	var out []metrics.Tracker
	for _, t := range in.cfg.TrackInterfaces {
		up, tracked := o.ifUp[t.Interface]
		status := "UNTRACKED"
		if tracked {
			status = "DOWN"
			if up {
				status = "UP"
			}
		}
		off, fault := track.InterfaceEffect(up, t.Weight, t.Reverse)
		out = append(out, metrics.Tracker{Kind: "interface", Name: t.Interface, Weight: t.Weight, Reverse: t.Reverse,
			Status: status, OK: tracked && !fault, Offset: off})
	}
	for _, t := range in.cfg.TrackFiles {
		f := o.files[t.File]
		if f == nil {
			continue
		}
		off, fault := track.FileEffect(f.value, t.Weight, t.Reverse)
		status := "OK"
		if fault {
			status = "FAULT"
		}
		out = append(out, metrics.Tracker{Kind: "file", Name: t.File, Weight: t.Weight, Reverse: t.Reverse,
			Status: status, OK: !fault, Offset: off, Value: f.value})
	}
	return out
}

// groupsSnapshot is every sync group with its state.
func (d *Daemon) groupsSnapshot() []metrics.SyncGroup {
	var out []metrics.SyncGroup
	for _, gs := range d.trk.other.order() {
		state := gs.state
		if state == "" {
			state = "INIT"
		}
		out = append(out, metrics.SyncGroup{Name: gs.cfg.Name, State: state, Members: gs.cfg.Members})
	}
	return out
}
