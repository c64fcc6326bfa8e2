package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mdlayher/packet"
	"github.com/vishvananda/netlink"
	"golang.org/x/net/bpf"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// The scale lab of issue 31: thousands of Services in one group whose Services share
// virtual routers, on three or four vrrpd hosts in Kubernetes mode, and the instruments
// that watch it (a netlink sampler of every host's addresses, a client that pings, and a
// capture of the announcements on the client's wire).
//
// The Services' addresses are IPv6, from fd00:99::2:1 up. The lab's IPv4 subnet is a /24
// (netlab.Prefix4) of which the hosts and the ARP watch's tags take a part: about 230
// addresses, far from 2,000, and the lab may use no other IPv4 range. fd00:99::/64 holds
// any number. IPv6 also makes the failover's announcements neighbour advertisements,
// which the capture reads like gratuitous ARPs.

// scaleServices is the 2,000, or E2E_SCALE_SERVICES (a measurement aid: the
// figures at smaller scales show where the time goes; the tests' assertions are the same).
var scaleServices = func() int {
	if n, err := strconv.Atoi(os.Getenv("E2E_SCALE_SERVICES")); err == nil && n > 0 {
		return n
	}
	return 2000
}()

const (
	scaleLabel  = "e2e.vrrp-operator.io/scale"
	scaleAdvert = 100 * time.Millisecond
	scaleBatch  = 250
)

// scaleVIP is the address of Service i (0-based).
func scaleVIP(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("fd00:99::2:%x", i+1)) }

// scaleLab is a lab of a client and node hosts, the operator, a group (routerSharing
// from the caller, VRRPv3, 100 ms adverts) over the Nodes labelled scaleLabel, and
// scaleServices Services with one externalIP each.
type scaleLab struct {
	lab    *netlab.Lab
	ns     string
	client *netlab.Host
	hosts  map[string]*netlab.Host
	// vips maps each Service's key (ns/name) to its one address; keys its keys, sorted.
	vips map[string]netip.Addr
	keys []string
	args []string
	env  []string
}

// newScaleLab builds the lab with node hosts names, the first members of them with their
// Node (labelled), the others in the lab without one, the operator and the group, and no
// Service yet (grow makes them).
func newScaleLab(t *testing.T, sharing v1alpha1.RouterSharing, members int, names ...string) *scaleLab {
	t.Helper()
	need(t)
	vrrpdBinary(t)
	lab := netlabtest.New(t, append([]string{"client"}, names...)...)
	startProxy(t, lab.Host("client"), proxyAddr, apiAddress(t))
	l := &scaleLab{lab: lab, ns: newNamespace(t), client: lab.Host("client"), hosts: map[string]*netlab.Host{}, vips: map[string]netip.Addr{}}
	var nodes []*netlab.Host
	for i, n := range names {
		l.hosts[n] = lab.Host(n)
		if i < members {
			nodes = append(nodes, lab.Host(n))
		}
	}
	labNodes(t, scaleLabel, nodes...)
	startOperator(t, l.ns)
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: groupName}, Spec: v1alpha1.KeepalivedGroupSpec{
		Interface: "eth0", NodeSelector: map[string]string{scaleLabel: "true"},
		VRRPVersion: 3, AdvertInterval: &metav1.Duration{Duration: scaleAdvert}, RouterSharing: sharing,
	}}
	if err := env.Client.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	l.args = daemonSetArgs(t, l.ns)
	l.env = []string{"KUBECONFIG=" + vrrpdKubeconfig(t, l.ns)}
	return l
}

// scaleAll is every Service's address the lab makes, for the sampler, which watches them
// from the start.
func scaleAll() []netip.Addr {
	out := make([]netip.Addr, scaleServices)
	for i := range out {
		out[i] = scaleVIP(i)
	}
	return out
}

