package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
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
	// subscribe opens Watch's socket; nil is subscribeRoute. Tests open theirs in a
	// network namespace of their own.
	subscribe func() (*nl.NetlinkSocket, error)
	// overflows counts the times the kernel dropped events for want of room in the socket.
	overflows atomic.Uint64
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

// Watch subscribes to link and address changes on one netlink socket, vishvananda/netlink's
// nl.Subscribe to the link and both address groups. The daemon only needs to know that
// something changed (the loop then re-reads the interfaces), so one socket for the three
// groups serves where LinkSubscribe and AddrSubscribe would take a socket and a goroutine
// each to parse what is not used. The library's socket is non-blocking and read through
// the runtime's poller, so the goroutine below holds no thread while it waits.
//
// Events lost to an overflow (ENOBUFS: the kernel had no room to queue them) are a change
// too: the loop re-reads everything, so nothing missed stays missed, and the socket goes
// on. If the socket fails otherwise it is renewed, and wake called once the new one
// listens, for what came in between. While a subscription cannot be made, wake is called
// every second instead: the loop then re-reads the interfaces as often as it did before it
// had events. stop returns once the goroutine has ended.
func (l *netlinkLinks) Watch(wake func()) (stop func()) {
	subscribe := l.subscribe
	if subscribe == nil {
		subscribe = subscribeRoute
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	var mu sync.Mutex
	var cur *nl.NetlinkSocket // the socket in use, for stop to close
	go func() {
		defer close(ended)
		renewed := false
		for {
			s, err := subscribe()
			if err != nil {
				l.log.Warn("no netlink link and address events; polling interfaces only", "err", err)
				select {
				case <-time.After(time.Second):
					wake()
					renewed = true
					continue
				case <-done:
					return
				}
			}
			mu.Lock()
			select {
			case <-done:
				mu.Unlock()
				s.Close()
				return
			default:
			}
			cur = s
			mu.Unlock()
			if renewed {
				wake()
			}
			err = l.receive(s, wake)
			select {
			case <-done:
				return
			default:
			}
			l.log.Debug("netlink events ended; renewing", "err", err)
			s.Close()
			renewed = true
		}
	}()
	return func() {
		mu.Lock()
		close(done)
		if cur != nil {
			cur.Close() // ends the Receive in progress
		}
		mu.Unlock()
		<-ended
	}
}

// subscribeRoute opens the socket of Watch in the daemon's network namespace.
func subscribeRoute() (*nl.NetlinkSocket, error) {
	return nl.Subscribe(unix.NETLINK_ROUTE, unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR)
}

// receive calls wake for every message from the kernel on s, and for every overflow,
// until s fails or is closed.
func (l *netlinkLinks) receive(s *nl.NetlinkSocket, wake func()) error {
	for {
		_, from, err := s.Receive()
		switch {
		case err == nil:
			// Only the kernel's word counts: another process may send to the groups.
			if from.Pid == nl.PidKernel {
				wake()
			}
		case errors.Is(err, unix.ENOBUFS):
			l.overflows.Add(1)
			l.log.Debug("netlink events lost to an overflow; re-reading interfaces")
			wake()
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
		default:
			return err
		}
	}
}

func (l *netlinkLinks) Close() {
	if l.nl != nil {
		l.nl.Close()
		l.nl = nil
	}
}
