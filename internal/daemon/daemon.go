package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/conflict"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/route"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Options configure a Daemon.
type Options struct {
	// StateDir holds the crash-safe record of the VIPs this daemon added (package vip).
	// One directory per daemon; empty means vip.DefaultStateDir.
	StateDir string
	// Logger receives the daemon's logs; nil means slog.Default().
	Logger *slog.Logger
	// OnStateChange, if set, is called on every state change of an instance, from the
	// daemon's loop: it must return at once (hand the change to another goroutine, and
	// drop it rather than block).
	OnStateChange func(StateChange)
	// PacketSocket sends multicast advertisements as frames on a packet socket instead of
	// through the kernel's IP stack (the default, as keepalived does), bypassing the
	// host's netfilter output hooks: transport.Options.PacketSocket.
	PacketSocket bool
	// AwaitConfig says that the configuration Run starts with is a placeholder (Kubernetes
	// mode, before the group or its cache is read): Ready fails until a Reload applies one.
	AwaitConfig bool
	// ConflictProbes paces the search for other holders of the masters' VIPs (package
	// conflict: its defaults when zero); NoConflictProbes turns it off.
	ConflictProbes   conflict.Settings
	NoConflictProbes bool
	// OnConflict, if set, hears each conflict that starts or ends (conflict.Options.OnChange),
	// from the detector's goroutine: it must return at once.
	OnConflict func(conflict.Change)

	// Tuning that no caller has needed to change (zero means the default):
	//
	// batchSize is how many packets one read hands to the loop: transport.DefaultBatchSize.
	batchSize int
	// pollInterval is how often the loop turns without any event: the heartbeat, track
	// files, and the interfaces while one of them is in trouble: one second.
	pollInterval time.Duration
	// linkPollInterval is how often the interfaces and the masters' VIPs are re-read from
	// the kernel although netlink events say nothing changed, as a safety net: ten seconds.
	linkPollInterval time.Duration
	// publishInterval bounds how stale the published counters may be; state changes are
	// published at once: 500 ms.
	publishInterval time.Duration
	// NotifyTimeout bounds one notify hook run: notify.DefaultTimeout.
	NotifyTimeout time.Duration

	// The daemon's ties to the host (host.go); nil means the real one. Only the package's
	// tests replace them.
	vips   vipStore
	garp   announcers
	open   openSocket
	links  links
	vmacs  vmacHost
	routes routeStore
	// conflicts is nil for conflict.New, unless NoConflictProbes.
	conflicts conflictWatch
}

