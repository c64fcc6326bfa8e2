package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mdlayher/arp"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// The wire's view of who holds a VIP: what a router or client on the segment sees. The
// kernel sampler (startSampler) reads each node's addresses; this watches the answers. A
// client host asks for every VIP's MAC (ARP request) every arpPeriod and records which
// MACs answer. Two holders at once answer the same request from two MACs: a neighbour
// would flip between them, and half the traffic would go to the wrong node.
//
// What the watch holds against an overlap is a flip: the answering MAC changing and
// changing again within a second (A, B, A), or two MACs' replies interleaving. A node
// answers only while it holds the VIP, and the replies arrive in the order the nodes sent
// them, so B answering and A answering after it means both held the VIP at A's answer (a
// real move back takes the VRRP timers: seconds). One clean handover is one change.
//
// It also records which request each reply answers: the reply carries the request's sender
// address back as its target, and round n asks from arpTags[n % len(arpTags)], addresses the
// client holds for nothing else (a reply up to len(arpTags) rounds late, 160 ms, still
// counts against its round). Two MACs answering one request is logged, not held against the
// VIP: each node reads a broadcast request when its softirq gets to it, and on a loaded
// machine the new master can read it milliseconds after the old one let go and answer it
// too (seen: the old master answered a request, stepped down 3 ms later, and the new one
// added the VIP 5 ms after that and answered the same request).

const arpPeriod = 20 * time.Millisecond

// arpTags are the client's tag addresses: .240 to .247, which no host of a lab of fewer
// than 230 hosts has (netlab numbers them from .10), and no test uses as a VIP.
var arpTags = func() []netip.Addr {
	var out []netip.Addr
	for i := 0; i < 8; i++ {
		out = append(out, netip.AddrFrom4([4]byte{10, 99, 0, byte(240 + i)}))
	}
	return out
}()

type arpWatch struct {
	cl   *arp.Client
	done chan struct{}
	wg   sync.WaitGroup
	vips []netip.Addr

	mu      sync.Mutex
	sentAt  []time.Time // by round
	answers map[netip.Addr]map[int][]string
	replies map[netip.Addr][]arpReply
	garps   map[netip.Addr]int
	err     error
}

type arpReply struct {
	at  time.Time
	mac string
}

