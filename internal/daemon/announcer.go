package daemon

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/mdlayher/packet"

	"github.com/vrrp-operator/vrrp-operator/garp"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
)

// announcer puts gratuitous ARPs and unsolicited NAs on one interface, with frames built
// by package garp. It is opened lazily, on the first announcement, and reopened when the
// interface changes.
type announcer struct {
	ifname string
	ifi    *net.Interface
	pc     *packet.Conn
}

func (d *Daemon) announcerFor(ifname string, _ config.GARP) (*announcer, error) {
	if d.announcers == nil {
		d.announcers = make(map[string]*announcer)
	}
	a := d.announcers[ifname]
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		if a != nil {
			a.close()
			delete(d.announcers, ifname)
		}
		return nil, err
	}
	if a != nil && a.ifi.Index == ifi.Index && a.ifi.HardwareAddr.String() == ifi.HardwareAddr.String() {
		return a, nil
	}
	if a != nil {
		a.close()
	}
	// Protocol 0: a send-only socket, so the kernel never queues received frames to it.
	pc, err := packet.Listen(ifi, packet.Raw, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("packet socket on %s: %w", ifname, err)
	}
	a = &announcer{ifname: ifname, ifi: ifi, pc: pc}
	d.announcers[ifname] = a
	return a, nil
}

// send sends n rounds: per round one GARP per IPv4 address and one NA per IPv6 address.
func (a *announcer) send(addrs []netip.Addr, n int, _ time.Time) error {
	var firstErr error
	for range n {
		for _, ip := range addrs {
			var frame []byte
			var err error
			dst := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			if ip.Is4() {
				frame, err = garp.GARPFrame(a.ifi.HardwareAddr, ip)
			} else {
				frame, err = garp.NAFrame(a.ifi.HardwareAddr, ip, false)
				dst = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}
			}
			if err == nil {
				_, err = a.pc.WriteTo(frame, &packet.Addr{HardwareAddr: dst})
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

func (a *announcer) close() { a.pc.Close() }
