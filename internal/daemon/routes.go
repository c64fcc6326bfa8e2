package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/route"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// This file is what an instance and the host carry besides VIPs: virtual_routes and
// virtual_rules (added with the VIPs on becoming master, removed on leaving MASTER), the
// static addresses, routes and rules (held for the daemon's whole run), track_src_ip,
// and net_namespace's one rule at reload.

// routeStore adds and removes routes and rules and remembers them across crashes:
// *route.Manager. Like vipStore it owns only what it added and counts holders.
type routeStore interface {
	Hold(holder string, routes []route.Route, rules []route.Rule) (foreignRoutes []route.Route, foreignRules []route.Rule, err error)
	Release(holder string, routes []route.Route, rules []route.Rule) error
	Recover() ([]route.Route, []route.Rule, error)
}

// staticHolder holds the static entries in the stores; no instance name has brackets
// and a space.
const staticHolder = "(static)"

// routeCheckInterval bounds how often a master's routes are looked for (each look
// dumps the route's table): at most once a second, however many address events come.
const routeCheckInterval = time.Second

// routing is the daemon's routing state beyond instances.
type routing struct {
	static    config.Static // the static entries held now
	netns     string        // the namespace the daemon started in (net_namespace)
	started   bool          // netns is set: Run has started
	lastCheck time.Time     // of checkRoutes
	// srcPresent reports whether addr is on ifname (track_src_ip); nil means netlink.
	srcPresent func(ifname string, addr netip.Addr) (bool, error)
}

// followMaster adds the instance's routes and rules when it is master and removes them
// when it is not. executeActs calls it after the actions, so a route whose src is a VIP
// is added after the VIP.
func (d *Daemon) followMaster(in *instance, master bool) {
	if master == in.holdsRoutes || (len(in.cfg.Routes) == 0 && len(in.cfg.Rules) == 0) {
		return
	}
	in.holdsRoutes = master
	if !master {
		if err := d.routes.Release(in.cfg.Name, in.cfg.Routes, in.cfg.Rules); err != nil {
			d.log.Error(fmt.Sprintf("(%s) cannot remove virtual routes/rules", in.cfg.Name), "err", err)
		}
		return
	}
	d.holdRoutes(in.cfg.Name, in.cfg.Routes, in.cfg.Rules, false)
}

// holdRoutes adds routes and rules for holder and reports what was there already. A
// periodic check (quiet) reports nothing the first hold reported already: a foreign
// route or a route the kernel refuses would be logged every second otherwise.
func (d *Daemon) holdRoutes(holder string, routes []route.Route, rules []route.Rule, quiet bool) {
	fr, fu, err := d.routes.Hold(holder, routes, rules)
	if quiet {
		if err != nil {
			d.log.Debug(fmt.Sprintf("(%s) cannot put back routes/rules", holder), "err", err)
		}
		return
	}
	for _, r := range fr {
		d.log.Warn(fmt.Sprintf("(%s) route is in the table already and was not added by vrrpd: leaving it, never removing it", holder), "route", r.String())
	}
	for _, r := range fu {
		d.log.Warn(fmt.Sprintf("(%s) rule exists already and was not added by vrrpd: leaving it, never removing it", holder), "rule", r.String())
	}
	if err != nil {
		d.log.Error(fmt.Sprintf("(%s) cannot add routes/rules", holder), "err", err)
	}
}

// routesChanged drops a master's old routes and rules before a reconfiguration to ic
// that changes them; followMaster adds the new ones.
func (d *Daemon) routesChanged(in *instance, ic config.Instance) {
	if in.holdsRoutes && (!slices.Equal(in.cfg.Routes, ic.Routes) || !slices.Equal(in.cfg.Rules, ic.Rules)) {
		d.followMaster(in, false)
	}
}

// checkRoutes puts back a master's routes and rules that someone deleted, as checkVIPs
// does its addresses (keepalived leaves MASTER instead, unless no_track).
func (d *Daemon) checkRoutes(now time.Time) {
	if now.Sub(d.rt.lastCheck) < routeCheckInterval {
		return
	}
	d.rt.lastCheck = now
	for _, in := range d.instances {
		if in.holdsRoutes {
			d.holdRoutes(in.cfg.Name, in.cfg.Routes, in.cfg.Rules, true)
		}
	}
}

// recoverRoutes removes the routes and rules a previous run left behind.
func (d *Daemon) recoverRoutes() {
	routes, rules, err := d.routes.Recover()
	for _, r := range routes {
		d.log.Info("removed stale route left by a previous run", "route", r.String())
	}
	for _, r := range rules {
		d.log.Info("removed stale rule left by a previous run", "rule", r.String())
	}
	if err != nil {
		d.log.Warn("could not remove every stale route or rule", "err", err)
	}
}

