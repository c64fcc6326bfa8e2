package daemon

import (
	"net"
	"net/netip"

	"github.com/vrrp-operator/vrrp-operator/garp"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
)

// announcerFor returns the garp.Announcer of an interface, opening it on first use and
// again when the interface was re-created. Pacing (vrrp_garp_interval, vrrp_gna_interval)
// is per interface, as in keepalived; the first instance to announce on it sets it.
func (d *Daemon) announcerFor(ifname string, g config.GARP) (*garp.Announcer, error) {
	if d.announcers == nil {
		d.announcers = make(map[string]*garp.Announcer)
	}
	a := d.announcers[ifname]
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		if a != nil {
			a.Close()
			delete(d.announcers, ifname)
		}
		return nil, err
	}
	if a != nil && a.Interface().Index == ifi.Index && a.Interface().HardwareAddr.String() == ifi.HardwareAddr.String() {
		return a, nil
	}
	if a != nil {
		a.Close()
	}
	a, err = garp.NewAnnouncer(ifname, garpSettings(g), func(err error) {
		d.log.Debug("announcement not sent", "interface", ifname, "err", err)
	})
	if err != nil {
		delete(d.announcers, ifname)
		return nil, err
	}
	d.announcers[ifname] = a
	return a, nil
}

// closeAnnouncers closes every announcer (at shutdown).
func (d *Daemon) closeAnnouncers() {
	for name, a := range d.announcers {
		a.Close()
		delete(d.announcers, name)
	}
}

// cancelAnnouncements drops the queued announcements of addrs on ifname (leaving Master).
func (d *Daemon) cancelAnnouncements(ifname string, addrs []netip.Addr) {
	if a := d.announcers[ifname]; a != nil && len(addrs) > 0 {
		a.Cancel(addrs)
	}
}
