package e2e

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

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
			return netlinkAddrs(as), nil
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
	// unheldEnd is when each address's longest stretch in unheld ended (the round that
	// saw it held again), to find it in the daemons' logs.
	unheldEnd map[netip.Addr]time.Time
	unread    int
	errs      []error
}

// record returns what was seen in [from, to].
func (s *holderSampler) record(from, to time.Time) holderRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := holderRecord{readMax: s.readMax, unheld: map[netip.Addr]time.Duration{}, unheldEnd: map[netip.Addr]time.Time{}, unread: s.unread, errs: s.errs}
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
				if !lastHeld.IsZero() && c.at.After(from) && !lastHeld.After(to) && c.at.Sub(lastHeld) > r.unheld[v] {
					r.unheld[v], r.unheldEnd[v] = c.at.Sub(lastHeld), c.at
				}
				held = true
			case c.mask == 0 && held:
				// The previous round was the last to see it held: a change is stamped
				// at the first round of the new state, so step back one round gap at most.
				lastHeld = c.at.Add(-s.period)
				held = false
			}
		}
		if !held && !lastHeld.IsZero() && !lastHeld.After(to) && s.last.Sub(lastHeld) > r.unheld[v] {
			r.unheld[v], r.unheldEnd[v] = s.last.Sub(lastHeld), s.last
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

// netlinkAddrs are the addresses of a netlink address dump, IPv4 unmapped.
func netlinkAddrs(as []netlink.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			out = append(out, ip.Unmap())
		}
	}
	return out
}
