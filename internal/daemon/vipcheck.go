package daemon

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// vipHolder is one master's claim on a VIP, for checkVIPs.
type vipHolder struct {
	in     *instance
	holder string
}

// checkVIPs puts back the VIPs someone else took off a master's interface (ip addr
// flush, NetworkManager re-applying its profile, or an add that failed). It runs with
// every interface check, so a netlink address event brings a VIP back within
// milliseconds; an add that failed is tried again at the next poll, a second later
// (linkTrouble), and the ten-second link poll is the safety net beyond events. Re-adding
// rather than going FAULT keeps the master the master: backups hear nothing change, and
// the address is back before their Master_Down_Timer (three intervals) could matter. A
// round of gratuitous ARP / NA follows, for neighbours whose entries failed while the
// address was gone.
//
// A foreign VIP (one that was on the interface before this master, see addVIPs) that
// disappears is put back too, and is then this vrrpd's own: the instance is master for
// that address and nobody else holds it any more.
func (d *Daemon) checkVIPs(now time.Time) {
	w := d.mastersVIPs()
	if len(w.all) == 0 {
		return
	}
	missing, err := d.vips.Missing(w.all...)
	d.restoreVIPs(w, missing, err, now)
}

// checkInterfacesUnlocking is checkInterfaces for the loop, which holds d.mu: it lets go
// of it while Missing asks the kernel (a netlink round trip or two per interface, more
// under the rtnl lock every namespace of the host shares), so that a Master_Down_Timer
// falling due meanwhile is not kept waiting by it. What the instances did meanwhile is
// looked at again before anything is put back (restoreVIPs).
func (d *Daemon) checkInterfacesUnlocking(now time.Time) {
	d.checkLinks(now)
	if w := d.mastersVIPs(); len(w.all) > 0 {
		d.rearm()
		d.mu.Unlock()
		missing, err := d.vips.Missing(w.all...)
		d.mu.Lock()
		d.restoreVIPs(w, missing, err, time.Now())
	}
	d.checkRoutes(time.Now())
	d.checkTrackers(time.Now())
}

// poll is the loop's turn when nothing else happened for pollInterval. Netlink events
// (ifEvents) report every link and address change, and a subscription that ends wakes the
// check too, so the interfaces and VIPs are read from the kernel only every
// linkPollInterval, as a safety net, or while checkLinks or an add found trouble; the
// other turns read only what has no event: track files, and the routes on their own
// interval. Reading them every second cost a master at 50 instances a tenth of its CPU
// (netlink dumps and their parsing; issue 12).
func (d *Daemon) poll(now time.Time) {
	if d.linkTrouble || now.Sub(d.linksChecked) >= d.opts.linkPollInterval {
		d.checkInterfacesUnlocking(now)
		return
	}
	d.checkRoutes(now)
	d.checkTrackers(now)
}

// wantedVIPs are the VIPs of every master, with who holds each.
type wantedVIPs struct {
	all []vip.VIP
	by  map[vip.VIP][]vipHolder
}

func (d *Daemon) mastersVIPs() wantedVIPs {
	var all []vip.VIP
	var by map[vip.VIP][]vipHolder
	for _, in := range d.instances {
		// A break-first takeover's master holds no VIP until its Adver_Timer fires
		// (vrrp.Instance.VIPsPending): the preempted master may still hold them, and
		// "putting them back" would make the two holders that wait exists to prevent.
		if in.sm == nil || in.sm.State() != vrrp.StateMaster || in.sm.VIPsPending() {
			continue
		}
		if by == nil {
			by = make(map[vip.VIP][]vipHolder)
		}
		for _, v := range in.vips.vips {
			if in.heldBack(v.Prefix) {
				continue // not added yet, on purpose (holdback.go)
			}
			all = append(all, v)
			by[v] = append(by[v], vipHolder{in, in.cfg.Name})
		}
		if in.holdsExcluded {
			for _, v := range in.vips.excluded {
				all = append(all, v)
				by[v] = append(by[v], vipHolder{in, excludedHolder(in)})
			}
		}
	}
	return wantedVIPs{all: all, by: by}
}

// restoreVIPs puts back the missing ones of w, for the holders that still hold them: an
// instance that left Master (or was removed) since w was taken keeps its VIPs off.
//
// What the first look found missing is looked at again first, under d.mu. The first look
// may run unlocked (checkInterfacesUnlocking), while the timer thread adds or removes
// thousands of addresses, and a kernel address dump taken during such churn can miss
// addresses that are there without flagging itself interrupted (the same as transport's
// source check). Issue 31's movement lab saw each such false miss re-added one by one,
// thousands in all, each one Hold under d.mu with no advert sent meanwhile: the masters
// went silent for a second and their peers took over. What is still missing is put back
// one chunked Hold per holder, adverts sent between the chunks, and logged once per holder.
func (d *Daemon) restoreVIPs(w wantedVIPs, missing []vip.VIP, err error, now time.Time) {
	by := w.by
	if err != nil {
		d.linkTrouble = true // look again at the next poll
		d.log.Debug("cannot check the masters' VIPs", "err", err)
	}
	if len(missing) == 0 {
		return
	}
	if missing, err = d.vips.Missing(missing...); err != nil {
		d.linkTrouble = true
		d.log.Debug("cannot check the masters' VIPs", "err", err)
	}
	if len(missing) == 0 {
		return
	}
	defer d.publish(now) // rare, and worth seeing at once
	if d.wake.now.IsZero() {
		d.wake.now, d.wake.woke = now, time.Now() // adverts between the chunks (advertsWhileBusy)
		defer d.endWake()
	}
	var order []vipHolder
	lost := map[vipHolder][]vip.VIP{}
	for _, v := range missing {
		hs := slices.DeleteFunc(by[v], func(h vipHolder) bool { return !d.stillHolds(h) })
		delete(by, v) // a VIP two masters share is put back once
		for _, h := range hs {
			if lost[h] == nil {
				order = append(order, h)
			}
			lost[h] = append(lost[h], v)
		}
	}
	for _, h := range order {
		vs := lost[h]
		if !d.stillHolds(h) {
			continue // it stepped down while an earlier holder's addresses went back
		}
		h.in.readded += uint64(len(vs))
		d.dirty = true
		d.log.Warn(fmt.Sprintf("(%s) VIP was taken off the interface while master; adding it back", h.in.cfg.Name),
			"vip", vs[0].String(), "count", len(vs))
		d.hold(h.in, h.holder, vs)
		byDev := map[string][]netip.Addr{}
		for _, v := range vs {
			byDev[v.Dev] = append(byDev[v.Dev], v.Prefix.Addr())
		}
		for dev, addrs := range byDev {
			if err := d.garp.Announce(dev, garpSettings(h.in.cfg.GARP), addrs, 1); err != nil {
				d.log.Debug(fmt.Sprintf("(%s) cannot announce VIPs", h.in.cfg.Name), "vip", addrs[0].String(), "count", len(addrs), "err", err)
			}
		}
	}
}

// stillHolds reports whether h's instance is still running and master, and for its
// excluded VIPs still holds them.
func (d *Daemon) stillHolds(h vipHolder) bool {
	in := h.in
	if d.byName[in.cfg.Name] != in || in.sm == nil || in.sm.State() != vrrp.StateMaster || in.sm.VIPsPending() {
		return false
	}
	return h.holder == in.cfg.Name || in.holdsExcluded
}