// grow makes the Services up to n, a batch at a time, and after each batch waits until
// the group's status satisfies served (allListed: lists every Service made so far) and the running nodes
// hold each listed address on the node its instance ranks highest, for 2 s. It returns
// the last plan.
//
// In batches rather than all at once: vrrpd adds a new master's addresses in chunks with
// its adverts between, but on a loaded 2-core machine a chunk of IPv6 adds (the kernel's
// cost of one grows with the addresses the interface has: 0.5 ms each at 2,000) outlasts
// the others' Master_Down_Interval, they take over, and three daemons starting with 2,000
// addresses take them from each other for minutes. Batches keep each reload small.
func (l *scaleLab) grow(t *testing.T, smp *holderSampler, running []string, n, batch int, served func(p scalePlan) bool) scalePlan {
	t.Helper()
	start := time.Now()
	var p scalePlan
	for made := len(l.vips); made < n; made = len(l.vips) {
		l.createServices(t, made, min(made+batch, n))
		p = l.waitPlanWith(t, 2*time.Minute, served, running)
		want := map[netip.Addr]string{}
		for v := range p.router {
			want[v] = p.bestOf(v, running)
		}
		smp.waitSettled(t, 2*time.Minute, 2*time.Second, fmt.Sprintf("the first %d Services' addresses on their top node", len(l.vips)), want)
	}
	t.Logf("%d Services made, planned and held, %d at a time, in %v", n, batch, time.Since(start).Round(time.Millisecond))
	return p
}

// createServices makes Services s<from>... s<to-1> with one address each, eight at a time.
func (l *scaleLab) createServices(t *testing.T, from, to int) {
	t.Helper()
	cfg := *env.Config
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(&cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	work := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: fmt.Sprintf("s%04d", i),
						Annotations: map[string]string{v1alpha1.AnnotationGroup: l.ns + "/" + groupName}},
					Spec: corev1.ServiceSpec{
						Ports:       []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
						ExternalIPs: []string{scaleVIP(i).String()},
					},
				}
				if err := c.Create(context.Background(), svc); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("create %s: %w", svc.Name, err))
					mu.Unlock()
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		l.vips[fmt.Sprintf("%s/s%04d", l.ns, i)] = scaleVIP(i)
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	l.keys = l.keys[:0]
	for k := range l.vips {
		l.keys = append(l.keys, k)
	}
	sort.Strings(l.keys)
}

// startDaemon runs the group's vrrpd on host name, as its DaemonSet's pod would.
func (l *scaleLab) startDaemon(t *testing.T, name string) *vrrpd {
	t.Helper()
	return startNodeVrrpd(t, l.hosts[name], l.args, l.env)
}

// hostList is the named hosts, in that order.
func (l *scaleLab) hostList(names ...string) []*netlab.Host {
	var out []*netlab.Host
	for _, n := range names {
		out = append(out, l.hosts[n])
	}
	return out
}

// scalePlan is what the group's status says of the Services' addresses.
type scalePlan struct {
	nodes []string
	// router is each address's instance key, master the node its instance ranks first.
	router map[netip.Addr]string
	master map[netip.Addr]string
	// routers counts the instances; prio is each instance's priority on each node.
	routers int
	prio    map[string]map[string]uint8
	// missing counts the Services whose address no instance lists.
	missing int
}

// waitPlan waits until the group's status has exactly nodes (in any order) and lists every
// Service's address in exactly one instance, routers instances in all (0: any number).
func (l *scaleLab) waitPlan(t *testing.T, timeout time.Duration, routers int, nodes ...string) scalePlan {
	t.Helper()
	return l.waitPlanWith(t, timeout, func(p scalePlan) bool { return p.missing == 0 && (routers == 0 || p.routers == routers) }, nodes)
}

