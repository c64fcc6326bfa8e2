package daemon

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/garp"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// The daemon's ties to the host, as the loop uses them. Each is the least the loop needs
// of its package, so that the loop's logic runs in unit tests on in-memory fakes that
// record calls (daemon_test.go), without root or a network namespace. New wires the real
// ones; the tests put theirs in Options.

// vipStore adds and removes the virtual addresses and remembers them across crashes:
// *vip.Manager. It owns only what it added, and counts holders.
type vipStore interface {
	// Hold and Release take the addresses of one action in one call, so the crash record
	// is written once for all of them. holder is the virtual router (a VIP shared by two
	// leaves when the last lets go). Hold returns the addresses that were on their
	// interface already without the store having added them: never touched, never
	// removed.
	Hold(holder string, vs ...vip.VIP) (foreign []vip.VIP, err error)
	Release(holder string, vs ...vip.VIP) error
	// Missing returns those of vs that are not on their interface.
	Missing(vs ...vip.VIP) ([]vip.VIP, error)
	// Recover removes whatever a previous run recorded and returns it.
	Recover() ([]vip.VIP, error)
	// BeginTurn and EndTurn bracket one wake-up of the daemon: removals inside write the
	// record once, at EndTurn, and Reserve records the VIPs the wake-up's takeovers are
	// about to add in one write, so that a mass takeover or step-down of hundreds of
	// instances costs a few writes, not one each of a record that grows with them.
	BeginTurn()
	EndTurn() error
	Reserve(vs ...vip.VIP) error
	Close() error
}

// announcers put gratuitous ARPs and unsolicited neighbour advertisements on the wire,
// paced per interface, without making the loop wait: garpAnnouncers.
type announcers interface {
	// Announce queues rounds rounds of announcements of addrs on ifname. s sets the
	// interface's pacing when its sender is opened.
	Announce(ifname string, s garp.Settings, addrs []netip.Addr, rounds int) error
	// Cancel drops the queued announcements of addrs on ifname (leaving Master).
	Cancel(ifname string, addrs []netip.Addr)
	// Refresh drops the senders of interfaces that are gone or were re-created; the loop
	// calls it on every link event and poll, so that Announce need not look.
	Refresh()
	// Close closes every sender (at shutdown).
	Close()
}

// socket is one raw VRRP socket on an interface and address family: *transport.Conn.
type socket interface {
	// Source is the address adverts go out from: the configured one, or the one
	// transport picks from the interface (invalid when it has none).
	Source() netip.Addr
	Group() netip.Addr
	Send(payload []byte, dst netip.Addr) error
	// ReadBatch blocks until packets arrive; transport.ErrClosed once closed.
	ReadBatch(pkts []transport.Packet) (int, error)
	// Refresh re-reads the interface: transport.ErrNoInterface, ErrInterfaceDown or
	// ErrNoAddress when it is unusable.
	Refresh() error
	// Pending reports whether a packet waits unread in the socket's queue.
	Pending() bool
	Stats() transport.Stats
	Close() error
}

// openSocket opens a socket: transport.Open. A failure is not fatal (FAULT, retried).
type openSocket func(ifname string, fam config.Family, opt transport.Options) (socket, error)

func openTransport(ifname string, fam config.Family, opt transport.Options) (socket, error) {
	c, err := transport.Open(ifname, fam, opt)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return c, nil
}

// links reports and watches the state of interfaces: netlinkLinks.
type links interface {
	// Running reports transport.ErrNoInterface when ifname does not exist and
	// transport.ErrInterfaceDown when it is down or has no carrier.
	Running(ifname string) error
	// Watch calls wake after link or address changes until stop is called; wake must not
	// block.
	Watch(wake func()) (stop func())
	Close()
}

// garpAnnouncers is the real announcers: one garp.Announcer per interface, opened on
// first use and again after Refresh found the interface re-created. Announce does not look
// the interface up: it runs on every takeover right before the first announcement, where a
// netlink round trip (under the kernel's rtnl lock, which every namespace of the host
// shares) cost 0.1-0.4 ms on the test machine. Pacing (vrrp_garp_interval,
// vrrp_gna_interval) is per interface, as in keepalived; the first instance to announce
// on it sets it.
type garpAnnouncers struct {
	log *slog.Logger
	by  map[string]*garp.Announcer
	nl  *netlink.Handle // opened on first use
}

