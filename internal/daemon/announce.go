package daemon

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/vrrp-operator/vrrp-operator/garp"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
)

// announceState is one instance's gratuitous ARP / NA schedule (keepalived's garp_*
// knobs): garp.Schedule says when and how many rounds, the daemon's timer heap wakes the
// loop then, and the interface's sender puts the frames on the wire.
type announceState struct {
	sched *garp.Schedule
	knobs config.GARP // the settings sched was made with
	// groups are the addresses a round announces (VIPs and excluded VIPs) by the device
	// they are on, since each is announced from its own interface as keepalived does.
	groups []announceGroup
}

type announceGroup struct {
	dev   string
	addrs []netip.Addr
}

// add puts addr in dev's group, reusing the groups' memory.
func (a *announceState) add(dev string, addr netip.Addr) {
	for i := range a.groups {
		if a.groups[i].dev == dev {
			a.groups[i].addrs = append(a.groups[i].addrs, addr)
			return
		}
	}
	a.groups = append(a.groups, announceGroup{dev: dev, addrs: []netip.Addr{addr}})
}

func garpSettings(g config.GARP) garp.Settings {
	g.MasterRefreshRepeat = max(g.MasterRefreshRepeat, 1)
	return g
}

// startAnnounce carries out the state machine's Announce: addresses were just added, all
// of them by a new master, or some by a reload that gave a master new VIPs (the ones the
// action lists). Either way it announces every address the instance holds, its VIPs and
// its excluded VIPs, and restarts the schedule from its first burst: keepalived announces
// the excluded addresses with the others, the refreshes that follow cover all of them
// anyway, and hosts that already knew the old ones only hear again what is true. The first
// round goes out at once, the rest when the schedule says.
func (d *Daemon) startAnnounce(in *instance, now time.Time) {
	a := &in.announce
	if a.sched == nil || a.knobs != in.cfg.GARP {
		// First announcement, or the knobs changed by a reload: a schedule still
		// running on the old ones is replaced, as this burst restarts it anyway.
		a.sched, a.knobs = garp.NewSchedule(garpSettings(in.cfg.GARP)), in.cfg.GARP
	}
	a.groups = a.groups[:0]
	for _, v := range in.vips.vips {
		if in.heldBack(v.Prefix) {
			continue // announced when added (holdBackDue)
		}
		a.add(v.Dev, v.Prefix.Addr())
	}
	for _, v := range in.vips.excluded {
		a.add(v.Dev, v.Prefix.Addr())
	}
	a.sched.BecomeMaster(now)
	d.announceDue(in, now)
}

// announceDue sends the rounds that are due and re-arms the instance's announce timer.
func (d *Daemon) announceDue(in *instance, now time.Time) {
	a := &in.announce
	if a.sched == nil {
		return
	}
	if n := a.sched.Due(now); n > 0 {
		d.sendRounds(in, n, now)
	}
	if at, ok := a.sched.Next(); ok {
		d.timers.Set(in.announceKey, at)
	} else {
		d.timers.Stop(in.announceKey)
	}
}

// stopAnnounce drops whatever is pending (on leaving Master), queued frames included.
func (d *Daemon) stopAnnounce(in *instance) {
	if in.announce.sched != nil && in.announce.sched.Master() {
		in.announce.sched.LeaveMaster()
		for _, g := range in.announce.groups {
			d.garp.Cancel(g.dev, g.addrs)
		}
	}
	d.timers.Stop(in.announceKey)
}

// sendRounds queues n rounds of announcements for the instance's addresses; each
// interface's announcer sends them from its own goroutine, paced, so the loop never waits.
func (d *Daemon) sendRounds(in *instance, n int, _ time.Time) {
	for _, g := range in.announce.groups {
		if err := d.garp.Announce(g.dev, garpSettings(in.cfg.GARP), g.addrs, n); err != nil {
			d.log.Warn(fmt.Sprintf("(%s) cannot announce VIPs", in.cfg.Name), "interface", g.dev, "err", err)
		}
	}
}
