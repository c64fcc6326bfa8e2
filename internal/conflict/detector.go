package conflict

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/packet"
)

// Options configure a Detector.
type Options struct {
	Settings
	// Logger receives the conflicts' warnings; nil means slog.Default().
	Logger *slog.Logger
	// OnChange, if set, hears each conflict that starts and each that ends, as the log
	// does (at most one start per VIP every warnEvery, and the end of each start it
	// heard), from the detector's goroutine: it must return at once.
	OnChange func(Change)
}

// warnEvery spaces the warnings (and OnChange's starts) of one VIP: a conflict that
// comes and goes (a flapping link between the holders) is one line a minute, with the
// count of the ones kept quiet.
const warnEvery = time.Minute

// reopenAfter spaces the attempts to open an interface's sockets after one failed (an
// interface that is gone, or not Ethernet).
const reopenAfter = 5 * time.Second

// ownMACsEvery is how often this host's MACs are read again: a MAC changed by hand, a
// macvlan added.
const ownMACsEvery = 30 * time.Second

// keepSockets is how long an interface's sockets stay open once none of its VIPs is held:
// a master that steps down and takes over again (a preemption after a failover, a link
// that flaps) reuses them, and no transition ever waits for sockets to be opened or closed.
// They are opened at the first probe, settle after a takeover, never at the takeover.
const keepSockets = 30 * time.Second

// A Detector probes the held VIPs and listens for other holders, in a goroutine of its
// own (Run). SetHeld and Conflicts are safe from any goroutine and never block.
type Detector struct {
	opts Options
	log  *slog.Logger

	held      atomic.Pointer[[]Target]
	wake      chan struct{}
	evidence  chan evidence
	conflicts atomic.Pointer[[]Conflict]

	// Owned by Run's goroutine.
	t       *tracker
	socks   map[string]*ifSockets
	unused  map[string]time.Time // interfaces with sockets and no held VIP, since when
	failed  map[string]time.Time // interfaces whose sockets could not be opened, and when
	own     map[string]bool      // this host's MACs
	ownRead time.Time
	warned  map[netip.Addr]*warning
	readers sync.WaitGroup
}

type warning struct {
	last  time.Time
	quiet int
	told  map[string]bool // MACs whose start OnChange heard, so it hears their end
}

// evidence is a claim read on dev.
type evidence struct {
	claim
	dev string
}

// New returns a Detector; nothing touches the network before Run and a held VIP.
func New(opts Options) *Detector {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Detector{
		opts:     opts,
		log:      opts.Logger,
		wake:     make(chan struct{}, 1),
		evidence: make(chan evidence, 64),
		t:        newTracker(opts.Settings),
		socks:    map[string]*ifSockets{},
		unused:   map[string]time.Time{},
		failed:   map[string]time.Time{},
		warned:   map[netip.Addr]*warning{},
	}
	d.conflicts.Store(&[]Conflict{})
	return d
}

// SetHeld hands over the VIPs this node's masters hold now (ts is not modified
// afterwards by the caller). It never blocks: Run takes the latest set.
func (d *Detector) SetHeld(ts []Target) {
	d.held.Store(&ts)
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Conflicts returns the conflicts now (shared: do not modify).
func (d *Detector) Conflicts() []Conflict { return *d.conflicts.Load() }

// Run probes and listens until ctx ends, then closes its sockets.
func (d *Detector) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer func() {
		timer.Stop()
		for dev := range d.socks {
			d.closeSockets(dev)
		}
		d.readers.Wait()
	}()
	for {
		held := false
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
			d.applyHeld(time.Now())
			held = true // a conflict's holders may have changed
		case e := <-d.evidence:
			d.observe(e, time.Now())
		case <-timer.C:
		}
		// Evidence first, so an answer read before its window closed counts in it.
		for drained := false; !drained; {
			select {
			case e := <-d.evidence:
				d.observe(e, time.Now())
			default:
				drained = true
			}
		}
		now := time.Now()
		for _, k := range d.t.probes(now) {
			d.probe(k, now)
		}
		d.publish(now, held)
		d.closeUnused(now)
		at, ok := d.t.nextWake()
		for _, since := range d.unused {
			if x := since.Add(keepSockets); !ok || x.Before(at) {
				at, ok = x, true
			}
		}
		if ok {
			timer.Reset(time.Until(at))
		} else {
			timer.Stop()
		}
	}
}

