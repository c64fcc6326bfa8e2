package vrrp

import (
	"net/netip"
	"time"
)

// An Instance is the state machine of one virtual router (RFC 5798 §6, with the changes of
// RFC 9568, VRRPv2 as RFC 3768, and keepalived's FAULT state and preempt_delay).
//
// It does no I/O. Every input is a method that takes the current time and a slice to append
// actions to, and returns the extended slice; the caller carries the actions out in order
// (see ActionKind for the sequences). With enough capacity in the slice an input allocates
// nothing. The caller calls HandleTimer when the time reaches Deadline.
//
// An Instance is not safe for concurrent use: one loop feeds it.
type Instance struct {
	cfg      Config
	authData [8]byte
	primary  netip.Addr // cfg.Primary without zone, for comparisons with sources

	state    State
	priority uint8 // effective priority: Config.Priority unless SetPriority changed it

	// masterAdverInterval is Master_Adver_Interval: the interval of the master we follow
	// (v3 adopts it from the advertisements), our own until we have heard one.
	masterAdverInterval time.Duration

	timer    TimerKind
	deadline time.Time

	master         netip.Addr // the current master's address, ours when Master
	masterPriority uint8      // the priority it last advertised

	fault       bool
	faultReason Reason

	// preemptAt is keepalived's preempt_time: until then a lower-priority master is
	// tolerated. Zero means no delay is running.
	preemptAt time.Time

	// afterHandover is set when the instance leaves Config.HandoverOnly as a Backup (the
	// end of a takeover) and cleared when it next becomes Master: its first preemption
	// then breaks before it makes (takeOverBreakFirst). lowerHeardAt is when a
	// lower-priority master's advertisement was last discarded (preemption pending).
	// pendingVIPs: Master, but the VIPs are added only by the first Adver_Timer from
	// handoffAt on (a break-first takeover), which extendHandoff moves on to handoffBy at
	// the latest.
	afterHandover bool
	lowerHeardAt  time.Time
	pendingVIPs   bool
	handoffAt     time.Time
	handoffBy     time.Time

	counters Counters
}

// NewInstance returns an instance of c in state Init. It copies c (VIPs included), so the
// caller may reuse c.
func NewInstance(c Config) (*Instance, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	i := &Instance{}
	i.setConfig(c)
	i.priority = c.Priority
	i.masterAdverInterval = c.AdvertInterval
	return i, nil
}

func (i *Instance) setConfig(c Config) {
	i.cfg = c.clone()
	i.authData = c.AuthData()
	i.primary = c.Primary.WithZone("")
}

// Config returns the instance's configuration. Its VIPs slice is the instance's own; do not
// modify it.
func (i *Instance) Config() Config { return i.cfg }

// State returns the current state.
func (i *Instance) State() State { return i.state }

// Priority returns the effective priority: the one advertised and used in elections.
func (i *Instance) Priority() uint8 { return i.priority }

// Deadline returns when HandleTimer is due, or the zero time when no timer runs.
func (i *Instance) Deadline() time.Time { return i.deadline }

// Timer returns which timer runs: Adver_Timer in Master, Master_Down_Timer in Backup,
// none otherwise.
func (i *Instance) Timer() TimerKind { return i.timer }

// Master returns the current master's address: Config.Primary when this instance is
// Master, the source of the last accepted advertisement in Backup, and the zero Addr when
// no master is known (Init, Fault, or a Backup that has heard nobody yet).
func (i *Instance) Master() netip.Addr { return i.master }

// MasterPriority returns the priority the current master last advertised (ours when
// Master), or 0 when no master is known.
func (i *Instance) MasterPriority() uint8 { return i.masterPriority }

// MasterAdverInterval returns Master_Adver_Interval.
func (i *Instance) MasterAdverInterval() time.Duration { return i.masterAdverInterval }

// SkewTime returns Skew_Time for the instance's version, effective priority and
// Master_Adver_Interval (see Version.SkewTime: v2's does not scale with the interval).
func (i *Instance) SkewTime() time.Duration {
	return i.cfg.Version.SkewTime(i.priority, i.masterAdverInterval)
}

// MasterDownInterval returns Master_Down_Interval for the instance's version, effective
// priority and Master_Adver_Interval, and its DownTimerAdverts.
func (i *Instance) MasterDownInterval() time.Duration {
	n := time.Duration(i.cfg.DownTimerAdverts)
	if n == 0 {
		return i.cfg.Version.MasterDownInterval(i.priority, i.masterAdverInterval)
	}
	return n*i.masterAdverInterval + i.SkewTime()
}

// Fault reports whether a fault is set (SetFault), whatever the state.
func (i *Instance) Fault() bool { return i.fault }

// Counters returns a copy of the statistics.
func (i *Instance) Counters() Counters { return i.counters }

