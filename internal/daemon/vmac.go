package daemon

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// Virtual MAC instances (keepalived's use_vmac), as keepalived 2.2.7 runs them: the
// instance gets a private macvlan with the RFC 5798 §7.3 MAC on its interface when it
// starts, kept up in every state, and removed when the instance goes. The instance then
// lives on the macvlan: its VIPs go there (so ARP for them is answered, and GARPs are
// sent, from the virtual MAC), and so do its adverts unless vmac_xmit_base, with the
// parent interface's address as their source, since the macvlan has none.

// vmacHost makes and removes the macvlans: *vip.VMACs.
type vmacHost interface {
	Up(m vip.VMAC) (int, error)
	Remove(m vip.VMAC) error
	// Recover undoes what a crashed previous run recorded: its macvlans, and its
	// parents' arp_ignore / arp_filter back to their values from before.
	Recover() (vip.Recovered, error)
}

// recoverVMACs removes the macvlans a previous run left behind and puts back the
// sysctls it changed on their parents (the node's settings), before any instance
// starts.
func (d *Daemon) recoverVMACs() {
	rec, err := d.vmacs.Recover()
	for _, name := range rec.MACVLANs {
		d.log.Info("removed stale VMAC interface left by a previous run", "vmac", name)
	}
	for _, s := range rec.Sysctls {
		d.log.Info("restored interface setting changed by a previous run", "sysctl", s)
	}
	if err != nil {
		d.log.Warn("could not undo every VMAC change of a previous run", "err", err)
	}
}

// vmacConfig returns cfg with every use_vmac instance moved onto its macvlan (its
// interface, unless vmac_xmit_base, and the VIPs on its interface), and the macvlans by
// instance name. Names follow keepalived: the configured one unless another instance
// took it, else vrrp.VRID (see vip.VMACName).
func vmacConfig(cfg *config.Config) (*config.Config, map[string]vip.VMAC) {
	byName := map[string]vip.VMAC{}
	taken := map[string]bool{}
	for _, ic := range cfg.Instances {
		if n := ic.VMAC.Interface; ic.VMAC.Enabled && n != "" && !taken[n] {
			taken[n] = true
			byName[ic.Name] = vip.VMAC{Name: n}
		}
	}
	if len(byName) == 0 && !slices.ContainsFunc(cfg.Instances, func(ic config.Instance) bool { return ic.VMAC.Enabled }) {
		return cfg, nil
	}
	out := *cfg
	out.Instances = slices.Clone(cfg.Instances)
	for i := range out.Instances {
		ic := &out.Instances[i]
		if !ic.VMAC.Enabled {
			continue
		}
		m := byName[ic.Name]
		if m.Name == "" {
			m.Name = vip.VMACName(ic.Family == config.IPv6, ic.VRID, func(n string) bool { return taken[n] })
			taken[m.Name] = true
		}
		m.Parent = ic.Interface
		m.MAC = vip.VirtualMAC(ic.Family == config.IPv6, ic.VRID)
		if ic.VMAC.MAC != nil {
			m.MAC = ic.VMAC.MAC
		}
		m.IPv6 = ic.Family == config.IPv6 || slices.ContainsFunc(ic.ExcludedVIPs, func(v config.VIP) bool { return v.Prefix.Addr().Is6() })
		byName[ic.Name] = m
		ic.VIPs = onVMAC(ic.VIPs, m)
		ic.ExcludedVIPs = onVMAC(ic.ExcludedVIPs, m)
		if !ic.VMAC.XmitBase {
			ic.Interface = m.Name
		}
	}
	return &out, byName
}

// onVMAC moves the VIPs on the parent onto the macvlan.
func onVMAC(vs []config.VIP, m vip.VMAC) []config.VIP {
	vs = slices.Clone(vs)
	for i := range vs {
		if vs[i].Dev == "" || vs[i].Dev == m.Parent {
			vs[i].Dev = m.Name
			if vs[i].Label != "" {
				vs[i].Label = "" // a label must start with its device's name
			}
		}
	}
	return vs
}

// vmacUp makes the instance's macvlan, if it has one, before its socket opens on it. A
// failure leaves the instance in FAULT (its interface is missing); the error is logged.
func (d *Daemon) vmacUp(in *instance) {
	m, ok := d.vmacOf[in.cfg.Name]
	if !ok {
		return
	}
	if m.IPv6 && in.cfg.Family == config.IPv6 && !in.cfg.VMAC.XmitBase {
		// Adverts from the macvlan keep the router's own source: the parent's link-local.
		m.LinkLocal = linkLocalOf(m.Parent)
	}
	in.vmac = &m
	_, in.vmacErr = d.vmacs.Up(m)
	if err := in.vmacErr; err != nil {
		d.log.Error(fmt.Sprintf("(%s) cannot create VMAC interface", in.cfg.Name), "vmac", m.Name, "err", err)
		return
	}
	d.log.Info(fmt.Sprintf("(%s) VMAC interface up", in.cfg.Name), "vmac", m.Name, "mac", m.MAC.String(), "parent", m.Parent)
}

// vmacRetry makes again the macvlans of c's instances while c has no socket: the parent
// was missing when the instance started, or was deleted (which takes its macvlans with
// it) and is back; keepalived re-creates them when the parent reappears.
func (d *Daemon) vmacRetry(c *conn) {
	for _, in := range c.insts {
		if in.vmac == nil {
			continue
		}
		_, in.vmacErr = d.vmacs.Up(*in.vmac)
		if err := in.vmacErr; err != nil {
			d.log.Debug(fmt.Sprintf("(%s) VMAC interface not made yet", in.cfg.Name), "vmac", in.vmac.Name, "err", err)
		}
	}
}

// vmacDown removes the instance's macvlan after it stopped.
func (d *Daemon) vmacDown(in *instance) {
	if in.vmac == nil {
		return
	}
	if err := d.vmacs.Remove(*in.vmac); err != nil {
		d.log.Error(fmt.Sprintf("(%s) cannot remove VMAC interface", in.cfg.Name), "vmac", in.vmac.Name, "err", err)
	}
	in.vmac = nil
}

// vmacSourceIf is the interface whose address the instance's adverts carry when the
// socket is on its macvlan: the parent.
func (d *Daemon) vmacSourceIf(ic config.Instance) string {
	if m, ok := d.vmacOf[ic.Name]; ok && ic.Interface == m.Name {
		return m.Parent
	}
	return ""
}

func linkLocalOf(ifname string) netip.Addr {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return netip.Addr{}
	}
	addrs, _ := ifi.Addrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Is6() && ip.IsLinkLocalUnicast() {
				return ip
			}
		}
	}
	return netip.Addr{}
}
