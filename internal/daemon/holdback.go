package daemon

import (
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// The reload hold-back (docs/design/router-sharing.md §4 case 3). One status write can
// move a shared router's member from router A, mastered by one node, to router B,
// mastered by another. Each node applies the write when its own watch delivers it: the
// node holding the address through A releases it at once, and the node master of B
// would add it at once, so for the spread of the two watches' latencies both could
// answer for it. A master therefore adds an address that a reload gives it only after
// a hold-back when no instance on this node held that address before the reload: the
// other node has had that long to let go. An address this node already holds (a move
// between two masters here, §4 case 1, bridged by bridgeMoves) is added at once, and
// takeovers and starts keep the state machine's timing: only a reload's additions to a
// master that stays master are held back.

// minReloadHoldBack is the least hold-back: it covers the spread of two nodes' watch
// latencies, which does not shrink with the advertisement interval as
// vrrp.HandoffDelay (one advertisement's flight and the old master's reaction) does.
const minReloadHoldBack = 50 * time.Millisecond

// reloadHoldBack is how long a master advertising every interval holds back an address
// a reload gives it while no instance here held it: the break-first takeover's
// vrrp.HandoffDelay (one interval, at most 250 ms), at least minReloadHoldBack.
func reloadHoldBack(interval time.Duration) time.Duration {
	return max(vrrp.HandoffDelay(interval), minReloadHoldBack)
}

// addrDev identifies an address on an interface, as the kernel and vip.Manager do
// (the label is a property of the address, not part of its identity).
type addrDev struct {
	addr netip.Addr
	dev  string
}

func keyOf(v vip.VIP) addrDev { return addrDev{v.Prefix.Addr(), v.Dev} }

// heldVIPs are the addresses the instance holds now: none unless it is master with its
// VIPs added, then its VIPs but those still held back, and its excluded VIPs while it
// holds them.
func (in *instance) heldVIPs() []vip.VIP {
	if in.sm == nil || in.sm.State() != vrrp.StateMaster || in.sm.VIPsPending() {
		return nil
	}
	held := in.vips.vips
	if len(in.holdBack) > 0 {
		held = slices.DeleteFunc(slices.Clone(held), func(v vip.VIP) bool { return in.heldBack(v.Prefix) })
	}
	if in.holdsExcluded {
		held = slices.Concat(held, in.vips.excluded)
	}
	return held
}

// heldBack reports whether p waits in the instance's hold-back.
func (in *instance) heldBack(p netip.Prefix) bool {
	_, ok := in.holdBack[p]
	return ok
}

// heldAddrs is every address an instance on this node holds now (heldVIPs), taken by
// reload before it changes anything.
func (d *Daemon) heldAddrs() map[addrDev]bool {
	m := map[addrDev]bool{}
	for _, in := range d.instances {
		for _, v := range in.heldVIPs() {
			m[keyOf(v)] = true
		}
	}
	return m
}

// holdBackAdditions takes out of acts (a reconfigure's actions for in, a master that
// stays master, carried out next) the addresses that were not in held, the addresses this
// node held before the reload, and schedules them for reloadHoldBack from now. What is
// left is added at once; an announcement of nothing but held-back addresses waits for
// them (holdBackDue announces then).
func (d *Daemon) holdBackAdditions(in *instance, acts []vrrp.Action, held map[addrDev]bool, now time.Time) {
	deferred := false
	announceNow := false
	for i := range acts {
		a := &acts[i]
		if a.Kind != vrrp.ActionAddVIPs {
			continue
		}
		var immediate []netip.Prefix
		for _, p := range a.VIPs {
			if held[keyOf(in.vipFor(p))] {
				immediate = append(immediate, p)
				continue
			}
			if in.holdBack == nil {
				in.holdBack = map[netip.Prefix]time.Time{}
			}
			if _, ok := in.holdBack[p]; !ok {
				in.holdBack[p] = now.Add(reloadHoldBack(in.cfg.AdvertInterval))
			}
			deferred = true
		}
		a.VIPs = immediate
		if len(immediate) == 0 {
			a.Kind = 0 // nothing to add at once
		} else {
			announceNow = true
		}
	}
	if !deferred {
		return
	}
	if !announceNow {
		for i := range acts {
			if acts[i].Kind == vrrp.ActionAnnounce {
				acts[i].Kind = 0 // holdBackDue announces
			}
		}
	}
	d.armHoldBack(in)
}

// armHoldBack sets the instance's hold-back timer to its earliest address, or stops it.
func (d *Daemon) armHoldBack(in *instance) {
	var next time.Time
	for _, at := range in.holdBack {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if next.IsZero() {
		d.timers.Stop(in.holdBackKey)
		return
	}
	d.timers.Set(in.holdBackKey, next)
}

// dropHoldBack forgets held-back addresses that were never added: the reload that
// follows removed them, or the instance left master or the daemon. It returns ps without
// them (a copy when any was held back: ps may be the state machine's): the others are
// the ones to release.
func (d *Daemon) dropHoldBack(in *instance, ps []netip.Prefix) []netip.Prefix {
	if len(in.holdBack) == 0 || !slices.ContainsFunc(ps, in.heldBack) {
		return ps
	}
	ps = slices.DeleteFunc(slices.Clone(ps), func(p netip.Prefix) bool {
		if in.heldBack(p) {
			delete(in.holdBack, p)
			return true
		}
		return false
	})
	d.armHoldBack(in)
	return ps
}

// clearHoldBack forgets every held-back address of the instance.
func (d *Daemon) clearHoldBack(in *instance) {
	if len(in.holdBack) > 0 {
		clear(in.holdBack)
		d.timers.Stop(in.holdBackKey)
	}
}

// holdBackDue adds the held-back addresses whose time has come, in the instance's
// order, and announces the instance's addresses as for any addition; the others wait on.
func (d *Daemon) holdBackDue(in *instance, now time.Time) {
	if in.sm == nil || in.sm.State() != vrrp.StateMaster || in.sm.VIPsPending() {
		d.clearHoldBack(in)
		return
	}
	var due []netip.Prefix
	for _, v := range in.vips.vips {
		if at, ok := in.holdBack[v.Prefix]; ok && !at.After(now) {
			due = append(due, v.Prefix)
			delete(in.holdBack, v.Prefix)
		}
	}
	d.armHoldBack(in)
	if len(due) == 0 {
		return
	}
	d.heldChanged = true // the conflict detector defends them from now on
	d.addVIPs(in, due)
	d.startAnnounce(in, now)
	d.publish(now)
}