// setStatic makes the static entries those of s: the ones s drops go, the new ones come.
// Start, reload and shutdown (with the empty Static) call it.
func (d *Daemon) setStatic(s config.Static) {
	old := d.rt.static
	if old.Equal(s) {
		return
	}
	var goneAddrs []vip.VIP
	for _, a := range old.Addresses {
		if !slices.Contains(s.Addresses, a) {
			goneAddrs = append(goneAddrs, toVIP(a, a.Dev))
		}
	}
	goneRoutes := slices.DeleteFunc(slices.Clone(old.Routes), func(r route.Route) bool { return slices.Contains(s.Routes, r) })
	goneRules := slices.DeleteFunc(slices.Clone(old.Rules), func(r route.Rule) bool { return slices.Contains(s.Rules, r) })
	// Routes before addresses: a route may use a static address as its src.
	if err := d.routes.Release(staticHolder, goneRoutes, goneRules); err != nil {
		d.log.Error("cannot remove static routes/rules", "err", err)
	}
	if len(goneAddrs) > 0 {
		if err := d.vips.Release(staticHolder, goneAddrs...); err != nil {
			d.log.Error("cannot remove static addresses", "err", err)
		}
	}
	d.rt.static = s
	if len(s.Addresses) > 0 {
		vs := make([]vip.VIP, len(s.Addresses))
		for i, a := range s.Addresses {
			vs[i] = toVIP(a, a.Dev)
		}
		foreign, err := d.vips.Hold(staticHolder, vs...)
		for _, v := range foreign {
			d.log.Warn("static address is on the interface already and was not added by vrrpd: leaving it, never removing it", "address", v.String())
		}
		if err != nil {
			d.log.Error("cannot add static addresses", "err", err)
		}
	}
	if len(s.Routes)+len(s.Rules) > 0 {
		d.holdRoutes(staticHolder, s.Routes, s.Rules, false)
	}
}

// errNamespaceChanged refuses a reload that moves the daemon to another namespace.
var errNamespaceChanged = errors.New("net_namespace cannot change on reload (nor in keepalived): restart vrrpd")

// checkNamespace remembers the first configuration's net_namespace and refuses a later
// one that differs.
func (d *Daemon) checkNamespace(cfg *config.Config) error {
	if !d.rt.started {
		d.rt.netns, d.rt.started = cfg.NetNamespace, true
		return nil
	}
	if cfg.NetNamespace != d.rt.netns {
		return fmt.Errorf("daemon: %w (running in %q, the new configuration says %q)", errNamespaceChanged, d.rt.netns, cfg.NetNamespace)
	}
	return nil
}

// errSourceMissing is the FAULT reason of track_src_ip.
var errSourceMissing = errors.New("track_src_ip: the configured source address is not on the interface")

// trackSource turns err, the state of the instance's interface, into errSourceMissing
// when the interface is fine but the instance tracks its configured source and that is
// gone (keepalived's track_src_ip).
func (d *Daemon) trackSource(in *instance, err error) error {
	if err != nil || !in.cfg.TrackSrcIP || !in.cfg.UnicastSrc.IsValid() {
		return err
	}
	present := d.rt.srcPresent
	if present == nil {
		present = addrOnLink
	}
	ok, perr := present(in.cfg.Interface, in.cfg.UnicastSrc)
	if errors.Is(perr, netlink.ErrDumpInterrupted) {
		// The interface's addresses kept changing while they were read (a takeover of a
		// thousand VIPs) and the source was not among those listed: not known either way,
		// so nothing changes, and the next poll, a second from now, looks again.
		d.linkTrouble = true
		if errors.Is(in.faultErr, errSourceMissing) {
			return in.faultErr
		}
		return nil
	}
	if perr != nil {
		return perr
	}
	if !ok {
		return fmt.Errorf("%w (%s on %s)", errSourceMissing, in.cfg.UnicastSrc, in.cfg.Interface)
	}
	return nil
}

// addrOnLink reports whether a is one of ifname's addresses. A dump the kernel flags as
// interrupted (the addresses changed while it was read) is read again up to three
// times; if it stays so, a listed address is there, and one not listed is an error
// wrapping netlink.ErrDumpInterrupted.
func addrOnLink(ifname string, a netip.Addr) (bool, error) {
	link, err := netlink.LinkByName(ifname)
	if err != nil {
		return false, err
	}
	fam := netlink.FAMILY_V4
	if a.Is6() {
		fam = netlink.FAMILY_V6
	}
	addrs, err := netlink.AddrList(link, fam)
	for tries := 0; errors.Is(err, netlink.ErrDumpInterrupted) && tries < 3; tries++ {
		addrs, err = netlink.AddrList(link, fam)
	}
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return false, err
	}
	for _, x := range addrs {
		if b, ok := netip.AddrFromSlice(x.IP); ok && b.Unmap() == a {
			return true, nil
		}
	}
	return false, err
}
