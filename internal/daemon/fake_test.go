package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/garp"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/conflict"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
	"golang.org/x/sys/unix"
)

// fakeHost stands in for everything the daemon touches outside its memory (host.go): the
// VIP store, the announcers, the sockets and the links. It keeps the host's state (which
// addresses are on, which links are up) and records every call, so that the tests drive
// the loop's own functions on a virtual clock and check what would have reached the
// kernel and the wire.
type fakeHost struct {
	// vipMu guards held and holders against Missing, which the loop calls without the
	// daemon's lock while the timer thread may Hold (as vip.Manager is safe for that).
	vipMu   sync.Mutex
	held    map[vip.VIP]bool // addresses on the host that the store added
	holders map[vip.VIP]map[string]bool
	// preexisting are addresses on the host that someone else put there: Hold reports
	// them as foreign and never takes them.
	preexisting map[vip.VIP]bool
	stale       []vip.VIP // what Recover finds, left by "a previous run"
	// turns is the depth of BeginTurn; reserved what Reserve was given, call by call.
	turns    int
	reserved []string
	linkErr  map[string]error // Running's answer per interface (nil: up)
	holdErr  error            // Hold's error, after holding what it was given
	// running and missing count the kernel reads of the interface check: Running's
	// calls and Missing's.
	running, missing int
	// missesOnce are reported missing by the next Missing call although held: a dump
	// taken while addresses churn (vipcheck.go).
	missesOnce []vip.VIP
	openErr    map[string]error      // Open's answer per interface (nil: opens)
	source     map[string]netip.Addr // the address transport would pick per interface

	socks     []*fakeSocket // every socket opened, in order
	sent      []sentAdvert
	announced []announceCall
	cancelled []announceCall
	vipCalls  []string // "add ..." / "remove ..." / "recover", in order
	// events is every advert sent, VIP added or removed and announcement queued, in the
	// order they happened, with what a recordingHandler logs in between.
	events []string
	// onSend, if set, runs as an advert is handed to the socket (to look at the daemon
	// then); onHold likewise as VIPs are added; addDelay is how long Add takes (a slow
	// netlink or fsync).
	onSend    func()
	onHold    func()
	onRelease func() // as VIPs are removed
	addDelay  time.Duration
	// batchSockets makes open return sockets that send batches (as *transport.Conn
	// does); batches is the size of each SendBatch, and failVRID the VRID whose
	// advertisement a batch fails on (0: none).
	batchSockets bool
	batches      []int
	failVRID     uint8

	routes map[string]bool // "holder dst" of the routes fakeRoutes holds

	conflicts fakeConflicts // the held sets handed to the conflict detector

	watching                            int
	vipsClosed, garpClosed, linksClosed bool
}

type sentAdvert struct {
	ifname   string
	src, dst netip.Addr
	adv      vrrp.Advertisement
}

type announceCall struct {
	dev    string
	addrs  []netip.Addr
	rounds int
	s      garp.Settings
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		held:        map[vip.VIP]bool{},
		holders:     map[vip.VIP]map[string]bool{},
		preexisting: map[vip.VIP]bool{},
		linkErr:     map[string]error{},
		openErr:     map[string]error{},
		source: map[string]netip.Addr{
			"eth0": netip.MustParseAddr("10.99.0.10"),
			"eth1": netip.MustParseAddr("10.99.1.10"),
		},
	}
}

// vipStore

// Hold and Release count holders as vip.Manager does, and leave preexisting addresses
// alone.
func (h *fakeHost) Hold(holder string, vs ...vip.VIP) ([]vip.VIP, error) {
	h.vipCalls = append(h.vipCalls, "add "+vipList(vs))
	h.events = append(h.events, "add "+vipList(vs))
	if h.onHold != nil {
		h.onHold()
	}
	if h.addDelay > 0 {
		time.Sleep(h.addDelay)
	}
	h.vipMu.Lock()
	defer h.vipMu.Unlock()
	var foreign []vip.VIP
	for _, v := range vs {
		if h.preexisting[v] {
			foreign = append(foreign, v)
			continue
		}
		h.held[v] = true
		if h.holders[v] == nil {
			h.holders[v] = map[string]bool{}
		}
		h.holders[v][holder] = true
	}
	return foreign, h.holdErr
}

