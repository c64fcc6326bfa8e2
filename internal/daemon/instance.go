package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/notify"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
	"golang.org/x/sys/unix"
)

// instance is one virtual router in the daemon: its configuration, its state machine and
// what the loop knows about it beyond the state machine.
type instance struct {
	cfg  config.Instance
	vips vipSet // cfg's addresses as package vip takes them
	conn *conn
	// sm is nil until the interface has given us a source address: the state machine
	// needs one (it is the tie-break and the checksum source). Until then the instance
	// reports FAULT.
	sm *vrrp.Instance

	timerKey    int
	announceKey int
	announce    announceState

	// holdBack are the addresses a reload gave this master that no instance here held
	// before it, each with when it is to be added (holdback.go); holdBackKey is their
	// timer.
	holdBack    map[netip.Prefix]time.Time
	holdBackKey int

	vmac          *vip.VMAC // the macvlan made for it (vmac.go), nil for none
	holdsExcluded bool      // the virtual_ipaddress_excluded are on the interface
	holdsRoutes   bool      // its virtual_routes and virtual_rules are in (routes.go)
	vmacErr       error     // why its macvlan could not be made, nil once it is
	faultErr      error

	// preexisting counts VIPs found on the interface already when it became master (not
	// added, so never removed: see addVIPs); readded counts VIPs someone else took off
	// while it was master, which it put back (checkVIPs).
	preexisting, readded uint64

	// sendErrors counts the advertisements that did not go out (sendFailed); the
	// warning about them is rate-limited: sendWarned is when it was last logged, and
	// sendSuppressed how many failures went unlogged since.
	sendErrors     uint64
	sendWarned     time.Time
	sendSuppressed uint64
	fitChecked     [2]int // the MTU and advert length checkAdvertFits last compared

	transitions    uint64
	lastTransition time.Time
	state          vrrp.State // last reported, FAULT while sm is nil
	// acted counts the state machine's action lists executed for it that change its
	// state or its VIPs (executeActs, supersedes). A list whose slow work (thousands of
	// VIPs) reads an advertisement that makes the state machine act so again
	// (busyread.go) stops where it is: the newer list has done what the state now needs.
	acted uint64
	// executing is how many of its action lists executeActs is in: more than one while an
	// advert goes out between the chunks of its own list's VIPs.
	executing int

	trackFault bool           // a weight-0 vrrp_script holds it in FAULT (track.go)
	quietFault bool           // that FAULT only waits for first results: not notified
	hooks      notify.Scripts // its notify hooks

	// syncReason is set while its sync group makes it change state (synctrack.go).
	// deleted: a reload removes it, from state deletedFrom (notify_deleted).
	syncReason  vrrp.Reason
	deleted     bool
	deletedFrom vrrp.State
}

// addInstance creates and starts an instance.
func (d *Daemon) addInstance(ic config.Instance, now time.Time) *instance {
	in := &instance{cfg: ic, vips: newVIPSet(ic), state: vrrp.StateFault, hooks: d.hooksFor(ic)}
	in.timerKey = d.newTimer(in, timerVRRP)
	in.announceKey = d.newTimer(in, timerAnnounce)
	in.holdBackKey = d.newTimer(in, timerHoldBack)
	d.instances = append(d.instances, in)
	d.byName[ic.Name] = in
	d.vmacUp(in)
	in.conn = d.connFor(ic)
	in.conn.insts = append(in.conn.insts, in)
	in.conn.byVRID[ic.VRID] = in
	d.startInstance(in, now)
	return in
}

// startInstance creates the state machine once the socket has a source, and starts it.
func (d *Daemon) startInstance(in *instance, now time.Time) {
	c := in.conn
	if c.tc == nil {
		d.noteFault(in, c.err, now)
		return
	}
	sm, err := vrrp.NewInstance(d.smConfig(in.cfg, c.source))
	if err != nil {
		d.noteFault(in, err, now)
		return
	}
	in.sm = sm
	d.checkAdvertFits(in)
	err = d.links.Running(c.key.ifname)
	if err != nil {
		d.acts = sm.SetFault(now, true, vrrp.ReasonInterfaceDown, d.acts[:0])
		d.execute(in, now)
		in.faultErr = err
	}
	d.retrack(in, now)
	// A start delay starts the state machine as if that much later: BACKUP now, hearing
	// advertisements at once (an advertisement re-arms the timer as usual), but its first
	// Master_Down_Timer runs Master_Down_Interval after now + StartDelay, never sooner.
	d.acts = sm.Start(now.Add(in.cfg.StartDelay), d.acts[:0])
	d.execute(in, now)
}