// waitPlanWith waits until the group's status has exactly nodes, lists no address twice,
// and satisfies served.
func (l *scaleLab) waitPlanWith(t *testing.T, timeout time.Duration, served func(scalePlan) bool, nodes []string) scalePlan {
	t.Helper()
	var p scalePlan
	var why error
	deadline := time.Now().Add(timeout)
	for {
		var g v1alpha1.KeepalivedGroup
		if why = env.Client.Get(context.Background(), types.NamespacedName{Namespace: l.ns, Name: groupName}, &g); why == nil {
			p, why = l.planOf(&g, nodes)
			if why == nil && !served(p) {
				why = fmt.Errorf("%d instances list %d addresses, %d Services' addresses in none: not what the test waits for", p.routers, len(p.router), p.missing)
			}
		}
		if why == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group's status did not list the %d addresses on %v within %v: %v", len(l.vips), nodes, timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// planOf reads the status: an error if its nodes are not nodes or an address is listed
// twice.
func (l *scaleLab) planOf(g *v1alpha1.KeepalivedGroup, nodes []string) (scalePlan, error) {
	p := scalePlan{router: map[netip.Addr]string{}, master: map[netip.Addr]string{}, prio: map[string]map[string]uint8{}}
	for _, n := range g.Status.Nodes {
		p.nodes = append(p.nodes, n.Name)
	}
	if got, want := slices.Sorted(slices.Values(p.nodes)), slices.Sorted(slices.Values(nodes)); !slices.Equal(got, want) {
		return p, fmt.Errorf("status nodes %v, want %v", got, want)
	}
	for _, in := range g.Status.Instances {
		prios, err := v1alpha1.DecodePriorities(in.Priorities, len(p.nodes))
		if err != nil {
			return p, fmt.Errorf("instance %s: %w", in.Key, err)
		}
		p.prio[in.Key] = map[string]uint8{}
		best := 0
		for i, pr := range prios {
			p.prio[in.Key][p.nodes[i]] = pr
			if pr > prios[best] {
				best = i
			}
		}
		for _, s := range in.VIPs {
			v, err := parseVIP(s)
			if err != nil {
				return p, err
			}
			if _, dup := p.router[v]; dup {
				return p, fmt.Errorf("%v in two instances (%s, %s)", v, p.router[v], in.Key)
			}
			p.router[v], p.master[v] = in.Key, p.nodes[best]
		}
	}
	p.routers = len(g.Status.Instances)
	for _, v := range l.vips {
		if _, ok := p.router[v]; !ok {
			p.missing++
		}
	}
	return p, nil
}

// holderSampler reads every host's addresses with netlink, a round every period, and keeps
// for each watched address the changes of the set of hosts holding it (a bit per host),
// stamped with the end of the round that saw them. A round that finds an address on two
// hosts reads those hosts again (stillHolding's reason: the reads of one round are
// sequential) and counts a double only if both still hold it.
type holderSampler struct {
	names  []string
	lists  []func() ([]netip.Addr, error)
	index  map[netip.Addr]int
	addrs  []netip.Addr
	period time.Duration

	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	ignored uint32 // hosts not read any more (dead)
	cur     []uint32
	changes [][]holderChange
	doubles []double
	last    time.Time
	ends    []time.Time   // each round's end
	readMax time.Duration // the longest round
	unread  int           // host reads left out, every try interrupted
	errs    []error
}

type double struct {
	at   time.Time
	what string
}

type holderChange struct {
	// begun is when the round that saw it began, at when it ended.
	begun, at time.Time
	mask      uint32
}

func startHolderSampler(t *testing.T, period time.Duration, hosts []*netlab.Host, vips []netip.Addr) *holderSampler {
	t.Helper()
	s := &holderSampler{index: map[netip.Addr]int{}, addrs: vips, period: period, done: make(chan struct{}),
		cur: make([]uint32, len(vips)), changes: make([][]holderChange, len(vips))}
	for i, v := range vips {
		s.index[v] = i
	}
	for _, h := range hosts {
		nh, err := h.Netlink()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nh.Close)
		link, err := nh.LinkByName(h.Link)
		if err != nil {
			t.Fatal(err)
		}
		s.names = append(s.names, h.Name)
		s.lists = append(s.lists, func() ([]netip.Addr, error) {
			// A dump that addresses changed under is marked interrupted and may miss
			// some: read again (a host adding hundreds of addresses interrupts many).
			var as []netlink.Addr
			var err error
			for range 5 {
				if as, err = nh.AddrList(link, unix.AF_UNSPEC); !errors.Is(err, netlink.ErrDumpInterrupted) {
					break
				}
			}
			if err != nil {
				return nil, err
			}
			out := make([]netip.Addr, 0, len(as))
			for _, a := range as {
				if ip, ok := netip.AddrFromSlice(a.IP); ok {
					out = append(out, ip.Unmap())
				}
			}
			return out, nil
		})
	}
	s.wg.Add(1)
	go s.run()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *holderSampler) run() {
	defer s.wg.Done()
	tick := time.NewTicker(s.period)
	defer tick.Stop()
	masks := make([]uint32, len(s.addrs))
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		begin := time.Now()
		s.mu.Lock()
		ignored := s.ignored
		prev := slices.Clone(s.cur)
		s.mu.Unlock()
		clear(masks)
		var errs []error
		unread := 0
		for h, list := range s.lists {
			if ignored&(1<<h) != 0 {
				continue
			}
			as, err := list()
			if errors.Is(err, netlink.ErrDumpInterrupted) {
				// Interrupted five times over: the host keeps what the last round saw.
				unread++
				for i := range masks {
					masks[i] |= prev[i] & (1 << h)
				}
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.names[h], err))
				continue
			}
			for _, a := range as {
				if i, ok := s.index[a]; ok {
					masks[i] |= 1 << h
				}
			}
		}
		// Doubles: read the hosts involved again, once for all such addresses.
		var two []int
		for i, m := range masks {
			if m&(m-1) != 0 {
				two = append(two, i)
			}
		}
		if len(two) > 0 {
			again := map[int]map[netip.Addr]bool{}
			for _, i := range two {
				for h := range s.lists {
					if masks[i]&(1<<h) != 0 && again[h] == nil {
						again[h] = map[netip.Addr]bool{}
						if as, err := s.lists[h](); err == nil {
							for _, a := range as {
								again[h][a] = true
							}
						} else {
							again[h] = nil // unreadable: keeps its place
						}
					}
				}
			}
			for _, i := range two {
				for h := range s.lists {
					if masks[i]&(1<<h) != 0 && again[h] != nil && !again[h][s.addrs[i]] {
						masks[i] &^= 1 << h
					}
				}
			}
		}
		now := time.Now()
		s.mu.Lock()
		s.errs = append(s.errs, errs...)
		s.unread += unread
		s.ends = append(s.ends, now)
		s.readMax = max(s.readMax, now.Sub(begin))
		s.last = now
		for i, m := range masks {
			if m&(m-1) != 0 {
				s.doubles = append(s.doubles, double{now, fmt.Sprintf("%v on %v at %s", s.addrs[i], s.maskNames(m), now.Format("15:04:05.000"))})
			}
			if m != s.cur[i] || len(s.changes[i]) == 0 {
				s.changes[i] = append(s.changes[i], holderChange{begin, now, m})
				s.cur[i] = m
			}
		}
		s.mu.Unlock()
	}
}