// applyHeld takes the latest held set into the tracker's schedule, and notes the
// interfaces whose sockets no held VIP needs any more (closed keepSockets later). It opens
// nothing: it runs at every transition, when the daemon has better things to do with the
// CPU than netlink requests and socket setup.
func (d *Detector) applyHeld(now time.Time) {
	p := d.held.Load()
	if p == nil {
		return
	}
	ts := *p
	devs := map[string]bool{}
	for _, t := range ts {
		devs[t.Dev] = true
	}
	for dev := range d.socks {
		if devs[dev] {
			delete(d.unused, dev)
		} else if _, ok := d.unused[dev]; !ok {
			d.unused[dev] = now
		}
	}
	d.t.setHeld(ts, now)
}

// closeUnused closes the sockets no held VIP has needed for keepSockets.
func (d *Detector) closeUnused(now time.Time) {
	for dev, since := range d.unused {
		if now.Sub(since) >= keepSockets {
			d.closeSockets(dev)
		}
	}
}

// observe passes a claim on to the tracker unless it is this host's own.
func (d *Detector) observe(e evidence, now time.Time) {
	if now.Sub(d.ownRead) >= ownMACsEvery {
		d.readOwnMACs(now)
	}
	if d.own[e.mac] || d.own[e.src] {
		return
	}
	d.t.observe(e.addr, e.dev, e.mac, now)
}

// readOwnMACs reads the MACs of every interface of this host: its interfaces', its
// bonds' and bridges', and the virtual MACs of its use_vmac macvlans, which is what a
// VMAC instance answers ARP with. A frame this host sends never reaches the sockets (the
// filters drop PACKET_OUTGOING); this keeps out whatever comes back anyway (a hairpin).
func (d *Detector) readOwnMACs(now time.Time) {
	ifs, err := net.Interfaces()
	if err != nil {
		d.log.Debug("cannot read the host's MACs", "err", err)
		return
	}
	own := make(map[string]bool, len(ifs))
	for _, ifi := range ifs {
		if len(ifi.HardwareAddr) > 0 {
			own[ifi.HardwareAddr.String()] = true
		}
	}
	d.own, d.ownRead = own, now
}

// probe sends one probe for k.
func (d *Detector) probe(k key, now time.Time) {
	s := d.sockets(k.dev, now)
	if s == nil {
		return
	}
	var (
		frame []byte
		err   error
		conn  *packet.Conn
	)
	if k.addr.Is4() {
		frame, err = arpProbe(s.ifi.HardwareAddr, k.addr)
		conn = s.arp
	} else {
		frame, err = nsProbe(s.ifi.HardwareAddr, s.linkLocal, k.addr)
		conn = s.ip6
	}
	if err == nil {
		_, err = conn.WriteTo(frame, &packet.Addr{HardwareAddr: net.HardwareAddr(frame[0:6])})
	}
	if err != nil {
		// The interface may be gone or re-created: open again at the next probe.
		d.log.Debug("conflict probe not sent", "vip", k.addr.String(), "interface", k.dev, "err", err)
		d.closeSockets(k.dev)
		d.failed[k.dev] = now
	}
}

// publish makes the tracker's conflicts the ones Conflicts returns, when they changed
// (or force), and logs and passes on the changes.
func (d *Detector) publish(now time.Time, force bool) {
	changes := d.t.takeChanges()
	if len(changes) == 0 && !force {
		return
	}
	c := d.t.conflicts()
	d.conflicts.Store(&c)
	for _, ch := range changes {
		d.tell(ch, now)
	}
}