// CountError counts a decoding error (see Counters.CountError) against this instance. The
// transport calls it for packets it has attributed to this virtual router but could not
// decode, and with ErrTTL for a TTL or hop limit other than 255.
func (i *Instance) CountError(err error) bool { return i.counters.CountError(err) }

// Start leaves Init (RFC 5798 §6.4.1): the address owner (priority 255) becomes Master at
// once; any other router becomes Backup and waits Master_Down_Interval. With a fault set it
// goes to Fault instead. Start in any state but Init does nothing.
func (i *Instance) Start(now time.Time, out []Action) []Action {
	if i.state != StateInit {
		return out
	}
	if i.fault {
		i.state = StateFault
		return append(out, Action{Kind: ActionStateChange, From: StateInit, To: StateFault, Reason: i.faultReason})
	}
	return i.startup(now, StateInit, ReasonStartup, out)
}

// startup is the Startup event of Initialize, also used when a fault clears.
func (i *Instance) startup(now time.Time, from State, reason Reason, out []Action) []Action {
	if i.priority == PriorityOwner {
		if reason == ReasonStartup {
			reason = ReasonAddressOwner
		}
		return i.becomeMaster(now, from, reason, out)
	}
	i.state = StateBackup
	i.masterAdverInterval = i.cfg.AdvertInterval
	i.master = netip.Addr{}
	i.masterPriority = 0
	i.preemptAt = time.Time{}
	if i.cfg.PreemptDelay > 0 {
		i.preemptAt = now.Add(i.cfg.PreemptDelay)
	}
	out = append(out, Action{Kind: ActionStateChange, From: from, To: StateBackup, Reason: reason})
	if i.cfg.HandoverOnly {
		return i.stop(out) // nothing to time until a master hands over
	}
	return i.arm(TimerMasterDown, now.Add(i.MasterDownInterval()), out)
}

// HandleTimer processes the expiry of the running timer. Called before Deadline, or with
// no timer running, it does nothing, so a late or spurious wake-up is harmless.
func (i *Instance) HandleTimer(now time.Time, out []Action) []Action {
	if i.timer == TimerNone || now.Before(i.deadline) {
		return out
	}
	switch {
	case i.state == StateMaster && i.timer == TimerAdvert:
		out = i.send(i.priority, out)
		if i.HandoffDue(now) {
			i.pendingVIPs = false
			out = append(out, Action{Kind: ActionAddVIPs, VIPs: i.cfg.VIPs}, Action{Kind: ActionAnnounce, VIPs: i.cfg.VIPs})
		}
		return i.armAdvert(now, out)
	case i.state == StateBackup && i.timer == TimerMasterDown:
		if (i.afterHandover || i.cfg.BreakFirstPreempt) && !i.lowerHeardAt.IsZero() && now.Sub(i.lowerHeardAt) <= i.MasterDownInterval() {
			return i.takeOverBreakFirst(now, out)
		}
		return i.becomeMaster(now, StateBackup, ReasonMasterDown, out)
	}
	return out
}

// Shutdown stops the instance (RFC 5798 §6.4.2, §6.4.3): a Master sends priority 0 so a
// backup takes over after Skew_Time, and drops the VIPs. The instance ends in Init and may
// Start again.
func (i *Instance) Shutdown(now time.Time, out []Action) []Action {
	if i.state == StateFault {
		i.state = StateInit
		return append(out, Action{Kind: ActionStateChange, From: StateFault, To: StateInit, Reason: ReasonShutdown})
	}
	return i.halt(StateInit, ReasonShutdown, out)
}

// halt takes a Master or a Backup to state to (Init or Fault), with no timer running: a
// Master sends priority 0 and drops its VIPs, a Backup forgets its master. In any other
// state it does nothing.
func (i *Instance) halt(to State, reason Reason, out []Action) []Action {
	switch i.state {
	case StateMaster:
		out = i.leaveMaster(to, reason, true, out)
	case StateBackup:
		i.state = to
		out = append(out, Action{Kind: ActionStateChange, From: StateBackup, To: to, Reason: reason})
		i.forgetMaster()
	default:
		return out
	}
	return i.stop(out)
}

// SetFault sets or clears keepalived's FAULT condition: the interface is down or a tracked
// object failed. Entering Fault, a Master sends priority 0 and drops its VIPs, as
// keepalived does; no timer runs and no advertisement is sent until the fault clears,
// when the instance starts again as from Init (Backup, or Master for the address owner).
// In Init the flag is only recorded and Start goes to Fault. Setting the flag it already
// has does nothing.
func (i *Instance) SetFault(now time.Time, fault bool, reason Reason, out []Action) []Action {
	if fault == i.fault {
		return out
	}
	i.fault = fault
	if fault {
		i.faultReason = reason
		return i.halt(StateFault, reason, out)
	}
	i.faultReason = ""
	if i.state != StateFault {
		return out
	}
	if reason == "" {
		reason = ReasonFaultCleared
	}
	return i.startup(now, StateFault, reason, out)
}

