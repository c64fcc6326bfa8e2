package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// connKey names one shared socket. Instances that send from the same source to the same
// kind of destination on one interface share it; unicast instances get their own (not
// joined to the group), so that a unicast-only interface never joins multicast, as
// keepalived does.
type connKey struct {
	ifname  string
	fam     config.Family
	source  netip.Addr // unicast_src_ip; zero means the interface's own address
	group   netip.Addr
	unicast bool
	srcIf   string // the interface the source address comes from, when not ifname (vmac.go)
}

// conn is one shared socket and the instances routed through it.
type conn struct {
	key    connKey
	tc     socket     // nil while the interface is missing or has no address
	err    error      // why tc is nil, or why the link is unusable
	source netip.Addr // tc.Source() when last checked

	byVRID [256]*instance
	insts  []*instance

	// free holds this socket's one batch while the reader may fill it. The reader must
	// not read again before the loop is done with the previous batch, because payloads
	// point into the transport's buffers; a single batch per socket gives exactly that
	// hand-over without copying and without locks.
	free chan *batch
	stop chan struct{}

	received      uint64
	unattributed  uint64
	otherVRID     uint64 // well-formed enough to name a VRID that no running instance here has
	droppedBefore uint64 // transport drops of sockets closed since

	framesWarned string // the packet socket's trouble last warned of (warnFrames)
}

// batch is one ReadBatch worth of packets on its way from a reader to the loop.
type batch struct {
	conn *conn
	tc   socket      // the socket it was read from; stale after a reopen
	free chan *batch // where it goes back: its reader's free list, even after a reopen
	pkts []transport.Packet
	n    int
}

func (d *Daemon) connFor(ic config.Instance) *conn {
	k := connKey{ifname: ic.Interface, fam: ic.Family, source: ic.UnicastSrc, unicast: ic.Unicast(), srcIf: d.vmacSourceIf(ic)}
	if !ic.Unicast() {
		k.group = ic.MulticastGroup
	}
	if c := d.conns[k]; c != nil {
		return c
	}
	c := &conn{key: k}
	d.conns[k] = c
	d.open(c)
	return c
}

// open tries to open c's socket and starts its reader. A failure is not fatal: the
// instances stay in FAULT and checkInterfaces tries again.
func (d *Daemon) open(c *conn) {
	tc, err := d.opts.open(c.key.ifname, c.key.fam, transport.Options{
		Group:        c.key.group,
		NoJoin:       c.key.unicast,
		Source:       c.key.source,
		BatchSize:    d.opts.batchSize,
		PacketSocket: d.opts.PacketSocket,
		// A macvlan has no address: the parent's is the source (vmac.go).
		SourceInterface: c.key.srcIf,
	})
	if err != nil {
		if c.err == nil || c.err.Error() != err.Error() { // once per distinct cause
			d.log.Warn("cannot open VRRP socket yet", "interface", c.key.ifname, "family", c.key.fam.String(), "err", err)
		}
		c.err = err
		return
	}
	c.tc, c.err = tc, nil
	c.source = tc.Source()
	c.free = make(chan *batch, 1)
	c.stop = make(chan struct{})
	c.free <- &batch{conn: c, tc: tc, free: c.free, pkts: make([]transport.Packet, d.opts.batchSize)}
	go d.reader(c, tc, c.free, c.stop)
	sends := "ip-stack"
	if f, ok := tc.(framesSender); ok {
		if frames, _ := f.SendsFrames(); frames {
			sends = "packet-socket"
		}
	}
	for _, in := range c.insts {
		d.checkAdvertFits(in)
	}
	d.log.Debug("VRRP socket open", "interface", c.key.ifname, "family", c.key.fam.String(), "source", c.source.String(), "multicast_sends", sends)
	d.warnFrames(c)
}

// framesSender is a socket that may send multicast advertisements on a packet socket
// (transport.Conn.SendsFrames); the package's fake sockets are not.
type framesSender interface{ SendsFrames() (bool, error) }

// warnFrames warns, once per cause, when c's socket sends multicast advertisements
// through the IP stack although the packet socket was asked for (Options.PacketSocket)
// because the host refused it: at open, or on a send since (checkLinks asks again).
func (d *Daemon) warnFrames(c *conn) {
	f, ok := c.tc.(framesSender)
	if !ok {
		return
	}
	_, why := f.SendsFrames()
	if why == nil || why.Error() == c.framesWarned {
		return
	}
	c.framesWarned = why.Error()
	d.log.Warn("multicast advertisements go through the IP stack: the host refused the packet socket",
		"interface", c.key.ifname, "family", c.key.fam.String(), "err", why)
}