func (s *holderSampler) maskNames(m uint32) []string {
	var out []string
	for h, n := range s.names {
		if m&(1<<h) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// ignore stops reading host name: from the next round on, its addresses count for nothing.
func (s *holderSampler) ignore(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignored |= 1 << slices.Index(s.names, name)
}

// holders is, from the latest round, each watched address's holders (names), and the
// round's end.
func (s *holderSampler) holders() (map[netip.Addr][]string, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[netip.Addr][]string, len(s.addrs))
	for i, v := range s.addrs {
		out[v] = s.maskNames(s.cur[i])
	}
	return out, s.last
}

// heldAfter is when address v was first seen held by a round begun after t (zero if not
// yet): the end of that round, an upper bound.
func (s *holderSampler) heldAfter(v netip.Addr, t time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.changes[s.index[v]] {
		if c.begun.After(t) && c.mask != 0 {
			return c.at
		}
	}
	return time.Time{}
}

// holderRecord is what the sampler saw between two times: rounds and gapMax there, readMax
// over the whole run.
type holderRecord struct {
	rounds          int
	gapMax, readMax time.Duration
	doubles         []string
	// unheld is, per address, the longest time between a round that saw it held and the
	// next that did (an upper bound of the time no host held it, by up to one round gap).
	unheld map[netip.Addr]time.Duration
	unread int
	errs   []error
}

// record returns what was seen in [from, to].
func (s *holderSampler) record(from, to time.Time) holderRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := holderRecord{readMax: s.readMax, unheld: map[netip.Addr]time.Duration{}, unread: s.unread, errs: s.errs}
	// Rounds and the longest time between two in [from, to]: the sampling's resolution
	// there (a loaded machine can hold the sampler back for a second at other times).
	prev := from
	for _, e := range s.ends {
		if e.Before(from) || e.After(to) {
			continue
		}
		r.rounds++
		r.gapMax = max(r.gapMax, e.Sub(prev))
		prev = e
	}
	for _, d := range s.doubles {
		if !d.at.Before(from) && !d.at.After(to) {
			r.doubles = append(r.doubles, d.what)
		}
	}
	for i, v := range s.addrs {
		var lastHeld time.Time // the last round before a gap that saw v held
		held := false
		for _, c := range s.changes[i] {
			switch {
			case c.mask != 0 && !held:
				if !lastHeld.IsZero() && c.at.After(from) && !lastHeld.After(to) {
					r.unheld[v] = max(r.unheld[v], c.at.Sub(lastHeld))
				}
				held = true
			case c.mask == 0 && held:
				// The previous round was the last to see it held: a change is stamped
				// at the first round of the new state, so step back one round gap at most.
				lastHeld = c.at.Add(-s.period)
				held = false
			}
		}
		if !held && !lastHeld.IsZero() && !lastHeld.After(to) {
			r.unheld[v] = max(r.unheld[v], s.last.Sub(lastHeld))
		}
	}
	return r
}

