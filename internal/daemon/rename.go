package daemon

import (
	"fmt"
	"slices"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// routeSlot is what names a virtual router on the wire from this node: its interface,
// family and VRID. Two instances never share one (validate).
type routeSlot struct {
	ifname string
	family config.Family
	vrid   uint8
}

// renameMoved carries over, before anything else of a reload, each running instance
// whose name the new configuration drops while a new name takes its exact slot (same
// interface, family and VRID, and a socket it can share: sameRoute): the instance is
// renamed, with its state, and the reload then treats it as kept or reconfigured in place
// under its new name. On the wire the two are the same virtual router, and a stop and a
// start would send a priority-0 advert, drop its addresses and wait a Master_Down_Interval
// to come back (or, with the additions-first bridge, run two instances with one VRID for
// a moment). This is how a shared router adopts a member's per-Service VRID
// (docs/design/router-sharing.md §5): the operator renames ns/name to @class/node and adds
// the router's other members. An instance with a VMAC is not renamed: its macvlan is
// named and chosen per instance name (vmacConfig), so it restarts as before.
func (d *Daemon) renameMoved(cfg *config.Config) {
	keep := make(map[string]bool, len(cfg.Instances))
	for _, ic := range cfg.Instances {
		keep[ic.Name] = true
	}
	slots := map[routeSlot]*config.Instance{}
	for i := range cfg.Instances {
		ic := &cfg.Instances[i]
		if d.byName[ic.Name] == nil && !ic.VMAC.Enabled {
			slots[routeSlot{ic.Interface, ic.Family, ic.VRID}] = ic
		}
	}
	if len(slots) == 0 {
		return
	}
	for _, in := range d.instances {
		if keep[in.cfg.Name] || in.sm == nil || in.cfg.VMAC.Enabled || in.vmac != nil {
			continue
		}
		s := routeSlot{in.cfg.Interface, in.cfg.Family, in.cfg.VRID}
		ic := slots[s]
		if ic == nil || !sameRoute(in.cfg, *ic) {
			continue
		}
		delete(slots, s)
		d.renameInstance(in, ic.Name)
	}
}

// renameInstance gives in the name to, moving every hold taken under its old name
// (VIPs, excluded VIPs, routes and rules) to the new one, the new hold first, so that no
// count reaches zero and nothing leaves the interface. The rest of its configuration is
// the reload's to change.
func (d *Daemon) renameInstance(in *instance, to string) {
	from := in.cfg.Name
	d.log.Info(fmt.Sprintf("(%s) renamed by reload to %s, keeping its state", from, to), "vrid", in.cfg.VRID)
	oldExcluded := excludedHolder(in)
	delete(d.byName, from)
	in.cfg.Name = to
	d.byName[to] = in
	move := func(what, oldHolder, newHolder string, vs []vip.VIP) {
		if len(vs) == 0 {
			return
		}
		if _, err := d.vips.Hold(newHolder, vs...); err != nil {
			d.log.Error(fmt.Sprintf("(%s) cannot hold the %s under the new name", to, what), "err", err)
		}
		if err := d.release(oldHolder, vs); err != nil {
			d.log.Error(fmt.Sprintf("(%s) cannot release the %s under the old name %s", to, what, from), "err", err)
		}
	}
	if in.sm.State() == vrrp.StateMaster && !in.sm.VIPsPending() {
		// Its own VIPs, without those it holds back (never added, nothing to move).
		move("VIPs", from, to, slices.DeleteFunc(slices.Clone(in.vips.vips), func(v vip.VIP) bool { return in.heldBack(v.Prefix) }))
	}
	if in.holdsExcluded {
		move("excluded VIPs", oldExcluded, excludedHolder(in), in.vips.excluded)
	}
	if in.holdsRoutes {
		d.holdRoutes(to, in.cfg.Routes, in.cfg.Rules, false)
		if err := d.routes.Release(from, in.cfg.Routes, in.cfg.Rules); err != nil {
			d.log.Error(fmt.Sprintf("(%s) cannot release the routes under the old name %s", to, from), "err", err)
		}
	}
	// Its notify queue under the old name ends once its hooks have run; later hooks run
	// under the new name, as for any instance the configuration names anew.
	d.trk.notifier.Forget(from)
}