// mtuSocket is a socket that knows its interface's MTU (transport.Conn.MTU).
type mtuSocket interface{ MTU() int }

// checkAdvertFits warns, once per MTU and advert length, when in's advertisements are
// longer than its interface's MTU. The configuration moved the VIPs that do not fit at
// load (keepalived's rule, vrrp.AddressesThatFit), so this takes an interface that did not
// exist then, or whose MTU was lowered since: the IP stack then fragments the adverts
// (IPv6; IPv4 clears DF for it), the packet socket's are refused (EMSGSIZE, counted in
// vrrpd_advert_send_errors_total and warned of by sendFailed), and a keepalived peer,
// which fits its list to the MTU it saw, lists fewer addresses. Called when the instance
// starts and on every interface check.
func (d *Daemon) checkAdvertFits(in *instance) {
	s, ok := in.conn.tc.(mtuSocket)
	if !ok {
		return
	}
	mtu, n := s.MTU(), advertLen(in.cfg)
	if mtu <= 0 || in.fitChecked == [2]int{mtu, n} {
		return
	}
	in.fitChecked = [2]int{mtu, n}
	if n <= mtu {
		return
	}
	d.log.Warn(fmt.Sprintf("(%s) advertisements exceed the interface's MTU: fragmented through the IP stack, refused on the packet socket", in.cfg.Name),
		"interface", in.cfg.Interface, "mtu", mtu, "advert_bytes", n, "vips", len(in.cfg.VIPs),
		"fit", vrrp.AddressesThatFit(in.cfg.Version, in.cfg.Family, mtu),
		"fix", "raise the MTU, or reload so that the VIPs beyond what fits are excluded from the advert")
}

// advertLen is the length of ic's advertisements with their IP header.
func advertLen(ic config.Instance) int {
	ip, size := 20, 4
	if ic.Family == config.IPv6 {
		ip, size = 40, 16
	}
	n := ip + vrrp.HeaderLen + len(ic.VIPs)*size
	if ic.Version == vrrp.Version2 {
		n += vrrp.AuthDataLen
	}
	return n
}

// closeConn closes c's socket; its reader exits.
func (d *Daemon) closeConn(c *conn) {
	if c.tc == nil {
		return
	}
	close(c.stop)
	c.droppedBefore += c.tc.Stats().Dropped
	c.tc.Close()
	c.tc = nil
}