func (s *holderSampler) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
}

// announceCapture records, stamped by the kernel as they arrive, the neighbour
// advertisements and ARP frames reaching a lab host: the failover's announcements, as a
// switch or a client sees them. A cooked packet socket (mdlayher/packet) with
// SO_TIMESTAMPNS, as in test/vrrpd's wireCapture; a BPF filter keeps everything else out of
// its buffer, which must hold a burst of thousands.
type announceCapture struct {
	conn *packet.Conn
	mu   sync.Mutex
	seen []announcement
}

type announcement struct {
	at   time.Time
	addr netip.Addr // the NA's target, the ARP's sender address
	mac  string     // the frame's source
}

var announceFilter = []bpf.Instruction{
	/* 0 */ bpf.LoadExtension{Num: bpf.ExtProto},
	/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_ARP, SkipTrue: 6},
	/* 2 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_IPV6, SkipFalse: 4},
	/* 3 */ bpf.LoadAbsolute{Off: 6, Size: 1}, // next header
	/* 4 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 58, SkipFalse: 2},
	/* 5 */ bpf.LoadAbsolute{Off: 40, Size: 1}, // ICMPv6 type
	/* 6 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 136, SkipTrue: 1},
	/* 7 */ bpf.RetConstant{Val: 0},
	/* 8 */ bpf.RetConstant{Val: 128},
}

func captureAnnouncements(t *testing.T, h *netlab.Host) *announceCapture {
	t.Helper()
	filter, err := bpf.Assemble(announceFilter)
	if err != nil {
		t.Fatal(err)
	}
	c := &announceCapture{}
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		if c.conn, err = packet.Listen(ifi, packet.Datagram, unix.ETH_P_ALL, &packet.Config{Filter: filter}); err != nil {
			return err
		}
		rc, err := c.conn.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20) // best effort
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}); err != nil {
			return err
		}
		return serr
	}); err != nil {
		if c.conn != nil {
			c.conn.Close()
		}
		t.Fatalf("capture on %s: %v", h.Name, err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.read()
	}()
	t.Cleanup(func() {
		c.conn.Close()
		<-stopped
	})
	return c
}