// tell logs a change, at most one start per VIP every warnEvery, and passes it on.
func (d *Detector) tell(ch Change, now time.Time) {
	w := d.warned[ch.Addr]
	if w == nil {
		w = &warning{told: map[string]bool{}}
		d.warned[ch.Addr] = w
	}
	name := fmt.Sprintf("(%s)", ch.Instance)
	if !ch.Start {
		if !w.told[ch.MAC] {
			return
		}
		delete(w.told, ch.MAC)
		d.log.Info(name+" VIP no longer answered by another host", "vip", ch.Addr.String(), "mac", ch.MAC,
			"interface", ch.Dev, "vrid", ch.VRID, "lasted", now.Sub(ch.Since).Round(time.Millisecond).String())
	} else {
		if !w.last.IsZero() && now.Sub(w.last) < warnEvery {
			w.quiet++
			return
		}
		d.log.Warn(name+" VIP answered by another host too: two hosts hold it (not re-announcing; VRRP decides once they hear each other)",
			"vip", ch.Addr.String(), "mac", ch.MAC, "interface", ch.Dev, "vrid", ch.VRID, "unlogged", w.quiet)
		w.last, w.quiet = now, 0
		w.told[ch.MAC] = true
	}
	if d.opts.OnChange != nil {
		d.opts.OnChange(ch)
	}
}

// ifSockets are the two packet sockets of one interface: ARP, and IPv6 for neighbour
// discovery, each with a reader goroutine.
type ifSockets struct {
	ifi       *net.Interface
	linkLocal netip.Addr // the solicitations' source, invalid without one
	arp, ip6  *packet.Conn
	closed    atomic.Bool
}

// sockets returns dev's sockets, opening them if need be (and reading this host's MACs
// again, since an interface may be new); nil when they cannot be opened (logged, and tried
// again reopenAfter later).
func (d *Detector) sockets(dev string, now time.Time) *ifSockets {
	if s := d.socks[dev]; s != nil {
		return s
	}
	if at, ok := d.failed[dev]; ok && now.Sub(at) < reopenAfter {
		return nil
	}
	s, err := openSockets(dev)
	if err != nil {
		if _, again := d.failed[dev]; !again {
			d.log.Warn("cannot check for other holders of the VIPs on this interface", "interface", dev, "err", err)
		}
		d.failed[dev] = now
		return nil
	}
	delete(d.failed, dev)
	d.readOwnMACs(now)
	d.socks[dev] = s
	for _, c := range []*packet.Conn{s.arp, s.ip6} {
		d.readers.Add(1)
		go d.read(s, c, dev)
	}
	return s
}

func (d *Detector) closeSockets(dev string) {
	s := d.socks[dev]
	if s == nil {
		return
	}
	s.closed.Store(true)
	s.arp.Close()
	s.ip6.Close()
	delete(d.socks, dev)
	delete(d.unused, dev)
}

// openSockets opens dev's two sockets, each filtered before it is bound (mdlayher/packet
// attaches Config.Filter first), so no unfiltered frame is ever queued to them.
func openSockets(dev string) (*ifSockets, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, err
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("interface %s is not Ethernet", dev)
	}
	af, err := arpFilter()
	if err != nil {
		return nil, err
	}
	nf, err := naFilter()
	if err != nil {
		return nil, err
	}
	a, err := packet.Listen(ifi, packet.Raw, 0x0806, &packet.Config{Filter: af})
	if err != nil {
		return nil, fmt.Errorf("ARP socket on %s: %w", dev, err)
	}
	n, err := packet.Listen(ifi, packet.Raw, 0x86dd, &packet.Config{Filter: nf})
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("IPv6 socket on %s: %w", dev, err)
	}
	return &ifSockets{ifi: ifi, linkLocal: linkLocal(ifi), arp: a, ip6: n}, nil
}

// read hands the claims of c's frames to Run until c is closed. A full queue drops the
// claim: the next probe's answer brings it again.
func (d *Detector) read(s *ifSockets, c *packet.Conn, dev string) {
	defer d.readers.Done()
	buf := make([]byte, snapLen)
	for {
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			if s.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // transient (ENOBUFS); never spin
			continue
		}
		cl, ok := parseClaim(buf[:n])
		if !ok {
			continue
		}
		select {
		case d.evidence <- evidence{cl, dev}:
		default:
		}
	}
}

// linkLocal is ifi's IPv6 link-local address, invalid when it has none.
func linkLocal(ifi *net.Interface) netip.Addr {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Is6() && ip.IsLinkLocalUnicast() {
				return ip
			}
		}
	}
	return netip.Addr{}
}