// SetPriority changes the effective priority, as tracking does in keepalived (base
// priority plus weights). 0 is taken as 1, since 0 only ever means a master leaving. A
// Master advertises the new priority at once, so backups that should now preempt learn it
// without waiting; a Backup uses it from the next advertisement on.
func (i *Instance) SetPriority(now time.Time, p uint8, out []Action) []Action {
	if p == 0 {
		p = 1
	}
	if p == i.priority {
		return out
	}
	i.priority = p
	if i.state == StateMaster {
		i.masterPriority = p
		out = i.send(p, out)
		return i.armAdvert(now, out)
	}
	return out
}

// enterMaster is the state of a router that has just become Master: its own master, at
// its own priority.
func (i *Instance) enterMaster() {
	i.state = StateMaster
	i.counters.BecomeMaster++
	i.master = i.cfg.Primary
	i.masterPriority = i.priority
	i.preemptAt = time.Time{}
	i.afterHandover = false
}

// becomeMaster is the transition to Master (RFC 5798 §6.4.1 for the owner, §6.4.2 when
// Master_Down_Timer fires).
func (i *Instance) becomeMaster(now time.Time, from State, reason Reason, out []Action) []Action {
	i.enterMaster()
	// The advertisement goes first (RFC 5798 §6.4.1, §6.4.2 list it first; keepalived's
	// vrrp_state_master_tx sends it before it logs, adds the addresses or announces them):
	// the other backups, whose Master_Down_Timers may run out a few milliseconds later, must
	// hear it before then, and whatever the caller does for the actions that follow (log,
	// publish, add addresses through netlink, write a crash record) can take that long.
	out = i.send(i.priority, out)
	out = append(out,
		Action{Kind: ActionStateChange, From: from, To: StateMaster, Reason: reason},
		Action{Kind: ActionAddVIPs, VIPs: i.cfg.VIPs},
		Action{Kind: ActionAnnounce, VIPs: i.cfg.VIPs})
	return i.arm(TimerAdvert, now.Add(i.cfg.AdvertInterval), out)
}

// leaveMaster reports the transition out of Master, sends priority 0 if asked, and
// removes the VIPs. The caller arms or stops the timer.
func (i *Instance) leaveMaster(to State, reason Reason, priorityZero bool, out []Action) []Action {
	i.state = to
	i.counters.ReleaseMaster++
	i.forgetMaster()
	out = append(out, Action{Kind: ActionStateChange, From: StateMaster, To: to, Reason: reason})
	if priorityZero {
		out = i.send(0, out)
	}
	if i.pendingVIPs {
		i.pendingVIPs = false // never added
		return out
	}
	return append(out, Action{Kind: ActionRemoveVIPs, VIPs: i.cfg.VIPs})
}

func (i *Instance) forgetMaster() {
	i.master = netip.Addr{}
	i.masterPriority = 0
	i.masterAdverInterval = i.cfg.AdvertInterval
	i.preemptAt = time.Time{}
	i.lowerHeardAt = time.Time{}
}

func (i *Instance) send(priority uint8, out []Action) []Action {
	i.counters.AdvertSent++
	if priority == 0 {
		i.counters.PriZeroSent++
	}
	return append(out, Action{Kind: ActionSendAdvert, Priority: priority})
}

func (i *Instance) arm(k TimerKind, at time.Time, out []Action) []Action {
	i.timer = k
	i.deadline = at
	return append(out, Action{Kind: ActionArmTimer, Timer: k, At: at})
}

func (i *Instance) stop(out []Action) []Action {
	i.timer = TimerNone
	i.deadline = time.Time{}
	return append(out, Action{Kind: ActionStopTimer})
}

// VIPsPending reports whether the instance is Master but adds its VIPs only when the
// Adver_Timer fires from HandoffAt on (a break-first takeover, takeOverBreakFirst).
func (i *Instance) VIPsPending() bool { return i.pendingVIPs }

// HandoffDue reports whether the Adver_Timer, fired at now, adds the VIPs of a
// break-first takeover: a caller running many instances' adverts at once runs that one
// (hundreds of addresses) after the others' adverts are out.
func (i *Instance) HandoffDue(now time.Time) bool {
	return i.pendingVIPs && !now.Before(i.handoffAt)
}

