package e2e

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

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