// A Daemon runs a set of virtual routers. Create it with New, run it with Run; Reload and
// Snapshot are safe to call from any goroutine while it runs.
type Daemon struct {
	opts Options
	log  *slog.Logger

	vips  vipStore
	garp  announcers
	links links
	vmacs vmacHost

	routes routeStore // virtual and static routes and rules (routes.go)
	rt     routing

	// conflicts looks for other holders of the masters' VIPs off the loop (conflicts.go);
	// nil when turned off. heldChanged says a state changed or a reload ran since the
	// held set was last handed to it.
	conflicts   conflictWatch
	heldChanged bool

	// vmacOf are the macvlans of the running configuration's use_vmac instances (vmac.go).
	vmacOf map[string]vip.VMAC

	// mu guards everything below once Run has started. Two goroutines take it: the loop
	// (packets, reloads, interface checks) and the timer thread (ptimer.go), which runs
	// the due timers itself so that a takeover's advertisement leaves without waking the
	// loop first. Neither holds it while waiting.
	mu sync.Mutex
	// timer is the one timerfd, armed at armed: the heap's earliest deadline, or a little
	// before it for a Master_Down_Timer (see spinLead); zero when disarmed.
	timer *timerThread
	armed time.Time
	// timerWoke is when the timer thread woke for the timers fireTimers is running (after
	// its spin, before it waited for mu), zero when something else runs them: the
	// takeover's debug line measures from it, so that a wait for the lock counts as the
	// daemon's.
	timerWoke time.Time

	instances []*instance
	byName    map[string]*instance
	conns     map[connKey]*conn
	timers    timerHeap
	owners    []timerOwner // by timer key
	publishK  int          // timer key of the deferred snapshot publication
	graceFrom time.Time    // when deferTakeover first held back the due takeovers, zero if not
	lastBatch time.Time    // when the last batch of packets was handled
	// linksChecked is when checkInterfaces last read the interfaces and VIPs from the
	// kernel; linkTrouble, that it found a socket not open or an interface not running.
	linksChecked time.Time
	linkTrouble  bool
	// The warnings of a starved process, spaced.
	lateWarn, unreadWarn warnLimit
	dirty                bool // counters changed since the last publication

	acts  []vrrp.Action      // reused action slice
	adv   vrrp.Advertisement // reused decode target
	out   vrrp.Advertisement // reused encode source
	buf   []byte             // reused encode buffer
	ann   []netip.Addr       // reused announce address list
	due   []*instance        // reused list of masters sending in one wake-up
	sends sendBatch          // advertisements held for one sendmmsg (sendbatch.go)
	// firedKeys and fired are the timers of one wake-up (fireTimers), reused.
	firedKeys []int
	fired     []firedTimer
	vipl      []vip.VIP // reused VIP list
	// hops are how long after the wake-up (executeActs' now) the last state's publication,
	// VIP add and announcement's queueing returned, for the takeover's debug line.
	hops struct{ published, vips, announce time.Duration }
	// wake is the current wake-up's clock (fireTimers, handleBatch) for the advertisements
	// a long VIP add sends between its chunks (holdChunked); zero outside a wake-up.
	wake struct{ now, woke time.Time }
	// holdActs and holdDue are collectAdverts' scratch while a chunked add has the loop's
	// own (acts, due) in use further up the stack.
	holdActs []vrrp.Action
	holdDue  []*instance
	// busyActs and busyAdv are handlePacket's scratch while readWhileBusy has the loop's
	// own in use further up the stack; busyReading, that it runs; deferred, the packets
	// it read for routers not in Backup, handled when the wake-up ends (busyread.go).
	busyActs    []vrrp.Action
	busyAdv     vrrp.Advertisement
	busyReading bool
	reloading   bool // reload is under way: readWhileBusy steps no master down
	deferred    []deferredPacket
	// releasing is a router that stepped down and releases its addresses, advertising
	// meanwhile (releasingFor), and releasingSent when it last did.
	releasing     *instance
	releasingSent time.Time
	// current is the batch handleBatch is handling and currentNext its next packet:
	// readWhileBusy handles the rest of it first.
	current     *batch
	currentNext int
	// transitions wait for executeActs' end to be logged (logTransitions), reused.
	transitions []loggedTransition

	batches chan *batch
	// parked is the batch the loop took from batches and holds while it waits for d.mu:
	// the lock's holder may handle it meanwhile (parkBatch, busyread.go).
	parked atomic.Pointer[batch]
	// unhandled counts the batches a reader has read and not yet seen handled
	// (deferTakeover).
	unhandled atomic.Int32
	reloads   chan reloadRequest
	ifEvents  chan struct{}
	// conflictEnds are the VIPs whose second holder stopped answering (conflicts.go).
	conflictEnds chan conflict.Target
	done         chan struct{}

	snap      atomic.Pointer[metrics.Snapshot]
	heartbeat metrics.Heartbeat

	trk      tracking                   // vrrp_script and notify hooks (track.go)
	health   atomic.Pointer[healthRule] // republished with the snapshot (health.go)
	timerErr atomic.Pointer[error]      // why the timer thread gave up (ptimer.go): Health and Live fail
	// configured is set once a real configuration is applied: by Run's start, or with
	// Options.AwaitConfig by the first Reload (Ready, health.go).
	configured atomic.Bool
}

// StateChange is one instance's change of state, for Options.OnStateChange.
type StateChange struct {
	Instance string // its name: in Kubernetes mode the group's instance key
	From, To vrrp.State
	VRID     uint8
	VIPs     []netip.Prefix // the instance's addresses (shared: do not modify)
	At       time.Time
}

type timerOwner struct {
	in   *instance
	kind timerKind
}

type timerKind uint8

const (
	timerVRRP     timerKind = iota + 1 // the instance's state machine timer
	timerAnnounce                      // the instance's GARP / NA schedule
	timerPublish                       // the deferred snapshot
	timerHoldBack                      // the instance's held-back reload additions (holdback.go)
)

type reloadRequest struct {
	cfg  *config.Config
	done chan error
}