// read records the frames until the socket is closed (recvmsg for the stamp and the
// direction, which packet.Conn's ReadFrom does not give).
func (c *announceCapture) read() {
	rc, err := c.conn.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 256)
	oob := make([]byte, 128)
	for {
		var n, oobn int
		var from unix.Sockaddr
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, from, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT)
			return !errors.Is(rerr, unix.EAGAIN) && !errors.Is(rerr, unix.EINTR)
		})
		if err != nil || rerr != nil {
			return
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok || ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		at, ok := kernelStamp(oob[:oobn])
		if !ok {
			continue
		}
		p := buf[:n]
		var a announcement
		switch proto := ll.Protocol<<8 | ll.Protocol>>8; {
		case proto == unix.ETH_P_ARP && len(p) >= 28:
			a.addr, _ = netip.AddrFromSlice(p[14:18])
		case proto == unix.ETH_P_IPV6 && len(p) >= 64 && p[6] == 58 && p[40] == 136:
			a.addr, _ = netip.AddrFromSlice(p[48:64])
		default:
			continue
		}
		a.at, a.mac = at, net.HardwareAddr(ll.Addr[:ll.Halen]).String()
		c.mu.Lock()
		c.seen = append(c.seen, a)
		c.mu.Unlock()
	}
}

func kernelStamp(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix()), true
		}
	}
	return time.Time{}, false
}

// since returns the announcements of addresses in set that arrived after t, in order.
func (c *announceCapture) since(set map[netip.Addr]bool, t time.Time) []announcement {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []announcement
	for _, a := range c.seen {
		if set[a.addr] && a.at.After(t) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b announcement) int { return a.at.Compare(b.at) })
	return out
}

// pinger6 sends an ICMPv6 echo request to each of its targets every period from a lab host
// (x/net/icmp's raw socket: the host's kernel resolves each target by NDP and keeps its
// neighbour entry, as a client does) and records each target's replies.
type pinger6 struct {
	conn   *icmp.PacketConn
	id     int
	period time.Duration
	done   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	targets []netip.Addr
	stats   map[netip.Addr]*ping6Stats
	mark    time.Time
}

type ping6Stats struct {
	sent, answered int
	added          time.Time
	last           time.Time // the last reply
	worst          time.Duration
	firstAfterMark time.Time
}

func startPinger6(t *testing.T, h *netlab.Host, period time.Duration) *pinger6 {
	t.Helper()
	p := &pinger6{id: os.Getpid() & 0xffff, period: period, done: make(chan struct{}), stats: map[netip.Addr]*ping6Stats{}}
	if err := h.Do(func() error {
		var err error
		p.conn, err = icmp.ListenPacket("ip6:ipv6-icmp", "::")
		return err
	}); err != nil {
		t.Fatalf("ICMPv6 socket in %s: %v", h.Name, err)
	}
	// Only echo replies: the NDP and MLD traffic of thousands of addresses stays out.
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeEchoReply)
	if err := p.conn.IPv6PacketConn().SetICMPFilter(&f); err != nil {
		t.Fatal(err)
	}
	p.wg.Add(2)
	go p.send()
	go p.receive()
	t.Cleanup(p.stop)
	return p
}

// add makes vs targets from now on.
func (p *pinger6) add(vs ...netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range vs {
		if p.stats[v] == nil {
			p.targets = append(p.targets, v)
			p.stats[v] = &ping6Stats{added: time.Now()}
		}
	}
}

// setMark starts counting, per target, the time to its first reply after t.
func (p *pinger6) setMark(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mark = t
	for _, st := range p.stats {
		st.firstAfterMark = time.Time{}
	}
}