// reader is the goroutine that drains one socket into batches for the loop.
func (d *Daemon) reader(c *conn, tc socket, free chan *batch, stop chan struct{}) {
	for {
		var b *batch
		select {
		case b = <-free:
		case <-stop:
			return
		case <-d.done:
			return
		}
		n, err := tc.ReadBatch(b.pkts)
		if err != nil {
			if errors.Is(err, transport.ErrClosed) {
				return
			}
			// A transient error (the interface went down under us): hand the batch
			// back and let the loop's interface check decide; do not spin.
			free <- b
			select {
			case <-stop:
				return
			case <-d.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		b.n = n
		d.unhandled.Add(1)
		select {
		case d.batches <- b:
		case <-stop:
			d.unhandled.Add(-1)
			return
		case <-d.done:
			d.unhandled.Add(-1)
			return
		}
	}
}

// handleBatch routes every packet of b to its instance.
func (d *Daemon) handleBatch(b *batch, now time.Time) {
	c := b.conn
	if b.tc != c.tc {
		return // read from a socket closed since
	}
	woke := time.Now()
	d.lastBatch = now
	d.vips.BeginTurn() // a batch may step hundreds of masters down: one record write
	defer d.endTurn()
	d.wake.now, d.wake.woke = now, woke
	defer d.endWake()
	// The packets not yet handled are readWhileBusy's too (current): a master stepping
	// down for one of them releases its addresses, and the next packet of the batch, a
	// better master for another of its routers, waited for all of them (issue 31's leave
	// lab: 220 ms of a release of 350, and the other router's new master added its
	// addresses beside this host's).
	d.current, d.currentNext = b, 0
	defer func() { d.current = nil }()
	for d.currentNext < b.n {
		p := &b.pkts[d.currentNext]
		d.currentNext++
		if d.handlePacket(c, p, arrivedAt(p, now)) {
			d.advertsBetween(now, woke) // a transition's slow work may have made adverts due
		}
	}
	d.dirty = true
}

// maxArrivalAge bounds how far before its reading a packet is timed (arrivedAt).
const maxArrivalAge = 2 * time.Millisecond

// arrivedAt is the time to handle p at: when the kernel received it, on now's clock, so
// that a Master_Down_Timer runs from the advertisement's arrival as RFC 5798 §6.4.2 has
// it, not from when the reader goroutine, the channel and the lock let the loop see it
// (about 100 µs later at the median on the test machine, up to 0.6 ms at p99; keepalived,
// one thread, times a packet when its select returns). The age counts up to
// maxArrivalAge only: more is a process that was not scheduled, or a wall clock that
// stepped, and a backup that read its master's adverts late (or after its socket queue
// overflowed, keeping only old ones) must not time them out on reading them. So a backup
// is never more than maxArrivalAge less patient than when it timed packets on reading.
func arrivedAt(p *transport.Packet, now time.Time) time.Time {
	if p.Arrived.IsZero() {
		return now
	}
	age := now.Sub(p.Arrived) // the wall clocks: Arrived has no monotonic reading
	if age <= 0 {
		return now
	}
	return now.Add(-min(age, maxArrivalAge))
}

// handlePacket validates one packet and feeds it to the instance its VRID names, and
// reports whether that changed the instance's state. Errors
// are counted on that instance (as keepalived does) or, when no instance has the VRID, on
// the socket; the packet is then dropped.
func (d *Daemon) handlePacket(c *conn, p *transport.Packet, now time.Time) (changed bool) {
	c.received++
	_, vrid, ok := vrrp.ParseHeader(p.Payload)
	if !ok {
		c.unattributed++
		return false
	}
	in := c.byVRID[vrid]
	if in == nil || in.sm == nil {
		// Another virtual router on the same segment (or one of ours that could not
		// start): normal on a shared wire, so counted apart from the malformed packets,
		// whose alert would otherwise fire wherever another VRRP speaker runs. Not decoded
		// further: its checks are its own routers' business.
		c.otherVRID++
		return false
	}
	if in.cfg.Unicast() {
		// keepalived's check_unicast_src: only the configured peers speak for this
		// virtual router. The TTL is not checked, as routers may sit between peers.
		if !slices.Contains(in.cfg.UnicastPeers, p.Src) {
			c.unattributed++
			return false
		}
	} else if p.TTL != 255 {
		in.sm.CountError(vrrp.ErrTTL)
		return false
	}
	unmarshal := d.adv.Unmarshal
	if len(in.cfg.VIPs) == 0 {
		unmarshal = d.adv.UnmarshalNoAddresses // a VRRPv2 instance without VIPs
	}
	if err := unmarshal(p.Payload, p.Src, p.Dst); err != nil {
		if !in.sm.CountError(err) {
			c.unattributed++
		}
		return false
	}
	master, transitions := in.sm.Master(), in.transitions
	d.acts = in.sm.HandleAdvert(now, &d.adv, p.Src, d.acts[:0])
	d.execute(in, now)
	// A new master is news for `vrrpd status` at once, like a transition; a transition
	// in this call published already, after the state machine learnt the master (a mass
	// step-down heard in one batch published every instance twice).
	if in.sm.Master() != master && in.transitions == transitions {
		d.publish(now)
	}
	return in.transitions != transitions
}

// checkInterfaces re-reads every socket's interface: opens sockets that could not be
// opened, and sets or clears FAULT on the instances of interfaces that went down, lost
// their address or came back; a changed source address reconfigures the instances.
func (d *Daemon) checkInterfaces(now time.Time) {
	d.checkLinks(now)
	d.checkVIPs(now)
	d.checkRoutes(now)
	d.checkTrackers(now)
}

// checkLinks is checkInterfaces without the VIPs: the loop runs checkVIPs' netlink
// queries without the lock (Daemon.checkInterfacesUnlocking).
func (d *Daemon) checkLinks(now time.Time) {
	d.linksChecked, d.linkTrouble = now, false
	d.garp.Refresh()
	for _, c := range d.conns {
		if c.tc == nil {
			d.vmacRetry(c)
			d.open(c)
		}
		var err error
		if c.tc == nil {
			err = c.err
		} else {
			err = c.tc.Refresh()
			if err == nil {
				err = d.links.Running(c.key.ifname)
			}
			if err != nil && errors.Is(err, transport.ErrNoInterface) {
				// Deleted (and maybe re-created): start over with a fresh socket.
				d.closeConn(c)
				c.err = err
			}
		}
		if c.tc != nil {
			d.warnFrames(c)
			for _, in := range c.insts {
				d.checkAdvertFits(in) // an MTU lowered at runtime
			}
		}
		if c.tc != nil && err == nil {
			if src := c.tc.Source(); src != c.source {
				c.source = src
				for _, in := range c.insts {
					d.sourceChanged(in, now)
				}
			}
		}
		if c.tc == nil || err != nil {
			d.linkTrouble = true // poll it every second until it recovers
		}
		for _, in := range c.insts {
			d.setFault(in, d.trackSource(in, err), now)
		}
	}
}
