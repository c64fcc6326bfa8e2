package garp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
)

// Announcer sends gratuitous ARPs and unsolicited NAs on one interface.
// Calls only queue messages; one goroutine per Announcer sends them, paced
// by [Settings.Interval] and [Settings.NAInterval], so a VRRP loop never
// blocks on pacing. It is safe for concurrent use.
//
// The interface's MAC is read when the Announcer is made, in the calling
// thread's network namespace; its packet sockets, and the file its IPv6
// forwarding setting is read from when an NA is sent (the NA Router flag, see
// routerFlag), stay bound to that interface and namespace wherever they are
// used from afterwards.
type Announcer struct {
	ifi    *net.Interface
	router *routerFlag // read by the sending goroutine only
	arp    frameConn
	ip6    frameConn

	mu      sync.Mutex
	pace4   pacer
	pace6   pacer
	queue   []message // sorted by at
	pending int       // queued or being sent
	idle    *sync.Cond
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	onError func(error)

	sentARP, sentNA, errs atomic.Uint64
}

type message struct {
	at time.Time
	ip netip.Addr
}

// counts are what an Announcer did.
type counts struct {
	GARPs, NAs, Errors uint64
}

// NewAnnouncer opens the packet sockets for ifname. onError, if not nil,
// hears about every failed send (from the sending goroutine); failures are
// counted in the counts either way.
func NewAnnouncer(ifname string, s Settings, onError func(error)) (*Announcer, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("garp: interface %s: %w", ifname, err)
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("garp: interface %s: %w", ifname, errNotEthernet)
	}
	// The sockets only send. A filter that drops every frame keeps the
	// kernel from queueing the interface's ARP and IPv6 traffic for a
	// reader that never comes.
	drop, err := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: 0}})
	if err != nil {
		return nil, err
	}
	arpConn, err := packet.Listen(ifi, packet.Raw, etherTypeARP, &packet.Config{Filter: drop})
	if err != nil {
		return nil, fmt.Errorf("garp: ARP socket on %s: %w", ifname, err)
	}
	ip6Conn, err := packet.Listen(ifi, packet.Raw, etherTypeIPv6, &packet.Config{Filter: drop})
	if err != nil {
		arpConn.Close()
		return nil, fmt.Errorf("garp: IPv6 socket on %s: %w", ifname, err)
	}
	return start(ifi, s, onError, arpConn, ip6Conn, newRouterFlag(openForwarding(ifname))), nil
}

// frameConn is where an Announcer writes its frames: a *packet.Conn bound to
// the interface, or the tests' recorder.
type frameConn interface {
	WriteTo(b []byte, addr net.Addr) (int, error)
	Close() error
}

// start makes the Announcer of ifi on its sockets and starts its sender.
func start(ifi *net.Interface, s Settings, onError func(error), arp, ip6 frameConn, router *routerFlag) *Announcer {
	a := &Announcer{
		ifi:     ifi,
		router:  router,
		arp:     arp,
		ip6:     ip6,
		pace4:   pacer{Interval: s.Interval},
		pace6:   pacer{Interval: s.NAInterval},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		onError: onError,
	}
	a.idle = sync.NewCond(&a.mu)
	go a.run()
	return a
}

// Interface is the interface the Announcer sends on.
func (a *Announcer) Interface() *net.Interface { return a.ifi }

// Announce queues rounds rounds of announcements for the VIPs: a round is
// one GARP per IPv4 VIP and one NA per IPv6 VIP, in the order given.
func (a *Announcer) Announce(vips []netip.Addr, rounds int) {
	if rounds <= 0 || len(vips) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	now := time.Now()
	for range rounds {
		for _, ip := range vips {
			ip = ip.Unmap()
			var at time.Time
			if ip.Is4() {
				at = a.pace4.reserve(now)
			} else {
				at = a.pace6.reserve(now)
			}
			i, _ := slices.BinarySearchFunc(a.queue, at, func(m message, t time.Time) int { return m.at.Compare(t) })
			for i < len(a.queue) && a.queue[i].at.Equal(at) {
				i++
			}
			a.queue = slices.Insert(a.queue, i, message{at, ip})
			a.pending++
		}
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Cancel drops the queued announcements for the VIPs (keepalived empties
// its delayed ARP list when an instance leaves master).
func (a *Announcer) Cancel(vips []netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.queue)
	a.queue = slices.DeleteFunc(a.queue, func(m message) bool { return slices.Contains(vips, m.ip) })
	a.pending -= n - len(a.queue)
	if a.pending == 0 {
		a.idle.Broadcast()
	}
}

// flush waits until everything queued so far has been sent (or ctx ends).
func (a *Announcer) flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		a.mu.Lock()
		a.idle.Broadcast()
		a.mu.Unlock()
	})
	defer stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.pending > 0 && !a.closed {
		if err := ctx.Err(); err != nil {
			return err
		}
		a.idle.Wait()
	}
	return nil
}

// counts returns the counters (for the tests).
func (a *Announcer) counts() counts {
	return counts{GARPs: a.sentARP.Load(), NAs: a.sentNA.Load(), Errors: a.errs.Load()}
}

// Close drops what is queued, stops the sender and closes the sockets.
func (a *Announcer) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.queue = nil
	a.pending = 0
	a.idle.Broadcast()
	a.mu.Unlock()
	close(a.wake)
	<-a.done
	return errors.Join(a.arp.Close(), a.ip6.Close(), a.router.close())
}

func (a *Announcer) run() {
	defer close(a.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return
		}
		now := time.Now()
		i := 0
		for i < len(a.queue) && !a.queue[i].at.After(now) {
			i++
		}
		due := slices.Clone(a.queue[:i])
		a.queue = slices.Delete(a.queue, 0, i)
		var wait time.Duration = -1
		if len(a.queue) > 0 {
			wait = a.queue[0].at.Sub(now)
		}
		a.mu.Unlock()

		for _, m := range due {
			a.send(m.ip)
		}
		if len(due) > 0 {
			a.mu.Lock()
			if !a.closed {
				a.pending -= len(due)
				if a.pending == 0 {
					a.idle.Broadcast()
				}
			}
			a.mu.Unlock()
			continue
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case _, ok := <-a.wake:
			if !ok {
				return
			}
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (a *Announcer) send(ip netip.Addr) {
	var (
		frame []byte
		err   error
		conn  frameConn
		dst   net.HardwareAddr
	)
	if ip.Is4() {
		frame, err = garpFrame(a.ifi.HardwareAddr, ip)
		conn, dst = a.arp, broadcastMAC
	} else {
		frame, err = naFrame(a.ifi.HardwareAddr, ip, a.router.get())
		conn, dst = a.ip6, allNodesMAC
	}
	if err == nil {
		_, err = conn.WriteTo(frame, &packet.Addr{HardwareAddr: dst})
	}
	switch {
	case err != nil:
		a.errs.Add(1)
		if a.onError != nil {
			a.onError(fmt.Errorf("garp: announce %s on %s: %w", ip, a.ifi.Name, err))
		}
	case ip.Is4():
		a.sentARP.Add(1)
	default:
		a.sentNA.Add(1)
	}
}
