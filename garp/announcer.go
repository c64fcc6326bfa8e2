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
// One goroutine per Announcer sends them, paced by [Settings.Interval] and
// [Settings.NAInterval], so a VRRP loop never blocks on pacing. It is safe
// for concurrent use.
//
// The first message of a family whose queue is empty and whose pacing slot is
// free goes out from the caller, before Announce returns: a takeover's first
// GARP is what moves the LAN's traffic, and waking the sender goroutine costs
// a thread wake-up (0.3 ms at the median on the test machine, more at p99,
// beside keepalived's 0.1 ms from its VIP to its first GARP, which it sends in
// line). Everything else is queued.
//
// Announce costs the same whatever the number of rounds: a call is queued
// as one job (its addresses and a count of rounds still to go), and the
// sender makes each message when its slot comes. A burst of many rounds
// (garp_master_repeat is a count from configuration) thus never stops the
// caller, and memory stays one job per call.
//
// The interface's MAC is read when the Announcer is made, in the calling
// thread's network namespace; its packet sockets, and the file its IPv6
// forwarding setting is read from when an NA is sent (the NA Router flag, see
// routerFlag), stay bound to that interface and namespace wherever they are
// used from afterwards.
type Announcer struct {
	ifi    *net.Interface
	router *routerFlag // read under sendMu only
	arp    frameConn
	ip6    frameConn

	mu      sync.Mutex
	lane4   lane // gratuitous ARPs, paced by Settings.Interval
	lane6   lane // neighbour advertisements, paced by Settings.NAInterval
	pending int  // messages queued or being sent
	idle    *sync.Cond
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	onError func(error)

	// sendMu serialises the sends of the caller (Announce's first message) and of
	// the sender goroutine, which share the router flag and the sockets; Close
	// takes it to close the sockets, after which sockClosed keeps a late caller
	// from writing to them.
	sendMu     sync.Mutex
	sockClosed bool

	sentARP, sentNA, errs atomic.Uint64
}

// lane is one family's queue: jobs in the order they were announced, sent one message at a
// time in their pacer's slots.
type lane struct {
	pace pacer
	jobs []*job
}

// job is what is left of one Announce call in one family: rounds more rounds over addrs,
// the current one from addrs[next].
type job struct {
	addrs  []netip.Addr
	rounds int
	next   int
}

// left is how many messages the job still sends.
func (j *job) left() int { return j.rounds*len(j.addrs) - j.next }

// take returns the head job's next message if its slot has come by now, and books the
// slot; wait is how long until it comes otherwise (negative when the lane is empty).
func (l *lane) take(now time.Time) (ip netip.Addr, ok bool, wait time.Duration) {
	if len(l.jobs) == 0 {
		return netip.Addr{}, false, -1
	}
	if l.pace.Interval > 0 && l.pace.next.After(now) {
		return netip.Addr{}, false, l.pace.next.Sub(now)
	}
	l.pace.reserve(now)
	j := l.jobs[0]
	ip = j.addrs[j.next]
	j.next++
	if j.next == len(j.addrs) {
		j.next = 0
		j.rounds--
		if j.rounds == 0 {
			l.jobs[0] = nil
			l.jobs = l.jobs[1:]
		}
	}
	return ip, true, 0
}

// cancel drops vips from every job and returns how many messages that dropped.
func (l *lane) cancel(vips []netip.Addr) int {
	dropped := 0
	kept := l.jobs[:0]
	for _, j := range l.jobs {
		before := j.left()
		next := 0
		var addrs []netip.Addr
		for i, ip := range j.addrs {
			if slices.Contains(vips, ip) {
				continue
			}
			if i < j.next {
				next++
			}
			addrs = append(addrs, ip)
		}
		j.addrs, j.next = addrs, next
		if len(addrs) > 0 && next == len(addrs) { // the current round's rest was all cancelled
			j.next = 0
			j.rounds--
		}
		if len(addrs) == 0 || j.rounds <= 0 {
			dropped += before
			continue
		}
		dropped += before - j.left()
		kept = append(kept, j)
	}
	clear(l.jobs[len(kept):])
	l.jobs = kept
	return dropped
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
		lane4:   lane{pace: pacer{Interval: s.Interval}},
		lane6:   lane{pace: pacer{Interval: s.NAInterval}},
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
// one GARP per IPv4 VIP and one NA per IPv6 VIP, in the order given. It
// queues one job per family, not the messages themselves.
func (a *Announcer) Announce(vips []netip.Addr, rounds int) {
	if rounds <= 0 || len(vips) == 0 {
		return
	}
	var v4, v6 []netip.Addr
	for _, ip := range vips {
		if ip = ip.Unmap(); ip.Is4() {
			v4 = append(v4, ip)
		} else {
			v6 = append(v6, ip)
		}
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	now := time.Now()
	var first [2]netip.Addr // sent from here: at most one a family
	nfirst := 0
	for _, q := range []struct {
		l     *lane
		addrs []netip.Addr
	}{{&a.lane4, v4}, {&a.lane6, v6}} {
		if len(q.addrs) > 0 {
			idle := len(q.l.jobs) == 0
			q.l.jobs = append(q.l.jobs, &job{addrs: q.addrs, rounds: rounds})
			a.pending += rounds * len(q.addrs)
			if !idle {
				continue // behind other jobs: their order stands
			}
			if ip, ok, _ := q.l.take(now); ok {
				first[nfirst] = ip
				nfirst++
			}
		}
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
	a.mu.Unlock()
	if nfirst == 0 {
		return
	}
	a.sendMu.Lock()
	for _, ip := range first[:nfirst] {
		if !a.sockClosed {
			a.send(ip)
		}
	}
	a.sendMu.Unlock()
	a.sent(nfirst)
}

// sent books n messages taken from the lanes as sent.
func (a *Announcer) sent(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return // pending was zeroed
	}
	a.pending -= n
	if a.pending == 0 {
		a.idle.Broadcast()
	}
}

// Cancel drops the queued announcements for the VIPs (keepalived empties
// its delayed ARP list when an instance leaves master).
func (a *Announcer) Cancel(vips []netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending -= a.lane4.cancel(vips) + a.lane6.cancel(vips)
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
	a.lane4.jobs, a.lane6.jobs = nil, nil
	a.pending = 0
	a.idle.Broadcast()
	a.mu.Unlock()
	close(a.wake)
	<-a.done
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	a.sockClosed = true
	return errors.Join(a.arp.Close(), a.ip6.Close(), a.router.close())
}

// sendBatch bounds how many messages the sender takes per locking of the
// queue, so that Announce and Cancel never wait long for it.
const sendBatch = 64

func (a *Announcer) run() {
	defer close(a.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	due := make([]netip.Addr, 0, sendBatch)
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return
		}
		now := time.Now()
		due = due[:0]
		var wait time.Duration = -1
		// One message from each family in turn, so a round's GARPs and NAs
		// interleave as they were given.
		for len(due) < sendBatch {
			ip4, ok4, w4 := a.lane4.take(now)
			if ok4 {
				due = append(due, ip4)
			}
			ip6, ok6, w6 := a.lane6.take(now)
			if ok6 {
				due = append(due, ip6)
			}
			if !ok4 && !ok6 {
				for _, w := range []time.Duration{w4, w6} {
					if w >= 0 && (wait < 0 || w < wait) {
						wait = w
					}
				}
				break
			}
		}
		a.mu.Unlock()

		a.sendMu.Lock()
		for _, ip := range due {
			a.send(ip)
		}
		a.sendMu.Unlock()
		if len(due) > 0 {
			a.sent(len(due))
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