func (g *garpAnnouncers) Announce(ifname string, s garp.Settings, addrs []netip.Addr, rounds int) error {
	a, err := g.open(ifname, s)
	if err != nil {
		return err
	}
	a.Announce(addrs, rounds)
	return nil
}

func (g *garpAnnouncers) open(ifname string, s garp.Settings) (*garp.Announcer, error) {
	if g.by == nil {
		g.by = make(map[string]*garp.Announcer)
	}
	if a := g.by[ifname]; a != nil {
		return a, nil
	}
	a, err := garp.NewAnnouncer(ifname, s, func(err error) {
		g.log.Debug("announcement not sent", "interface", ifname, "err", err)
	})
	if err != nil {
		delete(g.by, ifname)
		return nil, err
	}
	g.by[ifname] = a
	return a, nil
}

func (g *garpAnnouncers) Cancel(ifname string, addrs []netip.Addr) {
	if a := g.by[ifname]; a != nil && len(addrs) > 0 {
		a.Cancel(addrs)
	}
}

// Refresh closes the senders whose interface is gone, or is another one under the same
// name (index or MAC changed): one netlink request per interface, on a socket kept open.
func (g *garpAnnouncers) Refresh() {
	if len(g.by) == 0 {
		return
	}
	if g.nl == nil {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			g.log.Debug("cannot check the announcers' interfaces", "err", err)
			return
		}
		g.nl = h
	}
	for name, a := range g.by {
		link, err := g.nl.LinkByName(name)
		if err == nil && a.Interface().Index == link.Attrs().Index && bytes.Equal(a.Interface().HardwareAddr, link.Attrs().HardwareAddr) {
			continue
		}
		a.Close()
		delete(g.by, name)
	}
}

func (g *garpAnnouncers) Close() {
	for name, a := range g.by {
		a.Close()
		delete(g.by, name)
	}
	if g.nl != nil {
		g.nl.Close()
		g.nl = nil
	}
}

// netlinkLinks is the real links, on netlink.
type netlinkLinks struct {
	log *slog.Logger
	nl  *netlink.Handle // opened on first use
}

// Running reports an error when the interface has no carrier (IFF_RUNNING clear), as
// keepalived treats a link without carrier as down.
func (l *netlinkLinks) Running(ifname string) error {
	if l.nl == nil {
		// One handle for the daemon's life: the package-level calls open and close a
		// netlink socket each time, and this runs on every interface check.
		h, err := netlink.NewHandle()
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		l.nl = h
	}
	link, err := l.nl.LinkByName(ifname)
	if err != nil {
		return transport.ErrNoInterface
	}
	a := link.Attrs()
	if a.Flags&net.FlagUp == 0 || a.RawFlags&unix.IFF_RUNNING == 0 {
		return transport.ErrInterfaceDown
	}
	return nil
}

// Watch subscribes to link and address changes, on one netlink socket read through the
// poller (routeEvents). A burst of changes is one wake; events lost to an overflow are a
// change too, so that the loop re-reads what it may have missed. If the socket fails it
// is renewed. While a subscription cannot be made, wake is called every second instead:
// the loop then re-reads the interfaces as often as it did before it had events.
func (l *netlinkLinks) Watch(wake func()) (stop func()) {
	done := make(chan struct{})
	var mu sync.Mutex
	var cur *routeEvents // the socket in use, for stop to close
	go func() {
		for {
			ev, err := subscribeRouteEvents()
			if err != nil {
				l.log.Warn("no netlink link and address events; polling interfaces only", "err", err)
				select {
				case <-time.After(time.Second):
					wake()
					continue
				case <-done:
					return
				}
			}
			mu.Lock()
			select {
			case <-done:
				mu.Unlock()
				ev.Close()
				return
			default:
			}
			cur = ev
			mu.Unlock()
			for {
				lost, err := ev.wait()
				if err != nil {
					select {
					case <-done:
						return
					default:
					}
					l.log.Debug("netlink events ended; renewing", "err", err)
					ev.Close()
					wake()
					break
				}
				if lost {
					l.log.Debug("netlink events lost to an overflow; re-reading interfaces")
				}
				wake()
			}
		}
	}()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		close(done)
		if cur != nil {
			cur.Close()
		}
	}
}

func (l *netlinkLinks) Close() {
	if l.nl != nil {
		l.nl.Close()
		l.nl = nil
	}
}