// New prepares a daemon: it locks the state directory. Nothing touches the network until
// Run. The daemon adds VIPs with package vip, announces them with package garp, sends and
// receives through internal/transport and watches interfaces on netlink.
func New(opts Options) (*Daemon, error) {
	if opts.StateDir == "" {
		opts.StateDir = vip.DefaultStateDir
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.batchSize <= 0 {
		opts.batchSize = transport.DefaultBatchSize
	}
	if opts.pollInterval <= 0 {
		opts.pollInterval = time.Second
	}
	if opts.linkPollInterval <= 0 {
		opts.linkPollInterval = 10 * time.Second
	}
	if opts.publishInterval <= 0 {
		opts.publishInterval = 500 * time.Millisecond
	}
	if opts.vips == nil {
		m, err := vip.New(opts.StateDir)
		if err != nil {
			return nil, err
		}
		opts.vips = m
	}
	if opts.routes == nil {
		m, err := route.Open(opts.StateDir)
		if err != nil {
			return nil, err
		}
		opts.routes = m
	}
	if opts.garp == nil {
		opts.garp = &garpAnnouncers{log: opts.Logger}
	}
	if opts.open == nil {
		opts.open = openTransport
	}
	if opts.vmacs == nil {
		// Its crash record beside the VIPs', in the directory vip.New locked.
		v, err := vip.NewRecordedVMACs(nil, opts.StateDir)
		if err != nil {
			return nil, err
		}
		opts.vmacs = v
	}
	if opts.links == nil {
		opts.links = &netlinkLinks{log: opts.Logger}
	}
	d := &Daemon{
		opts:         opts,
		log:          opts.Logger,
		vips:         opts.vips,
		garp:         opts.garp,
		links:        opts.links,
		vmacs:        opts.vmacs,
		routes:       opts.routes,
		conflicts:    opts.conflicts,
		byName:       make(map[string]*instance),
		conns:        make(map[connKey]*conn),
		batches:      make(chan *batch, 16),
		reloads:      make(chan reloadRequest),
		ifEvents:     make(chan struct{}, 1),
		conflictEnds: make(chan conflict.Target, 16),
		done:         make(chan struct{}),
		buf:          make([]byte, 0, transport.MaxPacketSize),
		acts:         make([]vrrp.Action, 0, 16),
	}
	if d.conflicts == nil && !opts.NoConflictProbes {
		d.conflicts = conflict.New(conflict.Options{Settings: opts.ConflictProbes, Logger: opts.Logger, OnChange: d.conflictChanged})
	}
	d.publishK = d.newTimer(nil, timerPublish)
	d.initTracking()
	d.snap.Store(&metrics.Snapshot{})
	d.health.Store(&healthRule{stallLimit: d.stallLimit(0)})
	return d, nil
}

// Snapshot returns the latest published view of every instance; it implements
// metrics.Source.
func (d *Daemon) Snapshot() metrics.Snapshot {
	s := *d.snap.Load()
	if d.conflicts != nil {
		s.Conflicts = conflictsSnapshot(d.conflicts.Conflicts())
	}
	return s
}

// Reload replaces the running configuration (SIGHUP). Instances whose settings did not
// change keep their state, counters and VIPs; changed ones are reconfigured in place when
// the state machine allows it, else restarted; removed ones resign and drop their VIPs; new
// ones start. A removed instance whose interface, family and VRID a new name takes is
// renamed and kept or reconfigured as above (renameMoved). It returns when the loop has applied cfg, or the error that made it refuse
// cfg (nothing is then applied).
func (d *Daemon) Reload(ctx context.Context, cfg *config.Config) error {
	req := reloadRequest{cfg: cfg, done: make(chan error, 1)}
	select {
	case d.reloads <- req:
	case <-d.done:
		return errNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run recovers the VIPs a previous run left behind, starts every instance of cfg and runs
// the loop until ctx is cancelled. It then shuts down gracefully: every master sends
// priority 0 and removes its VIPs. It returns nil after a graceful stop.
func (d *Daemon) Run(ctx context.Context, cfg *config.Config) error {
	defer close(d.done)
	defer d.vips.Close()
	if err := validate(cfg); err != nil {
		return err
	}
	if err := d.checkNamespace(cfg); err != nil {
		return err
	}
	d.recoverVIPs()
	d.recoverRoutes()
	d.recoverVMACs()
	// Each link or address change wakes the loop to re-check the interfaces, coalesced so
	// that a burst costs one check.
	stopWatch := d.links.Watch(func() {
		select {
		case d.ifEvents <- struct{}{}:
		default:
		}
	})
	defer stopWatch()
	defer d.stopTracking()
	if d.conflicts != nil {
		// Started before the instances, so the first held set finds it listening; ended
		// (its sockets closed) before Run returns.
		cctx, cancel := context.WithCancel(ctx)
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			d.conflicts.Run(cctx)
		}()
		defer func() {
			cancel()
			<-ended
		}()
	}
	d.start(cfg, time.Now())
	if !d.opts.AwaitConfig {
		d.configured.Store(true)
	}
	return d.loop(ctx)
}

// recoverVIPs removes the VIPs a previous run left behind.
func (d *Daemon) recoverVIPs() {
	// Startup recovery: whatever a crashed run recorded is not ours any more. We start
	// as backup, so no address may stay until VRRP elects us again.
	removed, err := d.vips.Recover()
	for _, v := range removed {
		d.log.Info("removed stale VIP left by a previous run", "vip", v.String())
	}
	if err != nil {
		d.log.Warn("could not remove every stale VIP", "err", err)
	}
}

// start starts every instance of cfg, which validate accepted.
func (d *Daemon) start(cfg *config.Config, now time.Time) {
	cfg, d.vmacOf = vmacConfig(cfg)
	d.setScripts(cfg)
	d.setStatic(cfg.Static)
	d.setTrackers(cfg)
	d.initGroups(cfg, now)
	for _, ic := range cfg.Instances {
		d.addInstance(ic, now)
	}
	d.publish(now)
}

// loop waits for packets, reloads and interface events and handles each under d.mu; the
// timer thread handles the timers (fire).
func (d *Daemon) loop(ctx context.Context) error {
	timer, err := startTimerThread(d.fire, func(err error) {
		d.timerErr.Store(&err)
		d.log.Error("no timer fires any more: vrrpd must be restarted", "err", err)
	})
	if err != nil {
		return fmt.Errorf("daemon: timerfd: %w", err)
	}
	d.mu.Lock()
	d.timer = timer
	d.rearm()
	d.mu.Unlock()
	poll := time.NewTicker(d.opts.pollInterval)
	defer poll.Stop()
	for {
		// Every turn of the loop is a beat: a handler that never returns (or a timer
		// thread that never lets go of d.mu) stops them, and Health reports it
		// (health.go). The poll ticker makes a turn at least every pollInterval even when
		// nothing else happens.
		d.heartbeat.Beat(time.Now())
		select {
		case <-ctx.Done():
			// d.timer = nil first, under the lock: a fire in progress then cannot re-arm
			// the timerfd while Close releases it.
			d.mu.Lock()
			d.timer = nil
			d.mu.Unlock()
			timer.Close()
			d.mu.Lock()
			defer d.mu.Unlock()
			d.shutdown(time.Now())
			return nil
		case b := <-d.batches:
			d.parkBatch(b)
			d.mu.Lock()
			if d.takeParked(b) {
				now := time.Now()
				d.handleBatch(b, now)
				d.doneWith(b)
				d.maybePublish(now)
				d.rearm()
			}
			d.mu.Unlock()
		case req := <-d.reloads:
			d.mu.Lock()
			err := d.reload(req.cfg, time.Now())
			if err == nil {
				d.configured.Store(true)
			}
			req.done <- err
			d.rearm()
			d.mu.Unlock()
		case <-d.ifEvents:
			d.mu.Lock()
			d.checkInterfacesUnlocking(time.Now())
			d.rearm()
			d.mu.Unlock()
		case t := <-d.conflictEnds:
			d.mu.Lock()
			d.announceAgain(t)
			d.mu.Unlock()
		case ev := <-d.trk.events:
			d.mu.Lock()
			now := time.Now()
			d.scriptResults(ev, now)
			d.maybePublish(now)
			d.rearm()
			d.mu.Unlock()
		case <-poll.C:
			d.mu.Lock()
			d.poll(time.Now())
			d.rearm()
			d.mu.Unlock()
		}
	}
}

// spinLead is how long before a Master_Down_Timer's deadline the timer thread wakes, to
// wait out the rest awake. Waking a sleeping thread (and, on a virtual machine, an idle
// CPU) takes tens to hundreds of microseconds, which a takeover would otherwise add to
// its advertisement's delay. Only Master_Down_Timer gets it: it decides failover time,
// and a backup that hears its master re-arms it later long before the lead begins, so the
// thread spins only when a takeover is due. A master's Adver_Timer has the three
// intervals of its backups' patience to spare and is not worth a spinning CPU.
const spinLead = time.Millisecond

// fire is the timer thread's work after the timerfd expired: wait out the lead of a
// Master_Down_Timer awake, then run whatever is due.
func (d *Daemon) fire() {
	woke := time.Now()
	d.mu.Lock()
	d.armed = time.Time{} // the timerfd is one-shot
	if at, ok := d.masterDownSoon(); ok {
		// Not under the lock: the loop may meanwhile hear the master, which moves the
		// deadline; fireTimers then finds nothing due.
		d.mu.Unlock()
		for woke = time.Now(); woke.Before(at); woke = time.Now() {
		}
		d.mu.Lock()
	}
	if d.timer != nil { // else shut down meanwhile
		// A deferral armed the timer itself: rearm would set it back to the due
		// deadline, at once.
		if now := time.Now(); !d.deferTakeover(now) {
			d.timerWoke = woke
			d.fireTimers(now)
			d.timerWoke = time.Time{}
			d.rearm()
		}
	}
	d.mu.Unlock()
}

// takeoverGrace bounds how long a due Master_Down_Timer waits for unread packets to be
// read (deferTakeover), counted from the first wake-up that found them: a tenth of the
// shortest advert interval among the due ones, from minTakeoverGrace (at 10 ms adverts a
// backup's margin over one interval is 26 ms) to maxTakeoverGrace. One millisecond at
// every interval was too little on a loaded host after a long reload: issue 31's leave
// at 2,000 Services had a host's reader not scheduled for 9 ms with the live master's
// adverts in the socket, and the host took its routers over; at 100 ms adverts a
// backup's patience is 320 ms, and 10 ms of it are cheap.
func (d *Daemon) takeoverGrace(now time.Time) time.Duration {
	iv := time.Duration(0)
	d.timers.AnyDue(now, func(key int) bool {
		if d.isMasterDown(key) {
			if i := d.owners[key].in.cfg.AdvertInterval; iv == 0 || i < iv {
				iv = i
			}
		}
		return false // visit every due one
	})
	return graceFor(iv)
}

const (
	minTakeoverGrace = time.Millisecond
	maxTakeoverGrace = 20 * time.Millisecond
)

// graceFor is the takeover grace for an advert interval (takeoverGrace).
func graceFor(interval time.Duration) time.Duration {
	return min(max(interval/10, minTakeoverGrace), maxTakeoverGrace)
}

// deferTakeover keeps a backup from taking over while the advertisements that would
// have stopped it sit unread: in a batch a reader handed over but the loop has not
// handled yet, or in a socket's queue. That happens whenever the process is not scheduled
// for longer than the margin of Master_Down_Interval over the advert interval (about two
// intervals: 20 ms at 10 ms adverts), which a loaded machine does; without this check,
// every backup of the host takes over at once when it runs again, and the churn of VIPs,
// logs and re-elections that follows keeps the loop late, so more time out. Handed-over
// batches are handled here and now; for a queued packet the timer thread lets go of the
// lock and the CPU for a moment (deferStep) so the reader and the loop can run, at most
// takeoverGrace in all. A master that really went silent leaves nothing unread for its
// VRID, and other VRIDs' traffic delays its takeover by no more than that grace.
// It reports whether it deferred (the caller then fires nothing now).
func (d *Daemon) deferTakeover(now time.Time) bool {
	const deferStep = 100 * time.Microsecond
	for d.masterDownDue(now) {
		b, ok := d.nextBatch() // the loop's parked one too: it waits for this lock
		if !ok {
			break
		}
		d.handleBatch(b, now)
		d.doneWith(b)
	}
	if !d.masterDownDue(now) {
		d.graceFrom = time.Time{}
		return false // other timers may be due
	}
	if d.graceFrom.IsZero() {
		d.graceFrom = now
	}
	if !d.inputPending() {
		d.graceFrom = time.Time{}
		return false
	}
	if waited := now.Sub(d.graceFrom); waited >= d.takeoverGrace(now) {
		// The reader did not get to the socket in time: the process, or its reader, was
		// not scheduled. Worth a line: a takeover now may be a false one, and the line
		// says why.
		if ok, quiet := d.unreadWarn.allow(now); ok {
			last := "never"
			if !d.lastBatch.IsZero() {
				last = now.Sub(d.lastBatch).String() + " ago"
			}
			d.log.Warn("Master_Down_Timer due with packets still unread: taking over",
				"waited", waited.String(), "unhandled_batches", d.unhandled.Load(),
				"last_batch_handled", last, "unlogged", quiet)
		}
		d.graceFrom = time.Time{}
		return false
	}
	d.armed = now.Add(deferStep)
	d.timer.Reset(deferStep)
	return true
}

// masterDownDue reports whether any Master_Down_Timer is due at now, not only the
// earliest timer: after the loop was held (a reload of a thousand VIPs holds it for a
// second) timers of every kind are overdue together, and a publication or a master's
// Adver_Timer first in the heap must not let the backups' takeovers past their unread
// adverts. TestMovementAtScale's leave at 2,000 Services had each vrrpd take over all
// the routers it backs up at the end of its reload, and the cascade never settled.
func (d *Daemon) masterDownDue(now time.Time) bool {
	return d.timers.AnyDue(now, d.isMasterDown)
}

// inputPending reports whether a batch is read but not handled (the loop may hold one,
// waiting for the lock) or a socket has a packet queued unread.
func (d *Daemon) inputPending() bool {
	if d.unhandled.Load() > 0 {
		return true
	}
	for _, c := range d.conns {
		if c.tc != nil && c.tc.Pending() {
			return true
		}
	}
	return false
}

// masterDownSoon reports the earliest deadline when it is a Master_Down_Timer's, no more
// than spinLead away.
func (d *Daemon) masterDownSoon() (time.Time, bool) {
	it, ok := d.timers.Peek()
	if !ok || !d.isMasterDown(it.key) {
		return time.Time{}, false
	}
	wait := time.Until(it.at)
	return it.at, wait > 0 && wait <= spinLead
}

func (d *Daemon) isMasterDown(key int) bool {
	o := d.owners[key]
	return o.kind == timerVRRP && o.in.sm != nil && o.in.sm.Timer() == vrrp.TimerMasterDown
}

// rearm arms the timerfd for the heap's earliest deadline (spinLead before it for a
// Master_Down_Timer), or disarms it when nothing is due. A deadline that moved later (a
// backup hearing its master) leaves the timer where it was: it then wakes the timer thread
// once for nothing and is re-armed, which costs less than re-arming the timerfd on every
// received batch.
func (d *Daemon) rearm() {
	if d.timer == nil {
		return
	}
	it, ok := d.timers.Peek()
	if !ok {
		if !d.armed.IsZero() {
			d.armed = time.Time{}
			d.timer.Stop()
		}
		return
	}
	at := it.at
	if d.isMasterDown(it.key) {
		at = at.Add(-spinLead)
	}
	if d.armed.IsZero() || at.Before(d.armed) {
		d.armed = at
		d.timer.Reset(time.Until(at))
	}
}

// fireTimers runs every timer that is due, and with them the advertisement timers that
// are nearly due (see collectAdverts).
//
// The advertisements go first: every state machine whose timer fell due runs, and the
// advertisements its actions begin with (a backup taking over sends its first one before
// anything else) are sent before any instance's other actions are carried out. Those
// others can block for milliseconds (logging, publishing the snapshot, adding VIPs through
// netlink after syncing the crash record), and when many instances take over in one
// wake-up (a reload that added many at once times them out together) the last one's
// advertisement would otherwise wait for all the others' VIPs, while the other backups'
// Master_Down_Timers, a few milliseconds of Skew_Time behind, run out.
func (d *Daemon) fireTimers(now time.Time) {
	woke := time.Now()
	d.vips.BeginTurn()
	defer d.endTurn()
	d.wake.now, d.wake.woke = now, woke
	defer d.endWake() // inside the turn: a deferred packet's step-down writes with it
	// The takeover's debug line measures from the timer thread's wake-up; the package's
	// tests run fireTimers on a virtual clock, without one.
	timerWoke := now
	if !d.timerWoke.IsZero() {
		timerWoke = d.timerWoke
	}
	d.collectAdverts(now)
	for {
		d.firedKeys = d.firedKeys[:0]
		for {
			key, ok := d.timers.PopDue(now)
			if !ok {
				break
			}
			d.firedKeys = append(d.firedKeys, key)
		}
		if len(d.firedKeys) == 0 {
			break
		}
		n := 0
		d.sends.hold() // every due instance's advertisements in one batch
		for _, key := range d.firedKeys {
			o := d.owners[key]
			if o.kind != timerVRRP || o.in.sm == nil {
				continue
			}
			if n == len(d.fired) {
				d.fired = append(d.fired, firedTimer{})
			}
			f := &d.fired[n]
			n++
			sm := o.in.sm
			f.key, f.in = key, o.in
			f.takeover = sm.Timer() == vrrp.TimerMasterDown
			f.deadline = sm.Deadline()
			f.late = timerWoke.Sub(f.deadline)
			f.acts = sm.HandleTimer(now, f.acts[:0])
			f.acted = o.in.acted
			// Its next timer goes into the heap now, not when its list's turn comes: a
			// master's Adver_Timer due just behind a takeover of hundreds of addresses
			// would be off the heap until they are all in, and send nothing between
			// their chunks (issue 31's leave lab: 420 ms of silence, and a backup took
			// the router over beside it).
			d.armAhead(o.in, f.acts)
			// Its list is under way until finishFired carries out the rest: an advert it
			// sends before then (between another instance's chunks) is not to do what
			// follows from its state (executeActs' postamble: hundreds of excluded VIPs),
			// which its own list does in its turn, after its VIPs.
			o.in.executing++
			f.next = 0
			for f.next < len(f.acts) && f.acts[f.next].Kind == vrrp.ActionSendAdvert {
				d.send(o.in, f.acts[f.next].Priority)
				f.next++
			}
		}
		d.flushSends()
		sent := time.Since(timerWoke)
		for i := range d.fired[:n] {
			d.fired[i].sent = sent
		}
		d.warnLateAdverts(d.fired[:n], now)
		if n > 1 {
			d.transitionsFirst(d.fired[:n], now)
			d.reserveVIPs(d.fired[:n])
		}
		// Then everything else, in the order the timers fell due.
		n = 0
		for _, key := range d.firedKeys {
			o := d.owners[key]
			switch o.kind {
			case timerVRRP:
				if n == len(d.fired) || d.fired[n].key != key {
					continue // no state machine
				}
				d.finishFired(&d.fired[n], now, woke)
				n++
			case timerAnnounce, timerHoldBack:
				d.instanceTimer(o, now)
				d.advertsBetween(now, woke)
			case timerPublish:
				d.publish(now)
			}
		}
	}
	d.maybePublish(now)
}

// finishFired carries out the rest of a fired state machine timer's actions, once every
// instance due in the wake-up has sent its advertisements.
func (d *Daemon) finishFired(f *firedTimer, now, woke time.Time) {
	defer func() { f.in = nil }()
	f.in.executing-- // fireTimers marked its list under way
	if f.in.acted != f.acted {
		// An advert read during an earlier instance's VIP work made this one act since
		// (busyread.go): a takeover it stepped down from.
		return
	}
	d.hops.published, d.hops.vips, d.hops.announce = 0, 0, 0
	d.executeActs(f.in, f.acts[f.next:], now)
	d.advertsBetween(now, woke)
	if f.takeover {
		// The failover time beyond Master_Down_Interval is this lateness (from the
		// deadline to the timer thread's wake-up) plus the advertisement's delay (from
		// that wake-up to the socket, a wait for the lock included); took adds the VIPs and
		// the rest (published, vips and announce: when the snapshot's publication, the VIP
		// add and the announcements' queueing returned; these and took from when the thread
		// held the lock). All worth seeing when tuning; the deadline's wall time lets a
		// capture elsewhere measure from it, and from the wake-up, to the advertisement's
		// arrival.
		d.log.Debug(fmt.Sprintf("(%s) Master_Down_Timer handled", f.in.cfg.Name),
			"late", f.late.String(), "advert", f.sent.String(), "took", time.Since(now).String(),
			"published", d.hops.published.String(), "vips", d.hops.vips.String(), "announce", d.hops.announce.String(),
			"deadline", f.deadline.Format(time.RFC3339Nano))
	}
}

// instanceTimer runs an instance's timer other than its state machine's.
func (d *Daemon) instanceTimer(o timerOwner, now time.Time) {
	if o.kind == timerHoldBack {
		d.holdBackDue(o.in, now)
		return
	}
	d.announceDue(o.in, now)
}

// transitionsFirst carries out the state changes of several instances that fell due in
// one wake-up (their adverts are out) and publishes them once, before any of them adds
// or removes a VIP: each publication is a snapshot of every instance (about 50 µs at 255),
// and a mass takeover at start or after a peer vanished would otherwise pay one per
// instance while every other master's advert waits. Whoever sees a VIP arrive still reads
// the new state in /status.
func (d *Daemon) transitionsFirst(fired []firedTimer, now time.Time) {
	changed := false
	for i := range fired {
		f := &fired[i]
		for f.next < len(f.acts) && f.acts[f.next].Kind == vrrp.ActionStateChange {
			d.transition(f.in, &f.acts[f.next], now)
			f.next++
			changed = true
		}
	}
	if changed {
		d.publish(now)
	}
}

// firedTimer is an instance whose state machine timer fell due in this wake-up, with the
// actions still to carry out once every due instance has sent its advertisements. The
// daemon keeps them between wake-ups, so firing allocates nothing once warm.
type firedTimer struct {
	key      int
	in       *instance
	takeover bool          // it was Master_Down_Timer
	deadline time.Time     // when it was due
	late     time.Duration // how long after its deadline the loop ran it
	sent     time.Duration // from the wake-up to its advertisements handed to the socket
	acts     []vrrp.Action
	next     int    // acts[:next] are done (the advertisements)
	acted    uint64 // in.acted when acts were made: stale once it moved (busyread.go)
}

// reserveVIPs records, in one write, the VIPs that the instances of one wake-up are
// about to add (vipStore.Reserve), when more than one of them adds any: a mass takeover
// would otherwise write the crash record once per instance, each time all of it.
func (d *Daemon) reserveVIPs(fired []firedTimer) {
	d.vipl = d.vipl[:0]
	adding := 0
	for i := range fired {
		f := &fired[i]
		for _, a := range f.acts[f.next:] {
			if a.Kind != vrrp.ActionAddVIPs {
				continue
			}
			adding++
			for _, p := range a.VIPs {
				d.vipl = append(d.vipl, f.in.vipFor(p))
			}
		}
	}
	if adding < 2 {
		return
	}
	if err := d.vips.Reserve(d.vipl...); err != nil {
		d.log.Error("cannot record the VIPs of a takeover ahead", "err", err) // each Hold records its own
	}
}

// endTurn ends the vipStore's turn that a wake-up began.
func (d *Daemon) endTurn() {
	if err := d.vips.EndTurn(); err != nil {
		d.log.Error("cannot write the VIP record", "err", err)
	}
}

// warnLateAdverts logs, once a wake-up, masters' Adver_Timers that ran more than an
// advertisement interval late: their backups' patience (three intervals and Skew_Time) is
// being spent, and the line says the process was not scheduled (or its lock was held)
// before a backup takes over because of it.
func (d *Daemon) warnLateAdverts(fired []firedTimer, now time.Time) {
	var worst *firedTimer
	late := 0
	for i := range fired {
		f := &fired[i]
		if f.takeover || f.late <= f.in.cfg.AdvertInterval {
			continue
		}
		late++
		if worst == nil || f.late > worst.late {
			worst = f
		}
	}
	if worst == nil {
		return
	}
	if ok, quiet := d.lateWarn.allow(now); ok {
		d.log.Warn(fmt.Sprintf("(%s) Adver_Timer ran late", worst.in.cfg.Name), "late", worst.late.String(),
			"interval", worst.in.cfg.AdvertInterval.String(), "instances_late", late, "wakeups_late_unlogged", quiet)
	}
}

// warnEvery spaces the lines of a warning that a loaded host could repeat at every
// wake-up: a log that grows with the load feeds it.
const warnEvery = 10 * time.Second

// warnLimit lets a warning through at most once every warnEvery and counts the rest.
type warnLimit struct {
	last  time.Time
	quiet int
}

// allow reports whether to log now, and how many were kept quiet since the last line.
func (w *warnLimit) allow(now time.Time) (bool, int) {
	if !w.last.IsZero() && now.Sub(w.last) < warnEvery {
		w.quiet++
		return false, 0
	}
	q := w.quiet
	w.last, w.quiet = now, 0
	return true, q
}

// advertSlack is how much earlier than its Adver_Timer a master may send when the loop is
// awake anyway: a tenth of the interval.
func advertSlack(iv time.Duration) time.Duration { return iv / 10 }

// collectAdverts sends, in one wake-up, the advertisements of every master whose
// Adver_Timer falls due within advertSlack, and lines their next deadlines up on the
// latest of them. Instances with the same interval thus fall into step after a few
// rounds, so N masters cost one wake-up (and one recvmmsg on each backup) per interval
// instead of N. A master sends at most one advert in a tenth of an interval early or
// late while it falls into step, far inside the three intervals a backup waits.
// Master_Down_Timers are never advanced: they decide failover time.
func (d *Daemon) collectAdverts(now time.Time) {
	d.collectAdvertsPast(now, false)
}

// collectAdvertsPast is collectAdverts; with past, it also looks past the other timers
// that are due (a publication, an announcement round, a backup's Master_Down_Timer),
// which stay armed at their deadlines for the loop's next turn. A long VIP add or reload
// (advertsWhileBusy) uses it: a timer of another kind that fell due while it ran would
// otherwise hold back every advert due after it until the work ends, seconds at 2,000
// IPv6 addresses (issue 31), and the backups take over.
func (d *Daemon) collectAdvertsPast(now time.Time, past bool) {
	d.due = d.due[:0]
	var latest time.Time
	var aside []timerItem
	for {
		it, ok := d.timers.Peek()
		if !ok {
			break
		}
		o := d.owners[it.key]
		if o.kind != timerVRRP || o.in.sm == nil || o.in.sm.Timer() != vrrp.TimerAdvert {
			if !past || it.at.After(now) {
				break
			}
			d.timers.Stop(it.key)
			aside = append(aside, it)
			continue
		}
		if it.at.After(now.Add(advertSlack(o.in.cfg.AdvertInterval))) {
			break
		}
		d.timers.Stop(it.key)
		d.due = append(d.due, o.in)
		if it.at.After(latest) {
			latest = it.at
		}
	}
	for _, it := range aside {
		d.timers.Set(it.key, it.at)
	}
	if latest.Before(now) {
		latest = now
	}
	d.sends.hold()
	var handoffs []*instance // rare: allocated only when a break-first takeover's VIPs are due
	for _, in := range d.due {
		if in.sm.HandoffDue(latest) {
			// Its VIPs go on with this advert: hundreds of addresses, after which the
			// others, popped from the heap, would only then be sent and re-armed.
			handoffs = append(handoffs, in)
			continue
		}
		d.acts = in.sm.HandleTimer(latest, d.acts[:0])
		d.execute(in, latest)
	}
	d.flushSends()
	for _, in := range handoffs {
		d.acts = in.sm.HandleTimer(latest, d.acts[:0])
		d.execute(in, latest)
	}
}

// advertsBetween sends the advertisements that fell due while the loop or the timer
// thread was busy with the slow part of other instances' transitions (VIPs through
// netlink, the crash record, logs): when many instances change state in one wake-up
// (a mass takeover at start, a peer coming back), that work lasts longer than an
// advert interval at 10 ms, and masters that skip adverts for it make the peer's
// backups time out, whose own transitions then make the peer late in turn. Called after
// each instance's slow work; a heap peek when nothing is due.
//
// now is the wake-up's time (which the package's tests run on a virtual clock) and woke
// the real clock's then: the time now is now plus what passed since woke.
func (d *Daemon) advertsBetween(now, woke time.Time) {
	it, ok := d.timers.Peek()
	if !ok {
		return
	}
	now = now.Add(time.Since(woke))
	o := d.owners[it.key]
	if o.kind != timerVRRP || o.in.sm == nil || o.in.sm.Timer() != vrrp.TimerAdvert {
		if !it.at.After(now) {
			d.collectAdvertsPast(now, true) // adverts may be due behind it
		}
		return
	}
	if !it.at.After(now.Add(advertSlack(o.in.cfg.AdvertInterval))) {
		d.collectAdvertsPast(now, true)
	}
}

// maybePublish schedules a publication of the counters within publishInterval, unless one
// is already scheduled.
func (d *Daemon) maybePublish(now time.Time) {
	if !d.dirty {
		return
	}
	if _, ok := d.timers.Armed(d.publishK); !ok {
		d.timers.Set(d.publishK, now.Add(d.opts.publishInterval))
	}
}

func (d *Daemon) newTimer(in *instance, kind timerKind) int {
	k := d.timers.newKey()
	for len(d.owners) <= k {
		d.owners = append(d.owners, timerOwner{})
	}
	d.owners[k] = timerOwner{in: in, kind: kind}
	return k
}

func (d *Daemon) freeTimer(k int) {
	d.timers.freeKey(k)
	d.owners[k] = timerOwner{}
}

// validate refuses a configuration the daemon cannot route: config.Config.Validate, the
// one check every configuration source already passed.
func validate(cfg *config.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}