func (h *fakeHost) Release(holder string, vs ...vip.VIP) error {
	h.vipCalls = append(h.vipCalls, "remove "+vipList(vs))
	h.events = append(h.events, "remove "+vipList(vs))
	if h.onRelease != nil {
		h.onRelease()
	}
	h.vipMu.Lock()
	defer h.vipMu.Unlock()
	for _, v := range vs {
		delete(h.holders[v], holder)
		if len(h.holders[v]) == 0 {
			delete(h.holders, v)
			delete(h.held, v)
		}
	}
	return nil
}

func (h *fakeHost) BeginTurn() { h.turns++ }

func (h *fakeHost) EndTurn() error {
	if h.turns == 0 {
		return errors.New("EndTurn without BeginTurn")
	}
	h.turns--
	return nil
}

func (h *fakeHost) Reserve(vs ...vip.VIP) error {
	if h.turns == 0 {
		return errors.New("Reserve outside a turn")
	}
	h.reserved = append(h.reserved, vipList(vs))
	return nil
}

func (h *fakeHost) Missing(vs ...vip.VIP) ([]vip.VIP, error) {
	h.vipMu.Lock()
	defer h.vipMu.Unlock()
	h.missing++
	var missing []vip.VIP
	misses := h.missesOnce
	h.missesOnce = nil
	for _, v := range vs {
		if (!h.held[v] && !h.preexisting[v]) || slices.Contains(misses, v) {
			missing = append(missing, v)
		}
	}
	return missing, nil
}

func (h *fakeHost) Recover() ([]vip.VIP, error) {
	h.vipCalls = append(h.vipCalls, "recover "+vipList(h.stale))
	for _, v := range h.stale {
		delete(h.held, v)
	}
	s := h.stale
	h.stale = nil
	return s, nil
}

func (h *fakeHost) Close() error {
	h.vipsClosed = true
	return nil
}

func vipList(vs []vip.VIP) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// heldList is the addresses on the host, sorted.
func (h *fakeHost) heldList() []string {
	var s []string
	for v := range h.held {
		s = append(s, v.String())
	}
	slices.Sort(s)
	return s
}

// announcers, under their own name since vipStore has Close too.

type fakeAnnouncers struct{ h *fakeHost }

func (a fakeAnnouncers) Announce(ifname string, s garp.Settings, addrs []netip.Addr, rounds int) error {
	a.h.announced = append(a.h.announced, announceCall{ifname, slices.Clone(addrs), rounds, s})
	a.h.events = append(a.h.events, "announce "+ifname)
	return nil
}

func (a fakeAnnouncers) Cancel(ifname string, addrs []netip.Addr) {
	a.h.cancelled = append(a.h.cancelled, announceCall{dev: ifname, addrs: slices.Clone(addrs)})
}

func (a fakeAnnouncers) Refresh() {}

func (a fakeAnnouncers) Close() { a.h.garpClosed = true }

// links, likewise.

type fakeLinks struct{ h *fakeHost }

func (l fakeLinks) Running(ifname string) error {
	l.h.running++
	return l.h.linkErr[ifname]
}

func (l fakeLinks) Watch(func()) func() {
	l.h.watching++
	return func() { l.h.watching-- }
}

func (l fakeLinks) Close() { l.h.linksClosed = true }

// sockets