// HandoffDelay is how long a break-first takeover waits between its advertisement and
// adding the VIPs, for an instance advertising every interval: time for the master it
// preempts to receive the advertisement and remove them. Exported for vrrpd's reload
// hold-back (internal/daemon, holdback.go), which waits for another node's release. That
// is well under a millisecond on a quiet LAN, but loaded hosts take tens: the migration lab
// (test/e2e) measured a loaded keepalived stepping down 142 ms after the advertisement,
// and issue 31's join lab a vrrpd stepping down 60-90 ms after it, beside a 50 ms wait
// (half its 100 ms interval), with 179 addresses on two hosts in between. So one interval,
// up to 250 ms: a planned move leaves the VIPs unserved about that long (extendHandoff
// stretches it only while the preempted master is still heard), against a failover's
// three intervals and more.
func HandoffDelay(interval time.Duration) time.Duration {
	return min(250*time.Millisecond, interval)
}

// HandoffPerAddress is what a break-first takeover adds to HandoffDelay for each address
// the preempted master removes (Config.HandoffAddresses). The kernel removes an IPv6
// address in about 0.1 ms on an idle host, but issue 31's join lab (four vrrpd, an API
// server and a sampler on two cores) saw a preempted master take 200 ms to remove the
// 180 addresses of a shared router, while the new master, its wait over, added them
// faster: the later ones were on both hosts. Both go through the list in the same order,
// so the new master stays behind the old one as long as it starts that much later.
const HandoffPerAddress = time.Millisecond

// handoffExtensions bounds how long a break-first takeover keeps its VIPs back while it
// still hears the master it preempts (extendHandoff), in Master_Down_Intervals from the
// takeover: a loaded host that steps down late and then releases hundreds of addresses,
// advertising as it goes, takes more than one.
const handoffExtensions = 3

// handoffWait is how long a break-first takeover waits before adding the VIPs:
// HandoffDelay, plus HandoffPerAddress for each address the preempted master removes,
// at most a Master_Down_Interval (the VIPs are then unserved no longer than a failover
// leaves them).
func (i *Instance) handoffWait() time.Duration {
	n := max(i.cfg.HandoffAddresses, len(i.cfg.VIPs))
	return min(HandoffDelay(i.cfg.AdvertInterval)+time.Duration(n)*HandoffPerAddress, i.MasterDownInterval())
}

// takeOverBreakFirst is becomeMaster for the first preemption after a takeover, or for
// every preemption with Config.BreakFirstPreempt (the Master_Down_Timer ran out while a
// lower-priority master was advertising): the
// advertisement leaves at once, so that master steps down and removes the VIPs, and this
// router adds them HandoffDelay later, when the Adver_Timer fires. The VIPs go unserved for
// that long instead of being held by two routers while the other one reacts: at no moment
// are they on two nodes.
//
// The wait can outlast an advertisement interval (handoffWait grows with the addresses):
// the Adver_Timer keeps its interval meanwhile and adds the VIPs at its first expiry from
// handoffAt on, or the other routers' Master_Down_Timers would run out on a master
// silent for its whole wait (the join lab's first run with the longer wait: the holder
// took the router back).
func (i *Instance) takeOverBreakFirst(now time.Time, out []Action) []Action {
	i.enterMaster()
	i.pendingVIPs = true
	i.handoffAt = now.Add(i.handoffWait())
	i.handoffBy = now.Add(handoffExtensions * i.MasterDownInterval())
	out = i.send(i.priority, out)
	out = append(out, Action{Kind: ActionStateChange, From: StateBackup, To: StateMaster, Reason: ReasonMasterDown})
	return i.armAdvert(now, out)
}

// extendHandoff is a break-first master, its VIPs still to be added, hearing a lower
// priority (or 0) from another router: the master it preempts, which sent that before it
// heard this router's advertisement, or while it resigns, or (a vrrpd in the Kubernetes
// mode) while it removes the VIPs after stepping down. It holds them still: they go on
// HandoffDelay after the last sign of it, and never sooner than handoffWait after the
// takeover. A router that never hears this one would advertise, and hold them, for good:
// at handoffBy they are added anyway, RFC 5798's make-before-break, which costs nothing
// the clients see while that router serves them.
func (i *Instance) extendHandoff(now time.Time) {
	at := now.Add(HandoffDelay(i.cfg.AdvertInterval))
	if at.After(i.handoffBy) {
		at = i.handoffBy
	}
	if at.After(i.handoffAt) {
		i.handoffAt = at
	}
}

// armAdvert arms the next advertisement an interval from now, or at handoffAt when a
// break-first takeover's VIPs are due before that.
func (i *Instance) armAdvert(now time.Time, out []Action) []Action {
	next := now.Add(i.cfg.AdvertInterval)
	if i.pendingVIPs && i.handoffAt.Before(next) {
		next = i.handoffAt
	}
	return i.arm(TimerAdvert, next, out)
}
