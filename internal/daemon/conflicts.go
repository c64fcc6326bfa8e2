package daemon

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/vrrp-operator/vrrp-operator/internal/conflict"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// conflictWatch looks for other hosts answering for the masters' VIPs, off the loop:
// *conflict.Detector. The loop only hands it the held set, when it changes; the probes,
// their sockets and their pacing are the detector's goroutine's, so neither a probe nor
// an answer ever delays an advertisement or a takeover.
type conflictWatch interface {
	SetHeld([]conflict.Target)
	Conflicts() []conflict.Conflict
	Run(ctx context.Context)
}

// handHeld gives the detector the VIPs of every master, when a state changed or a reload
// ran since it last did (publish calls it: right after a transition, before the VIPs are
// added or removed, so a master that steps down stops defending its VIPs before another
// host's announcement of them could look like a second holder). One list of the masters'
// addresses per change, nothing per packet or per advertisement.
func (d *Daemon) handHeld() {
	if d.conflicts == nil || !d.heldChanged {
		return
	}
	d.heldChanged = false
	var ts []conflict.Target
	for _, in := range d.instances {
		if in.sm == nil || in.sm.State() != vrrp.StateMaster {
			continue
		}
		// Its excluded VIPs too: they go on with mastership (holdsExcluded follows a
		// moment later, after this publication).
		for _, vs := range [][]vip.VIP{in.vips.vips, in.vips.excluded} {
			for _, v := range vs {
				if in.heldBack(v.Prefix) {
					continue // not on this node yet: another host answering for it is no conflict
				}
				dev := v.Dev
				if in.vmac != nil && dev == in.vmac.Name {
					// Probed from the parent's own MAC: the answers to a probe from the
					// virtual MAC go wherever the switch last saw it, which is the other
					// holder when there is one.
					dev = in.vmac.Parent
				}
				ts = append(ts, conflict.Target{Addr: v.Prefix.Addr(), Dev: dev, Instance: in.cfg.Name,
					Intf: in.cfg.Interface, VRID: in.cfg.VRID})
			}
		}
	}
	d.conflicts.SetHeld(ts)
}

// conflictsSnapshot is the detector's conflicts as the metrics show them.
func conflictsSnapshot(cs []conflict.Conflict) []metrics.VIPConflict {
	if len(cs) == 0 {
		return nil
	}
	out := make([]metrics.VIPConflict, len(cs))
	for i, c := range cs {
		out[i] = metrics.VIPConflict{Instance: c.Instance, Interface: c.Intf, VRID: c.VRID, VIP: c.Addr, MAC: c.MAC, Since: c.Since}
	}
	return out
}

// conflictChanged is the detector's report of a conflict that started or ended (from its
// goroutine). An end goes to the loop, which announces the VIP once more (announceAgain);
// both go to Options.OnConflict.
func (d *Daemon) conflictChanged(c conflict.Change) {
	if !c.Start {
		select {
		case d.conflictEnds <- c.Target:
		default: // the loop is behind: the next refresh or takeover announces anyway
		}
	}
	if d.opts.OnConflict != nil {
		d.opts.OnConflict(c)
	}
}

// announceAgain sends one round of gratuitous ARP / NA for a VIP whose second holder no
// longer answers, if the instance still holds it. While both answered, neighbours may
// have learned the other host's MAC (its takeover's announcements, say); once it has
// let go, they would send to it until their entries time out. One round, when the other
// side is silent, is no contest: during a conflict vrrpd announces nothing (package
// conflict's doc says why), and the detector tells an end only after a start it told,
// at most once a minute per VIP, so this cannot become a loop either.
func (d *Daemon) announceAgain(t conflict.Target) {
	in := d.byName[t.Instance]
	if in == nil || in.sm == nil || in.sm.State() != vrrp.StateMaster {
		return
	}
	for _, vs := range [][]vip.VIP{in.vips.vips, in.vips.excluded} {
		for _, v := range vs {
			if v.Prefix.Addr() != t.Addr {
				continue
			}
			d.log.Info(fmt.Sprintf("(%s) announcing VIP again: the other host no longer answers for it", in.cfg.Name), "vip", t.Addr.String(), "interface", v.Dev)
			if err := d.garp.Announce(v.Dev, garpSettings(in.cfg.GARP), []netip.Addr{t.Addr}, 1); err != nil {
				d.log.Debug(fmt.Sprintf("(%s) cannot announce VIP", in.cfg.Name), "vip", t.Addr.String(), "err", err)
			}
			return
		}
	}
}