func (h *fakeHost) open(ifname string, fam config.Family, opt transport.Options) (socket, error) {
	if err := h.openErr[ifname]; err != nil {
		return nil, fmt.Errorf("transport: open %s: %w", ifname, err)
	}
	s := &fakeSocket{h: h, ifname: ifname, fam: fam, opt: opt, source: opt.Source,
		in: make(chan []transport.Packet), closed: make(chan struct{})}
	if !s.source.IsValid() {
		s.source = h.source[ifname]
		if opt.SourceInterface != "" { // a macvlan sends from its parent's address
			s.source = h.source[opt.SourceInterface]
		}
	}
	h.socks = append(h.socks, s)
	if h.batchSockets {
		return fakeBatchSocket{s}, nil
	}
	return s, nil
}

// fakeBatchSocket is a fakeSocket with SendBatch: each message as Send takes it, until one
// fails (failVRID).
type fakeBatchSocket struct{ *fakeSocket }

func (s fakeBatchSocket) SendBatch(msgs []transport.Message) (int, error) {
	s.h.batches = append(s.h.batches, len(msgs))
	for i, m := range msgs {
		if s.h.failVRID != 0 && len(m.Payload) > 1 && m.Payload[1] == s.h.failVRID {
			return i, fmt.Errorf("fake socket: send failed: %w", unix.EMSGSIZE)
		}
		if err := s.Send(m.Payload, m.Dst); err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

type fakeSocket struct {
	h      *fakeHost
	ifname string
	fam    config.Family
	opt    transport.Options
	source netip.Addr
	// refreshErr is what Refresh answers: the interface as transport would see it.
	refreshErr error
	dropped    uint64

	in       chan []transport.Packet // what the next ReadBatch returns
	closed   chan struct{}
	isClosed bool
}

func (s *fakeSocket) Source() netip.Addr { return s.source }

func (s *fakeSocket) Group() netip.Addr { return s.opt.Group }

func (s *fakeSocket) Send(payload []byte, dst netip.Addr) error {
	if s.isClosed {
		return transport.ErrClosed
	}
	if s.h.onSend != nil {
		s.h.onSend()
	}
	var a vrrp.Advertisement
	if err := a.Unmarshal(payload, s.source, dst); err != nil {
		return fmt.Errorf("fake socket: the daemon sent a bad advertisement: %w", err)
	}
	a.Addresses = slices.Clone(a.Addresses)
	s.h.sent = append(s.h.sent, sentAdvert{s.ifname, s.source, dst, a})
	s.h.events = append(s.h.events, fmt.Sprintf("advert vrid %d priority %d", a.VRID, a.Priority))
	return nil
}

func (s *fakeSocket) ReadBatch(pkts []transport.Packet) (int, error) {
	select {
	case ps := <-s.in:
		return copy(pkts, ps), nil
	case <-s.closed:
		return 0, transport.ErrClosed
	}
}

func (s *fakeSocket) Refresh() error { return s.refreshErr }

func (s *fakeSocket) Pending() bool { return len(s.in) > 0 }

func (s *fakeSocket) Stats() transport.Stats { return transport.Stats{Dropped: s.dropped} }

func (s *fakeSocket) Close() error {
	if !s.isClosed {
		s.isClosed = true
		close(s.closed)
	}
	return nil
}

// The virtual clock starts at t0.
var t0 = time.Unix(1_700_000_000, 0)

// newTestDaemon is a daemon on h, stopped at the end of the test.
func newTestDaemon(t *testing.T, h *fakeHost) *Daemon {
	t.Helper()
	return newTestDaemonVIPs(t, h, h)
}

// newTestDaemonVIPs is newTestDaemon with its addresses in vips (a real vip.Manager
// in a lab namespace), everything else on h.
func newTestDaemonVIPs(t *testing.T, h *fakeHost, vips vipStore) *Daemon {
	t.Helper()
	d, err := New(Options{
		StateDir: t.TempDir(), // the VMAC record's; never the host's /run/vrrpd
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		vips:     vips, garp: fakeAnnouncers{h}, open: h.open, links: fakeLinks{h}, routes: fakeRoutes{h},
		conflicts: &h.conflicts,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-d.done: // Run ended
		default:
			close(d.done) // ends the readers
		}
		for _, s := range h.socks {
			s.Close()
		}
	})
	return d
}

// startDaemon is Run's start-up without the loop: recovery, then every instance at t0.
func startDaemon(t *testing.T, d *Daemon, ics ...config.Instance) {
	t.Helper()
	cfg := &config.Config{Instances: ics}
	if err := validate(cfg); err != nil {
		t.Fatal(err)
	}
	d.recoverVIPs()
	d.recoverVMACs()
	d.start(cfg, t0)
}

// advance runs the loop's timers up to and including to, each at its own deadline, as
// the loop's timerfd would.
func advance(d *Daemon, to time.Time) {
	for {
		it, ok := d.timers.Peek()
		if !ok || it.at.After(to) {
			return
		}
		d.fireTimers(it.at)
	}
}

// testInstance is an IPv4 multicast instance on eth0 advertising every second, with
// two announcements a burst and the second burst 5 s after the first.
func testInstance(name string, vrid, prio uint8, vips ...string) config.Instance {
	ic := config.Instance{
		Name: name, Interface: "eth0", Family: config.IPv4, VRID: vrid, Priority: prio,
		Version: vrrp.Version3, AdvertInterval: time.Second, Preempt: true,
		InitialState: config.StateBackup, MulticastGroup: vrrp.MulticastIPv4,
		GARP: config.GARP{MasterDelay: 5 * time.Second, MasterRepeat: 2, MasterRefreshRepeat: 1},
	}
	for _, v := range vips {
		ic.VIPs = append(ic.VIPs, config.VIP{Prefix: netip.MustParsePrefix(v), Dev: "eth0"})
	}
	return ic
}

// snapOf is the published view of the instance called name.
func snapOf(t *testing.T, d *Daemon, name string) metrics.Instance {
	t.Helper()
	for _, in := range d.Snapshot().Instances {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("instance %s not in the snapshot", name)
	return metrics.Instance{}
}

// takeover is when an instance of priority prio that heard no master becomes Master.
func takeover(prio uint8) time.Time {
	return t0.Add(vrrp.MasterDownInterval(prio, time.Second))
}

// peerAdvert is what the transport hands over for an advert of vrid with priority prio
// from 10.99.0.11, listing vips.
func peerAdvert(t testing.TB, vrid, prio uint8, vips ...string) transport.Packet {
	t.Helper()
	src, dst := netip.MustParseAddr("10.99.0.11"), vrrp.MulticastIPv4
	a := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: vrid, Priority: prio,
		MaxAdvertInterval: 100}
	for _, v := range vips {
		a.Addresses = append(a.Addresses, netip.MustParsePrefix(v).Addr())
	}
	b, err := a.AppendMarshal(nil, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return transport.Packet{Payload: b, Src: src, Dst: dst, TTL: 255}
}

// priorities are the priorities of the adverts h saw sent, in order.
func (h *fakeHost) priorities() []uint8 {
	var p []uint8
	for _, s := range h.sent {
		p = append(p, s.adv.Priority)
	}
	return p
}

// recordingHandler is a slog.Handler that puts each log message in h.events, so that
// tests see where logging falls among the calls to the host.
type recordingHandler struct{ h *fakeHost }

func (r recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (r recordingHandler) Handle(_ context.Context, rec slog.Record) error {
	r.h.events = append(r.h.events, "log "+rec.Message)
	return nil
}

func (r recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return r }

func (r recordingHandler) WithGroup(string) slog.Handler { return r }

// fakeConflicts records the held sets the loop hands over.
type fakeConflicts struct {
	sets [][]conflict.Target
}

func (f *fakeConflicts) SetHeld(ts []conflict.Target)   { f.sets = append(f.sets, ts) }
func (f *fakeConflicts) Conflicts() []conflict.Conflict { return nil }
func (f *fakeConflicts) Run(ctx context.Context)        { <-ctx.Done() }

// last is the latest held set, nil before any.
func (f *fakeConflicts) last() []conflict.Target {
	if len(f.sets) == 0 {
		return nil
	}
	return f.sets[len(f.sets)-1]
}
