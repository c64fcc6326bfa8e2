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
// A reply is tied to its request by the request's sender address, which the reply carries
// back as its target: round n asks from arpTags[n % len(arpTags)], addresses the client
// holds for nothing else. A reply that arrives late on a loaded machine (up to
// len(arpTags) rounds, 160 ms) is still counted against the round that asked, so a clean
// handover (the old MAC answers a round, the new one a later round) never looks like an
// overlap, and an overlap (two MACs answer one round) always does.

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
	// changes are when the answering MAC changed, and to which.
	changes []arpChange
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
				r.changes = append(r.changes, arpChange{rep.at, prevMAC, rep.mac})
			}
			prevMAC = rep.mac
			if !slices.Contains(r.macs, rep.mac) {
				r.macs = append(r.macs, rep.mac)
			}
		}
		r.longest = max(r.longest, last.Sub(prev))
		out[v] = r
	}
	return out, w.err
}