func (p *pinger6) send() {
	defer p.wg.Done()
	tick := time.NewTicker(p.period)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		msg, _ := (&icmp.Message{Type: ipv6.ICMPTypeEchoRequest, Body: &icmp.Echo{ID: p.id, Seq: seq & 0xffff, Data: []byte("vrrp")}}).Marshal(nil)
		p.mu.Lock()
		targets := slices.Clone(p.targets)
		p.mu.Unlock()
		for _, v := range targets {
			if _, err := p.conn.WriteTo(msg, &net.IPAddr{IP: v.AsSlice()}); err == nil {
				p.mu.Lock()
				p.stats[v].sent++
				p.mu.Unlock()
			}
		}
	}
}

func (p *pinger6) receive() {
	defer p.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := p.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		m, err := icmp.ParseMessage(58, buf[:n])
		if err != nil || m.Type != ipv6.ICMPTypeEchoReply {
			continue
		}
		if e, ok := m.Body.(*icmp.Echo); !ok || e.ID != p.id {
			continue
		}
		a, ok := netip.AddrFromSlice(from.(*net.IPAddr).IP)
		if !ok {
			continue
		}
		now := time.Now()
		p.mu.Lock()
		if st := p.stats[a]; st != nil {
			st.answered++
			if !st.last.IsZero() {
				st.worst = max(st.worst, now.Sub(st.last))
			}
			st.last = now
			if !p.mark.IsZero() && st.firstAfterMark.IsZero() && now.After(p.mark) {
				st.firstAfterMark = now
			}
		}
		p.mu.Unlock()
	}
}

// snapshot returns a copy of the statistics.
func (p *pinger6) snapshot() map[netip.Addr]ping6Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[netip.Addr]ping6Stats, len(p.stats))
	for v, st := range p.stats {
		out[v] = *st
	}
	return out
}

func (p *pinger6) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
		_ = p.conn.Close()
	}
	p.wg.Wait()
}

// durations summarises a set of durations: count, minimum, median, 99th percentile, maximum.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(ds))
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("%d: min %v, median %v, p99 %v, max %v", len(s), r(s[0]), r(s[len(s)/2]), r(s[min(len(s)-1, len(s)*99/100)]), r(s[len(s)-1]))
}

// bestOf is the node, of running, that the plan's instance carrying v ranks highest: its
// master once those nodes' vrrpd have settled.
func (p scalePlan) bestOf(v netip.Addr, running []string) string {
	best, bp := "", -1
	for _, n := range running {
		if pr, ok := p.prio[p.router[v]][n]; ok && int(pr) > bp && pr > 0 {
			best, bp = n, int(pr)
		}
	}
	return best
}

// waitSettled waits until every address of want is held by exactly its node and has
// been, in every round, for settle.
func (s *holderSampler) waitSettled(t *testing.T, timeout, settle time.Duration, what string, want map[netip.Addr]string) {
	t.Helper()
	var since time.Time
	var why string
	deadline := time.Now().Add(timeout)
	for {
		time.Sleep(s.period)
		held, at := s.holders()
		why = ""
		for v, n := range want {
			if hs := held[v]; len(hs) != 1 || hs[0] != n {
				why = fmt.Sprintf("%v on %v, want %s", v, hs, n)
				break
			}
		}
		switch {
		case why != "":
			since = time.Time{}
		case since.IsZero():
			since = at
		case at.Sub(since) >= settle:
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (%s; holders changed %d times in the last 10 s: the hosts keep taking the addresses from each other)",
				timeout, what, why, s.changesSince(time.Now().Add(-10*time.Second)))
		}
	}
}

// changesSince counts the changes of holders seen after t.
func (s *holderSampler) changesSince(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, cs := range s.changes {
		for _, c := range cs {
			if c.at.After(t) {
				n++
			}
		}
	}
	return n
}

// allListed is a plan that lists every Service's address.
func allListed(p scalePlan) bool { return p.missing == 0 }