// noteFault reports an instance without state machine as FAULT, once per cause.
func (d *Daemon) noteFault(in *instance, err error, now time.Time) {
	if in.faultErr == nil || err == nil || in.faultErr.Error() != err.Error() {
		in.faultErr = err
		d.log.Warn(fmt.Sprintf("(%s) Entering FAULT STATE", in.cfg.Name), "reason", errString(err))
		from := in.state
		in.state = vrrp.StateFault
		in.transitions++
		in.lastTransition = now
		d.publish(now)
		d.reportStateChange(in, from, now)
		if in.cfg.SyncGroup != "" {
			d.noteSyncTransition(in, from, vrrp.StateFault)
			d.syncDirty(now)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "unknown"
	}
	return err.Error()
}

// setFault sets or clears FAULT from the state of the instance's interface (err nil means
// usable).
func (d *Daemon) setFault(in *instance, err error, now time.Time) {
	if in.sm == nil {
		if err == nil && in.conn.tc != nil {
			in.faultErr = nil
			d.startInstance(in, now)
		} else if err != nil {
			d.noteFault(in, err, now)
		}
		return
	}
	if err != nil && in.cfg.DontTrackPrimary && errors.Is(err, transport.ErrInterfaceDown) {
		err = nil // dont_track_primary: its own link's state does not count
	}
	in.faultErr = err
	if (err != nil || in.trackFault || d.groupFault(in)) == in.sm.Fault() {
		return // a script's FAULT stays with the interface back
	}
	reason := vrrp.ReasonInterfaceDown
	if err == nil {
		reason = "" // the state machine says "fault cleared"
	} else {
		d.log.Warn(fmt.Sprintf("(%s) interface unusable", in.cfg.Name), "err", err)
	}
	d.acts = in.sm.SetFault(now, err != nil, reason, d.acts[:0])
	d.execute(in, now)
}

// sourceChanged gives the state machine the interface's new primary address.
func (d *Daemon) sourceChanged(in *instance, now time.Time) {
	if in.sm == nil {
		return
	}
	var err error
	d.acts, err = in.sm.Reconfigure(now, d.smConfig(in.cfg, in.conn.source), d.acts[:0])
	if err != nil {
		d.log.Error(fmt.Sprintf("(%s) cannot use new source address", in.cfg.Name), "source", in.conn.source.String(), "err", err)
		return
	}
	d.execute(in, now)
}

// execute carries out d.acts for in, in order.
func (d *Daemon) execute(in *instance, now time.Time) { d.executeActs(in, d.acts, now) }

// executeActs carries out acts for in, in order. The state machine puts a new master's
// first advertisement before everything else (vrrp.ActionKind), so it leaves before the
// transition is logged and published and before the VIPs are added, which may wait for
// netlink and for the crash record.
//
// The transition's log line is written last, after the VIPs and the announcements: a
// write to stderr (a pipe to journald or the container runtime) cost 50-100 µs of a
// takeover on the test machine, and keepalived's readers look for the line, not for its
// place among the actions.
func (d *Daemon) executeActs(in *instance, acts []vrrp.Action, now time.Time) {
	defer d.logTransitions()
	in.executing++
	defer func() { in.executing-- }()
	if supersedes(acts) {
		in.acted++
	}
	gen := in.acted
	d.armAhead(in, acts)
	for i := range acts {
		if in.acted != gen {
			return // superseded while it added or removed VIPs (busyread.go)
		}
		a := &acts[i]
		switch a.Kind {
		case vrrp.ActionStateChange:
			d.transition(in, a, now)
			// Published before the VIPs are added or removed (the actions that follow), so
			// whoever sees a VIP arrive on the host already reads the new state in /status.
			d.publish(now)
			d.hops.published = time.Since(now)
		case vrrp.ActionSendAdvert:
			d.send(in, a.Priority)
		case vrrp.ActionAddVIPs:
			d.addVIPs(in, a.VIPs)
			d.hops.vips = time.Since(now)
		case vrrp.ActionRemoveVIPs:
			d.removeVIPs(in, a.VIPs)
		case vrrp.ActionAnnounce:
			d.startAnnounce(in, now) // all its addresses, not only a.VIPs
			d.hops.announce = time.Since(now)
		case vrrp.ActionArmTimer:
			d.armTimer(in)
		case vrrp.ActionStopTimer:
			d.timers.Stop(in.timerKey)
		}
	}
	// What follows from the state, unless this is an advert sent between the chunks of
	// the same instance's own list (armAhead): that list carries it out at its end, after
	// its announcement, and the excluded VIPs added here first held the failover lab's
	// announcements back until all of a shared router's addresses were in.
	if in.sm != nil && (in.executing == 1 || supersedes(acts)) {
		master := in.sm.State() == vrrp.StateMaster
		// A break-first master holds its excluded VIPs with its VIPs, when its Adver_Timer
		// adds them (vrrp.Instance.VIPsPending), not at the takeover: a shared router's
		// hundreds beyond what an advert carries went on at once, beside the preempted
		// master's (issue 31's join lab).
		holding := master && !in.sm.VIPsPending()
		if holding != in.holdsExcluded && len(in.cfg.ExcludedVIPs) > 0 {
			d.excluded(in, holding)
			if in.acted != gen {
				return
			}
		}
		d.followMaster(in, master)
		if !master {
			d.stopAnnounce(in)
			d.clearHoldBack(in)
		}
	}
	if len(d.trk.other.dirty) > 0 {
		d.syncDirty(now)
	}
}

// armAhead arms the timer that acts end with before the rest is carried out: a new
// master's Adver_Timer comes after its VIPs in the state machine's list, and a takeover of
// hundreds of addresses (holdChunked) then sent no advert of its own until the last was
// in, past its backups' patience on a loaded host (issue 31's join lab: a router's first
// master went silent 370 ms while it added, and the joining node took the router too).
// Armed ahead, its adverts go out between the chunks; the list's own ArmTimer then sets
// the heap to wherever they moved the state machine's deadline.
func (d *Daemon) armAhead(in *instance, acts []vrrp.Action) {
	for i := len(acts) - 1; i >= 0; i-- {
		switch acts[i].Kind {
		case vrrp.ActionArmTimer:
			d.armTimer(in)
			return
		case vrrp.ActionStopTimer:
			return
		}
	}
}

// armTimer puts the state machine's running timer in the heap, at the state machine's
// deadline rather than the action's: a list carried out in pieces (a takeover's chunks,
// with adverts sent between them) may have moved it since, and the heap set back to the
// action's passed deadline would fire once for nothing and lose the timer (the failover
// lab's new master then went silent after its takeover).
func (d *Daemon) armTimer(in *instance) {
	if in.sm == nil || in.sm.Timer() == vrrp.TimerNone {
		d.timers.Stop(in.timerKey)
		return
	}
	d.timers.Set(in.timerKey, in.sm.Deadline())
}

// supersedes reports whether acts change what an earlier action list of the same
// instance may still be doing (instance.acted): a state change, or VIPs added or
// removed. An advertisement and its timer do not: a master's own Adver_Timer falls due
// between the chunks of its thousand addresses, and must not stop them.
func supersedes(acts []vrrp.Action) bool {
	for _, a := range acts {
		switch a.Kind {
		case vrrp.ActionStateChange, vrrp.ActionAddVIPs, vrrp.ActionRemoveVIPs:
			return true
		}
	}
	return false
}

func (d *Daemon) transition(in *instance, a *vrrp.Action, now time.Time) {
	in.state = a.To
	d.heldChanged = true // the publication that follows hands the held VIPs over
	in.transitions++
	in.lastTransition = now
	d.transitions = append(d.transitions, loggedTransition{in.cfg.Name, a.From, a.To, a.Reason})
	d.notifyTransition(in, a.To)
	d.reportStateChange(in, a.From, now)
	if in.cfg.SyncGroup != "" {
		d.noteSyncTransition(in, a.From, a.To)
	}
}

// loggedTransition is a transition whose log line executeActs has still to write.
type loggedTransition struct {
	name     string
	from, to vrrp.State
	reason   vrrp.Reason
}

// logTransitions writes the transitions' lines, in order.
func (d *Daemon) logTransitions() {
	for _, t := range d.transitions {
		// keepalived's wording, so log scrapers and humans used to it read the same.
		d.log.Info(fmt.Sprintf("(%s) Entering %s STATE", t.name, t.to), "from", t.from.String(), "reason", string(t.reason))
	}
	d.transitions = d.transitions[:0]
}

// reportStateChange tells Options.OnStateChange that in left from.
func (d *Daemon) reportStateChange(in *instance, from vrrp.State, now time.Time) {
	if d.opts.OnStateChange == nil || from == in.state {
		return
	}
	d.opts.OnStateChange(StateChange{Instance: in.cfg.Name, From: from, To: in.state, VRID: in.cfg.VRID,
		VIPs: in.vipPrefixes(), At: now})
}

// send builds one advertisement with priority and sends it to the group or to every
// unicast peer. It allocates nothing.
func (d *Daemon) send(in *instance, priority uint8) {
	// The state machine has counted this advertisement (advert_sent, pri_zero_sent): the
	// counters must reach the snapshot even on a master that receives nothing.
	d.dirty = true
	c := in.conn
	if c.tc == nil {
		return
	}
	cfg := in.sm.Config()
	cfg.AdvertisementFields(&d.out, priority)
	src := c.tc.Source()
	if in.cfg.Unicast() {
		for _, peer := range in.cfg.UnicastPeers {
			d.sendTo(in, src, peer)
		}
		return
	}
	d.sendTo(in, src, c.tc.Group())
}

func (d *Daemon) sendTo(in *instance, src, dst netip.Addr) {
	var err error
	if len(d.out.Addresses) == 0 { // a VRRPv2 instance without VIPs (vrrp/novip.go)
		d.buf, err = d.out.AppendMarshalNoAddresses(d.buf[:0], src, dst)
	} else {
		d.buf, err = d.out.AppendMarshalForm(d.buf[:0], src, dst, in.sm.Config().SendChecksumForm())
	}
	if err == nil && d.sends.take(in, d.buf, dst) {
		return
	}
	if err == nil {
		err = in.conn.tc.Send(d.buf, dst)
	}
	if err != nil {
		d.sendFailed(in, dst, err)
	}
}

// sendFailedWarnEvery is how often at most an instance's failed sends are logged: a
// master on a cut link, or with adverts its interface refuses, fails every interval.
const sendFailedWarnEvery = 10 * time.Second

// sendFailed counts an advertisement that did not go out, and warns of it at most once
// per sendFailedWarnEvery per instance, with the errno and how many failures were not
// logged since the last warning: a master whose adverts never leave is a silent mute
// master, whose backups take over while it keeps the VIPs. The interface check turns a
// dead link into FAULT.
func (d *Daemon) sendFailed(in *instance, dst netip.Addr, err error) {
	in.sendErrors++
	d.dirty = true
	now := time.Now()
	if !in.sendWarned.IsZero() && now.Sub(in.sendWarned) < sendFailedWarnEvery {
		in.sendSuppressed++
		return
	}
	errno := "none"
	var e unix.Errno
	if errors.As(err, &e) {
		errno = unix.ErrnoName(e)
	}
	d.log.Warn(fmt.Sprintf("(%s) advertisement not sent", in.cfg.Name), "dst", dst.String(), "errno", errno,
		"err", err, "suppressed", in.sendSuppressed, "send_errors_total", in.sendErrors)
	in.sendWarned, in.sendSuppressed = now, 0
}

// vipSet is an instance's addresses as package vip adds them (prefix, device, label),
// built once per configuration so that turning the state machine's prefixes back into
// them is a lookup.
type vipSet struct {
	vips     []vip.VIP      // config.Instance.VIPs, in order
	prefixes []netip.Prefix // their prefixes, shared by every snapshot and StateChange
	excluded []vip.VIP      // config.Instance.ExcludedVIPs
	index    map[netip.Prefix]int
}

func newVIPSet(ic config.Instance) vipSet {
	s := vipSet{
		vips:     make([]vip.VIP, len(ic.VIPs)),
		prefixes: make([]netip.Prefix, len(ic.VIPs)),
		excluded: make([]vip.VIP, len(ic.ExcludedVIPs)),
		index:    make(map[netip.Prefix]int, len(ic.VIPs)),
	}
	for i, v := range ic.VIPs {
		s.vips[i] = toVIP(v, ic.Interface)
		s.prefixes[i] = v.Prefix
		s.index[v.Prefix] = i
	}
	for i, v := range ic.ExcludedVIPs {
		s.excluded[i] = toVIP(v, ic.Interface)
	}
	return s
}

// toVIP is v with its device: the config layer resolves it to the instance's interface
// when the file names none; the fallback keeps an unresolved one usable.
func toVIP(v config.VIP, dev string) vip.VIP {
	if v.Dev != "" {
		dev = v.Dev
	}
	return vip.VIP{Prefix: v.Prefix, Dev: dev, Label: v.Label}
}

// vipPrefixes are the instance's addresses, built once per configuration: a snapshot of
// 255 instances, published on every state change, then allocates none (readers must not
// modify them).
func (in *instance) vipPrefixes() []netip.Prefix { return in.vips.prefixes }

// vipFor returns the configured VIP (with its device and label) of prefix p, which the
// state machine took from the same configuration.
func (in *instance) vipFor(p netip.Prefix) vip.VIP {
	if i, ok := in.vips.index[p]; ok {
		return in.vips.vips[i]
	}
	return vip.VIP{Prefix: p, Dev: in.cfg.Interface}
}

// addVIPs puts the instance's VIPs on their interfaces as it becomes master.
//
// An address that is on its interface already without vrrpd having added it (the node's
// own /32 or /128, an API-server VIP that kube-vip or another keepalived holds, or a VIP
// listed by mistake) is left alone: never recorded, never removed, counted in
// vrrpd_vip_preexisting_total and logged. The instance still serves it, advertising and
// announcing as any master does, rather than going FAULT, because that is what keeps the
// wire consistent: the address is on this node, so this node's adverts and gratuitous ARPs
// point at where it really is. A FAULT here would hand mastership to another node, which
// would then add the same address, and two hosts would answer for it.
func (d *Daemon) addVIPs(in *instance, ps []netip.Prefix) {
	d.vipl = d.vipl[:0]
	for _, p := range ps {
		d.vipl = append(d.vipl, in.vipFor(p))
	}
	d.hold(in, in.cfg.Name, d.vipl)
}

// holdChunk is how many addresses one call of vipStore.Hold adds before the loop sends
// the advertisements that fell due meanwhile (holdChunked). An IPv4 add costs 50-200 µs
// on the test machine, but an IPv6 add costs more the more addresses the interface has:
// each add makes the kernel walk the interface's multicast groups (ipv6_find_idev ->
// ipv6_mc_up), one solicited-node group per VIP, so 2,000 IPv6 adds take 0.85 s of
// system time against 0.18 s for 1,000, about 0.8 ms each near 2,000. Eight of those are
// 7 ms, well inside the three intervals a backup waits even on a host loaded enough to
// give the process a ninth of a core; 64 were 50 ms, half a second under that load
// (issue 31's lab at 2,000 Services). The advert check between chunks is a heap peek.
const holdChunk = 8

// hold adds vs for holder and reports the foreign ones. The crash record is written once
// for all of them, before the first is added: by Hold itself, or for more than holdChunk
// by Reserve (holdChunked).
func (d *Daemon) hold(in *instance, holder string, vs []vip.VIP) {
	if len(vs) > holdChunk {
		d.holdChunked(in, holder, vs)
		return
	}
	d.holdSome(in, holder, vs)
}

// holdChunked adds thousands of addresses (one instance's VIPs and excluded VIPs beyond
// an advert's capacity, issue 31) holdChunk at a time, and between the chunks sends the
// advertisements that fell due, its own instance's included once its Adver_Timer is armed.
// The record is written once, ahead, by Reserve in a turn of its own (turns nest: inside
// a wake-up's, the wake-up's EndTurn writes what is left).
func (d *Daemon) holdChunked(in *instance, holder string, vs []vip.VIP) {
	// vs is often the loop's scratch (d.vipl), which an advert sent between two chunks
	// may reuse; and collectAdverts' own scratch may be in use further up the stack.
	vs = slices.Clone(vs)
	d.vips.BeginTurn()
	defer d.endTurn()
	if err := d.vips.Reserve(vs...); err != nil {
		d.log.Error(fmt.Sprintf("(%s) cannot record the VIPs ahead", in.cfg.Name), "err", err) // each Hold records its own
	}
	gen := in.acted
	for len(vs) > 0 {
		n := min(len(vs), holdChunk)
		if !d.holdSome(in, holder, vs[:n]) {
			return // as one Hold stops at a kernel error; checkVIPs tries again
		}
		vs = vs[n:]
		if len(vs) > 0 {
			d.advertsWhileBusy()
			if in.acted != gen {
				// An advert read meanwhile made it act again (a better master: it
				// stepped down and released what was added); the rest is not wanted.
				return
			}
		}
	}
}

// release removes vs for holder; more than holdChunk of them, holdChunk at a time with the
// adverts that fell due sent between (as holdChunked: a step-down of thousands of addresses
// takes as long as their takeover), in a turn of its own so that the record is written once.
func (d *Daemon) release(holder string, vs []vip.VIP) error {
	if len(vs) <= holdChunk {
		return d.vips.Release(holder, vs...)
	}
	vs = slices.Clone(vs) // see holdChunked
	d.vips.BeginTurn()
	defer d.endTurn()
	var errs []error
	for len(vs) > 0 {
		n := min(len(vs), holdChunk)
		if err := d.vips.Release(holder, vs[:n]...); err != nil {
			errs = append(errs, err)
		}
		vs = vs[n:]
		if len(vs) > 0 {
			d.releaseAdvert()
			d.advertsWhileBusy()
		}
	}
	return errors.Join(errs...)
}

// advertsWhileBusy sends, from within a wake-up's slow VIP work, the advertisements that
// fell due meanwhile, on scratch of its own: the loop's (acts, due) may be in use further
// up the stack; then it reads what arrived meanwhile (readWhileBusy). Outside a wake-up
// or a reload (start, shutdown) it does nothing.
func (d *Daemon) advertsWhileBusy() {
	if d.wake.now.IsZero() {
		return
	}
	acts, due := d.acts, d.due
	d.acts, d.due = d.holdActs, d.holdDue
	// A call nested in this one (an advert sent here whose instance goes on to add or
	// remove addresses, between whose chunks this runs again) gets scratch of its own:
	// shared, it would overwrite the list of due instances this call is walking, and an
	// instance already popped from the timer heap would never be sent. fireTimers keeps
	// the case the join lab hit from nesting at all (a fired instance's list is under way
	// until its turn); this keeps any other from losing an advert.
	d.holdActs, d.holdDue = nil, nil
	d.advertsBetween(d.wake.now, d.wake.woke)
	d.holdActs, d.holdDue = d.acts, d.due
	d.acts, d.due = acts, due
	d.readWhileBusy()
}

// holdSome is one Hold, its foreign addresses counted and logged; false on an error.
func (d *Daemon) holdSome(in *instance, holder string, vs []vip.VIP) bool {
	foreign, err := d.vips.Hold(holder, vs...)
	for _, v := range foreign {
		in.preexisting++
		d.dirty = true
		d.log.Warn(fmt.Sprintf("(%s) VIP is on the interface already and was not added by vrrpd: serving it without adding or ever removing it", in.cfg.Name), "vip", v.String())
	}
	if err != nil {
		d.linkTrouble = true // checkVIPs tries again at the next poll, a second from now
		d.log.Error(fmt.Sprintf("(%s) cannot add VIPs", in.cfg.Name), "err", err)
		return false
	}
	return true
}

func (d *Daemon) removeVIPs(in *instance, ps []netip.Prefix) {
	// Held back and never added: nothing to release (holdback.go).
	ps = d.dropHoldBack(in, ps)
	d.vipl = d.vipl[:0]
	for _, p := range ps {
		d.vipl = append(d.vipl, in.vipFor(p))
	}
	defer d.releasingFor(in)()
	if err := d.release(in.cfg.Name, d.vipl); err != nil {
		d.log.Error(fmt.Sprintf("(%s) cannot remove VIPs", in.cfg.Name), "err", err)
	}
}

// releasingFor makes in, a router that stepped down for a better master in the
// Kubernetes mode (Config.BreakFirstPreempt), go on advertising its own priority between
// the chunks of its release (releaseAdvert), and returns what ends that. The better
// master, a vrrpd that preempted break-first and waits to add the addresses, hears a
// lower priority and waits on (vrrp's extendHandoff) until the last of them is gone: its
// wait alone, sized for a removal of about a millisecond an address, was short of a
// loaded host's release of 180 (issue 31's join lab: 300 ms, and the later addresses on
// both hosts). Backups below that priority take the adverts for a master's and re-arm
// their timers; above it is only the new master. Standalone (keepalived's peers) a
// backup stays silent, as RFC 5798 has it.
func (d *Daemon) releasingFor(in *instance) func() {
	if !in.cfg.BreakFirstPreempt || in.sm == nil || in.sm.State() != vrrp.StateBackup || d.releasing != nil {
		return func() {}
	}
	d.releasing, d.releasingSent = in, time.Time{}
	return func() { d.releasing = nil }
}

// releaseAdvert sends the releasing router's advert (releasingFor), at most every
// quarter interval.
func (d *Daemon) releaseAdvert() {
	in := d.releasing
	if in == nil || in.sm == nil || in.sm.State() != vrrp.StateBackup {
		return
	}
	if now := time.Now(); now.Sub(d.releasingSent) >= in.cfg.AdvertInterval/4 {
		d.releasingSent = now
		d.send(in, in.sm.Priority())
	}
}

// excludedHolder names an instance's virtual_ipaddress_excluded as a holder of its own,
// apart from its VIPs.
func excludedHolder(in *instance) string { return in.cfg.Name + " (excluded)" }

// excluded adds or removes the virtual_ipaddress_excluded with the VIPs.
func (d *Daemon) excluded(in *instance, add bool) {
	in.holdsExcluded = add
	if add {
		d.hold(in, excludedHolder(in), in.vips.excluded)
		return
	}
	defer d.releasingFor(in)()
	if err := d.release(excludedHolder(in), in.vips.excluded); err != nil {
		d.log.Error(fmt.Sprintf("(%s) excluded VIPs", in.cfg.Name), "add", add, "err", err)
	}
}

// removeInstance resigns the instance (priority 0 if master), drops its VIPs and forgets it.
func (d *Daemon) removeInstance(in *instance, now time.Time) {
	d.stopInstance(in, now)
	d.vmacDown(in)
	c := in.conn
	c.byVRID[in.cfg.VRID] = nil
	c.insts = slices.DeleteFunc(c.insts, func(x *instance) bool { return x == in })
	if len(c.insts) == 0 {
		d.closeConn(c)
		delete(d.conns, c.key)
	}
	d.freeTimer(in.timerKey)
	d.freeTimer(in.announceKey)
	d.clearHoldBack(in)
	d.freeTimer(in.holdBackKey)
	d.instances = slices.DeleteFunc(d.instances, func(x *instance) bool { return x == in })
	delete(d.byName, in.cfg.Name)
	d.trk.notifier.Forget(in.cfg.Name)
}

// stopInstance is the graceful end of one instance: Shutdown, and the excluded VIPs go.
// A master's VIPs go before its priority-0 advertisement (resignBreakFirst).
func (d *Daemon) stopInstance(in *instance, now time.Time) {
	if in.sm != nil {
		d.acts = resignBreakFirst(in.sm.Shutdown(now, d.acts[:0]))
		d.execute(in, now)
	}
	if in.holdsExcluded {
		d.excluded(in, false)
	}
	d.stopAnnounce(in)
	d.timers.Stop(in.timerKey)
}

// resignBreakFirst moves a resigning master's RemoveVIPs ahead of its priority-0
// advertisement. The state machine orders them as keepalived does (the advertisement
// first, so backups start their Skew_Time while this router still answers), which leaves
// the VIPs on two nodes should this router be held up between the two for longer than the
// new master's Skew_Time: 52/256 of an interval for the second-ranked node (2 ms at 10 ms
// adverts), less than a loaded host may leave a thread unscheduled. A resignation is
// chosen, not forced (the instance removed by a reload, as for a node excluded from load
// balancers, or vrrpd stopping), so it can break before it makes: no backup starts its
// Skew_Time before the VIPs are off this node, and the hole grows by one netlink round
// trip. Other departures from MASTER (FAULT, a higher-priority master) keep the state
// machine's order.
func resignBreakFirst(acts []vrrp.Action) []vrrp.Action {
	send := slices.IndexFunc(acts, func(a vrrp.Action) bool { return a.Kind == vrrp.ActionSendAdvert && a.Priority == 0 })
	rm := slices.IndexFunc(acts, func(a vrrp.Action) bool { return a.Kind == vrrp.ActionRemoveVIPs })
	if send < 0 || rm < send {
		return acts
	}
	r := acts[rm]
	copy(acts[send+1:rm+1], acts[send:rm])
	acts[send] = r
	return acts
}

// shutdown stops every instance: masters remove their VIPs and send priority 0.
func (d *Daemon) shutdown(now time.Time) {
	for _, in := range d.instances {
		d.stopInstance(in, now)
		d.vmacDown(in)
	}
	d.setStatic(config.Static{})
	for _, c := range d.conns {
		d.closeConn(c)
	}
	d.stopGroups(now)
	d.garp.Close()
	d.links.Close()
	d.publish(now)
	d.log.Info("stopped")
}

// reload applies a new configuration (see Daemon.Reload).
func (d *Daemon) reload(cfg *config.Config, now time.Time) error {
	if err := validate(cfg); err != nil {
		return err
	}
	if err := d.checkNamespace(cfg); err != nil {
		return err
	}
	// One turn of the VIP record: a node excluded from load balancers resigns every
	// instance in this one reload, and a record write for each removal made the last of
	// 128 resignations wait 0.7 s (TestExcludeAtCapacityWritesOnce, test/e2e).
	d.vips.BeginTurn()
	defer d.endTurn()
	// A wake-up's clock (as fireTimers'), so that the adverts falling due while the
	// reload adds or removes thousands of addresses go out between its steps
	// (advertsWhileBusy): a reload of a shared router's hundreds of new addresses
	// otherwise kept every master's adverts back past the backups' patience (issue 31).
	if d.wake.now.IsZero() {
		d.wake.now, d.wake.woke = now, time.Now()
		defer d.endWake()
	}
	d.reloading = true
	defer func() { d.reloading = false }() // before endWake: its packets may step down
	cfg, d.vmacOf = vmacConfig(cfg)
	d.heldChanged = true // a master's VIPs may have changed: the publication below hands them over
	d.setScripts(cfg)
	d.setStatic(cfg.Static)
	d.setTrackers(cfg)
	d.initGroups(cfg, now)
	// A virtual router whose name changes keeps running under its new one.
	d.renameMoved(cfg)
	keep := make(map[string]bool, len(cfg.Instances))
	for _, ic := range cfg.Instances {
		keep[ic.Name] = true
	}
	// Additions before releases across instances: the bridge holds every address that
	// moves from one master here to another for the length of the passes below.
	// What this node holds before anything changes: a master's new address that none of
	// it is held back (holdback.go).
	held := d.heldAddrs()
	bridged := d.bridgeMoves(cfg)
	// Removed instances first, and instances moving to another socket or VRID, so that
	// their routes are free for the new ones.
	var restart []config.Instance
	for _, in := range slices.Clone(d.instances) {
		if !keep[in.cfg.Name] {
			d.log.Info(fmt.Sprintf("(%s) removed by reload", in.cfg.Name))
			in.deleted, in.deletedFrom = true, in.state
			d.removeInstance(in, now)
			d.advertsWhileBusy()
		}
	}
	var kept, reconfigured, added int
	for _, ic := range cfg.Instances {
		in := d.byName[ic.Name]
		switch {
		case in == nil:
			restart = append(restart, ic)
		case in.cfg.Equal(ic):
			in.cfg.Source = ic.Source
			kept++
		case sameRoute(in.cfg, ic) && in.sm != nil:
			if err := d.reconfigure(in, ic, held, now); err != nil {
				// Not applicable in place: start it afresh, where the error shows
				// as FAULT with its reason.
				d.log.Warn(fmt.Sprintf("(%s) restarted by reload", ic.Name), "err", err)
				d.removeInstance(in, now)
				restart = append(restart, ic)
				continue
			}
			reconfigured++
			// A shared router's reconfiguration can add or remove hundreds of
			// addresses: the others' adverts go out between routers too.
			d.advertsWhileBusy()
		default:
			d.log.Info(fmt.Sprintf("(%s) restarted by reload", ic.Name))
			d.removeInstance(in, now)
			restart = append(restart, ic)
		}
	}
	for _, ic := range restart {
		d.addInstance(ic, now)
		added++
	}
	if len(bridged) > 0 {
		if err := d.release(bridgeHolder, bridged); err != nil {
			d.log.Error("cannot end the hold of the VIPs moved by reload", "err", err)
		}
	}
	for _, in := range d.instances {
		d.retrack(in, now) // scripts that restarted are back in init
	}
	d.resyncGroups(now)
	d.log.Info("configuration reloaded", "kept", kept, "reconfigured", reconfigured, "started", added)
	d.publish(now)
	return nil
}

// bridgeHolder holds, for the length of one reload, the addresses that move from one
// master on this node to another (bridgeMoves); no instance name has brackets.
const bridgeHolder = "(reload)"

// bridgeMoves takes a hold, under bridgeHolder, on every address that an instance master
// here holds now and is about to let go of (the new config drops it from that instance,
// removes the instance or restarts it) while another instance, master here and kept in
// place by this reload, lists it in cfg. The reload goes instance by instance, removals
// first, so without it a move from router A to router B (docs/design/router-sharing.md
// §4 case 1, one status write) would delete the address and add it back a moment later;
// with it, the address's hold count never reaches zero. A single instance's own changes
// are not bridged: their order is the state machine's (reconfigure). The reload releases
// the bridge after every addition; if B's change fails and it restarts as backup, the
// address then goes, as it would have without the bridge.
func (d *Daemon) bridgeMoves(cfg *config.Config) []vip.VIP {
	next := make(map[string]*config.Instance, len(cfg.Instances))
	for i := range cfg.Instances {
		next[cfg.Instances[i].Name] = &cfg.Instances[i]
	}
	// inPlace: the instance is master and runs on through the reload (kept or
	// reconfigured in place, as reload decides below), so it holds what its new config
	// lists.
	inPlace := func(in *instance, ic *config.Instance) bool {
		return in != nil && ic != nil && in.sm != nil && in.sm.State() == vrrp.StateMaster &&
			(in.cfg.Equal(*ic) || sameRoute(in.cfg, *ic))
	}
	// What each master here holds now and gives up, and what stays with a holder.
	listed := func(ic *config.Instance) map[addrDev]bool {
		s := newVIPSet(*ic)
		m := make(map[addrDev]bool, len(s.vips)+len(s.excluded))
		for _, v := range slices.Concat(s.vips, s.excluded) {
			m[keyOf(v)] = true
		}
		return m
	}
	leaving, kept := map[addrDev]vip.VIP{}, map[addrDev]bool{}
	for _, in := range d.instances {
		held := in.heldVIPs() // not what it holds back: never added, nothing to bridge
		if len(held) == 0 {
			continue
		}
		ic := next[in.cfg.Name]
		var still map[addrDev]bool
		if inPlace(in, ic) {
			still = listed(ic)
		}
		for _, v := range held {
			if still[keyOf(v)] {
				kept[keyOf(v)] = true
			} else {
				leaving[keyOf(v)] = v
			}
		}
	}
	for k := range kept {
		delete(leaving, k) // another holder keeps it on the interface anyway
	}
	if len(leaving) == 0 {
		return nil
	}
	var bridged []vip.VIP
	for i := range cfg.Instances {
		ic := &cfg.Instances[i]
		in := d.byName[ic.Name]
		if !inPlace(in, ic) {
			continue
		}
		for k := range listed(ic) {
			if v, ok := leaving[k]; ok {
				bridged = append(bridged, v)
				delete(leaving, k)
			}
		}
	}
	if len(bridged) == 0 {
		return nil
	}
	// Foreign addresses come back as such and are neither held nor released.
	if _, err := d.vips.Hold(bridgeHolder, bridged...); err != nil {
		d.log.Error("cannot hold the VIPs moved by reload", "err", err)
	}
	return bridged
}

// sameRoute reports whether b can take over a's socket and VRID slot in place.
func sameRoute(a, b config.Instance) bool {
	return a.Interface == b.Interface && a.Family == b.Family && a.VRID == b.VRID && a.VMAC.Equal(b.VMAC) &&
		a.UnicastSrc == b.UnicastSrc && a.Unicast() == b.Unicast() &&
		(a.Unicast() || a.MulticastGroup == b.MulticastGroup)
}

// reconfigure applies changed settings to a running instance, keeping its state. held
// are the addresses this node held before the reload: a master that stays master adds
// the others only after the hold-back (holdback.go).
func (d *Daemon) reconfigure(in *instance, ic config.Instance, held map[addrDev]bool, now time.Time) error {
	old := in.cfg
	vc := d.smConfig(ic, in.conn.source)
	if err := vc.Validate(); err != nil {
		return err
	}
	nvips := newVIPSet(ic)
	// The excluded VIPs are the daemon's business, not the state machine's. A master
	// whose list changed adds the new ones now, before anything below removes an
	// address (one the state machine stops advertising may be one of them: a shared
	// router's list is cut at what an advert carries, and the cut moves as Services
	// come and go), and drops the old ones at the end: an address that stays is never
	// touched. Dropping all and adding all back removed and re-added hundreds of IPv6
	// addresses a reload, each add costing more the more the interface has, and left
	// them off the interface meanwhile (issue 31's lab at 2,000 Services).
	var exclAdd, exclDrop []vip.VIP
	if in.holdsExcluded && !slices.Equal(old.ExcludedVIPs, ic.ExcludedVIPs) {
		exclAdd, exclDrop = vipDiff(in.vips.excluded, nvips.excluded)
		if len(exclAdd) > 0 {
			d.hold(in, excludedHolder(in), exclAdd)
		}
	}
	d.routesChanged(in, ic)
	// A VIP that stays but moves to another device or label: the state machine sees the
	// same prefix and asks for nothing, so the daemon moves it itself.
	var moved []vip.VIP
	if in.sm.State() == vrrp.StateMaster {
		for _, n := range nvips.vips {
			if i, ok := in.vips.index[n.Prefix]; ok && in.vips.vips[i] != n && !in.heldBack(n.Prefix) {
				o := in.vips.vips[i]
				if err := d.vips.Release(in.cfg.Name, o); err != nil {
					d.log.Error(fmt.Sprintf("(%s) cannot move VIP", in.cfg.Name), "vip", o.String(), "err", err)
				}
				moved = append(moved, n)
			}
		}
	}
	wasMaster := in.sm.State() == vrrp.StateMaster && !in.sm.VIPsPending()
	acts, err := in.sm.Reconfigure(now, vc, d.acts[:0])
	if err != nil {
		// The caller restarts the instance, which releases the old list only.
		if rerr := d.release(excludedHolder(in), exclAdd); rerr != nil {
			d.log.Error(fmt.Sprintf("(%s) excluded VIPs", in.cfg.Name), "add", false, "err", rerr)
		}
		return err
	}
	d.acts = acts
	// RemoveVIPs of the old config must see the old devices and labels.
	for i := range d.acts {
		if d.acts[i].Kind == vrrp.ActionRemoveVIPs {
			d.removeVIPs(in, d.acts[i].VIPs)
			d.acts[i].Kind = 0
		}
	}
	in.cfg, in.vips, in.hooks = ic, nvips, d.hooksFor(ic)
	if wasMaster && in.sm.State() == vrrp.StateMaster &&
		!slices.ContainsFunc(d.acts, func(a vrrp.Action) bool { return a.Kind == vrrp.ActionStateChange }) {
		d.holdBackAdditions(in, d.acts, held, now)
	}
	d.execute(in, now)
	if len(moved) > 0 {
		d.hold(in, in.cfg.Name, moved)
	}
	if len(exclDrop) > 0 {
		if err := d.release(excludedHolder(in), exclDrop); err != nil {
			d.log.Error(fmt.Sprintf("(%s) excluded VIPs", in.cfg.Name), "add", false, "err", err)
		}
	}
	if in.holdsExcluded && len(in.vips.excluded) == 0 {
		in.holdsExcluded = false
	}
	return nil
}

// vipDiff returns what next has and cur has not (add), and what cur has and next has
// not (drop).
func vipDiff(cur, next []vip.VIP) (add, drop []vip.VIP) {
	in := make(map[vip.VIP]bool, len(cur))
	for _, v := range cur {
		in[v] = true
	}
	for _, v := range next {
		if !in[v] {
			add = append(add, v)
		}
		delete(in, v)
	}
	for _, v := range cur {
		if in[v] {
			drop = append(drop, v)
			delete(in, v)
		}
	}
	return add, drop
}

// errNotRunning is Reload's answer once Run has returned.
var errNotRunning = errors.New("daemon: not running")