// startARPWatch asks for each VIP from client host h every arpPeriod until the test ends
// (or stop), on h's eth0 through mdlayher/arp's packet socket.
func startARPWatch(t *testing.T, h *netlab.Host, vips []netip.Addr) *arpWatch {
	t.Helper()
	w := &arpWatch{done: make(chan struct{}), vips: vips,
		answers: map[netip.Addr]map[int][]string{}, replies: map[netip.Addr][]arpReply{}, garps: map[netip.Addr]int{}}
	for _, v := range vips {
		w.answers[v] = map[int][]string{}
	}
	for _, a := range arpTags {
		if out, err := h.Command(context.Background(), "ip", "addr", "add", netip.PrefixFrom(a, 32).String(), "dev", h.Link).CombinedOutput(); err != nil {
			t.Fatalf("tag address %v on %s: %v %s", a, h.Name, err, out)
		}
	}
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		w.cl, err = arp.Dial(ifi)
		return err
	}); err != nil {
		t.Fatalf("ARP socket in %s: %v", h.Name, err)
	}
	round := func(tag netip.Addr, at time.Time) int {
		// The latest round asked from tag before at.
		w.mu.Lock()
		defer w.mu.Unlock()
		for n := len(w.sentAt) - 1; n >= 0 && n >= len(w.sentAt)-2*len(arpTags); n-- {
			if arpTags[n%len(arpTags)] == tag && !w.sentAt[n].After(at) {
				return n
			}
		}
		return -1
	}
	w.wg.Add(2)
	go func() { // asker
		defer w.wg.Done()
		tick := time.NewTicker(arpPeriod)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			tag := arpTags[n%len(arpTags)]
			w.mu.Lock()
			w.sentAt = append(w.sentAt, time.Now())
			w.mu.Unlock()
			for _, v := range vips {
				p, err := arp.NewPacket(arp.OperationRequest, w.cl.HardwareAddr(), tag, net.HardwareAddr{0, 0, 0, 0, 0, 0}, v)
				if err == nil {
					err = w.cl.WriteTo(p, net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
				}
				if err != nil {
					w.fail(fmt.Errorf("ARP request for %v: %w", v, err))
				}
			}
		}
	}()
	go func() { // listener
		defer w.wg.Done()
		for {
			p, _, err := w.cl.Read()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrClosed) {
					select {
					case <-w.done:
					default:
						w.fail(fmt.Errorf("reading ARP: %w", err))
					}
				}
				return
			}
			now := time.Now()
			v := p.SenderIP
			if _, ours := w.answers[v]; !ours {
				continue
			}
			mac := p.SenderHardwareAddr.String()
			if p.Operation != arp.OperationReply || !slices.Contains(arpTags, p.TargetIP) {
				// A gratuitous ARP of a new master (sender and target the VIP).
				if p.TargetIP == v {
					w.mu.Lock()
					w.garps[v]++
					w.mu.Unlock()
				}
				continue
			}
			n := round(p.TargetIP, now)
			w.mu.Lock()
			w.replies[v] = append(w.replies[v], arpReply{now, mac})
			if n >= 0 && !slices.Contains(w.answers[v][n], mac) {
				w.answers[v][n] = append(w.answers[v][n], mac)
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *arpWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// arpRecord is what the watch saw of one VIP.
type arpRecord struct {
	rounds, answered int
	// doubles are the rounds two MACs or more answered, as "time: MACs".
	doubles []string
	// longest is the longest time without a reply (from the first request, and to the
	// last), moves the times the answering MAC changed, macs every MAC that answered.
	longest time.Duration
	moves   int
	macs    []string
	garps   int
	// changes are when the answering MAC changed, and to which; flips the changes that
	// followed another within a second.
	changes []arpChange
	flips   []arpChange
	// overlaps are the flips' windows: from the change before the first flip of a burst to
	// the burst's last flip, how long two MACs took turns answering.
	overlaps []time.Duration
	// stableMoves counts the changes between MACs that each answered for a second or
	// more: the moves a neighbour's cache follows, a burst of flips not counted.
	stableMoves int
}

type arpChange struct {
	at       time.Time
	from, to string
}

// stop ends the watch (once) and returns, per VIP, what it saw, and the first error.
func (w *arpWatch) stop() (map[netip.Addr]arpRecord, error) {
	select {
	case <-w.done:
	default:
		close(w.done)
		time.Sleep(2 * arpPeriod) // the last replies
		_ = w.cl.Close()
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[netip.Addr]arpRecord{}
	if len(w.sentAt) == 0 {
		return out, w.err
	}
	first, last := w.sentAt[0], w.sentAt[len(w.sentAt)-1]
	for _, v := range w.vips {
		r := arpRecord{rounds: len(w.sentAt), answered: len(w.answers[v]), garps: w.garps[v]}
		for n, macs := range w.answers[v] {
			if len(macs) > 1 {
				r.doubles = append(r.doubles, fmt.Sprintf("%s: %v", w.sentAt[n].Format("15:04:05.000"), macs))
			}
		}
		slices.Sort(r.doubles)
		prev, prevMAC := first, ""
		for _, rep := range w.replies[v] {
			r.longest = max(r.longest, rep.at.Sub(prev))
			prev = rep.at
			if prevMAC != "" && rep.mac != prevMAC {
				r.moves++
				c := arpChange{rep.at, prevMAC, rep.mac}
				if n := len(r.changes); n > 0 && c.at.Sub(r.changes[n-1].at) < time.Second {
					r.flips = append(r.flips, c)
				}
				r.changes = append(r.changes, c)
			}
			prevMAC = rep.mac
			if !slices.Contains(r.macs, rep.mac) {
				r.macs = append(r.macs, rep.mac)
			}
		}
		r.longest = max(r.longest, last.Sub(prev))
		// Bursts: runs of changes each less than a second after the one before. A burst
		// of two changes or more is two MACs taking turns; its window is from its first
		// change to its last (a lower bound of the overlap: a round may go unanswered by
		// one of them).
		for i := 0; i < len(r.changes); {
			j := i + 1
			for j < len(r.changes) && r.changes[j].at.Sub(r.changes[j-1].at) < time.Second {
				j++
			}
			if j-i > 1 {
				r.overlaps = append(r.overlaps, r.changes[j-1].at.Sub(r.changes[i].at))
			}
			i = j
		}
		// Stable moves: the MACs in the order they answered, leaving out every stretch
		// shorter than a second but the last, neighbours merged.
		if len(r.changes) > 0 {
			stretches := []string{r.changes[0].from}
			for i, c := range r.changes {
				if i+1 < len(r.changes) && r.changes[i+1].at.Sub(c.at) < time.Second {
					continue
				}
				if stretches[len(stretches)-1] != c.to {
					stretches = append(stretches, c.to)
				}
			}
			r.stableMoves = len(stretches) - 1
		}
		out[v] = r
	}
	return out, w.err
}

// hostMACs maps each host's eth0 MAC to its name, to name the nodes that answered.
func hostMACs(t testing.TB, hosts ...*netlab.Host) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, h := range hosts {
		if err := h.Do(func() error {
			ifi, err := net.InterfaceByName(h.Link)
			if err == nil {
				out[ifi.HardwareAddr.String()] = h.Name
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
