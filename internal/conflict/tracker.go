package conflict

import (
	"cmp"
	"math"
	"net/netip"
	"slices"
	"time"
)

// Target is one held VIP, as the daemon hands it over: the address, the interface its
// probes go out on and its answers come in on, and the instance holding it (the labels of
// the instance's other metrics).
type Target struct {
	Addr netip.Addr
	// Dev is the interface to probe on: the VIP's device, or for a use_vmac instance the
	// macvlan's parent, whose own MAC the answers come back to (two holders of one
	// virtual router share the virtual MAC, and a switch delivers answers to it to
	// whichever of them it heard last).
	Dev      string
	Instance string
	Intf     string
	VRID     uint8
}

// Conflict is a held VIP that another host answers for too.
type Conflict struct {
	Target
	MAC   string    // the other host's, as net.HardwareAddr prints it
	Since time.Time // when it was confirmed
}

// Change is a conflict that started or ended.
type Change struct {
	Conflict
	Start bool
}

// Settings pace the probes.
type Settings struct {
	// Interval is how often each held VIP is probed while nobody else answers for it:
	// DefaultInterval when zero, and never more often than an answer window (1 s).
	Interval time.Duration
	// Rate caps the probes of all VIPs together, per second: DefaultRate when zero.
	// Beyond Rate × Interval held VIPs the round takes longer than Interval.
	Rate float64
}

const (
	// DefaultInterval probes each VIP every two seconds: a second holder is confirmed
	// within about Interval + answerWindow + confirmAfter of appearing, inside the 5 s
	// the lab asks, when the rate cap allows (up to Rate × Interval VIPs).
	DefaultInterval = 2 * time.Second
	// DefaultRate is 50 probes a second for the whole daemon: 100 VIPs at the default
	// interval; 255 VIPs are each probed every 5.1 s. A probe is one broadcast frame of 42
	// bytes, and its cost to this host one sendto.
	DefaultRate = 50
	// tick is the least time between two wake-ups that send probes: the cap's probes go
	// in small batches (12 or 13 at the default rate) four times a second rather than
	// one every 20 ms, since each wake-up of the process, not the frame, is most of a
	// probe's cost (BenchmarkConflictProbes255). A VIP's period varies by a tick at most.
	tick = 250 * time.Millisecond
	// settle is how long a new holder waits before its first probe: the master it
	// replaced may still be stepping down (a preempted master removes its VIPs when it
	// hears the new one's advertisement, milliseconds later; more on a loaded host).
	settle = time.Second
	// confirmAfter: evidence (an answer, a gratuitous ARP) from a MAC makes it a suspect;
	// it becomes a conflict only when it also answers a probe sent at least this long
	// after. A preempted master's gratuitous ARPs reach the old master before it has
	// stepped down; by the confirming probe it has no address to answer with.
	confirmAfter = 500 * time.Millisecond
	// answerWindow is how long after a probe an answer counts as one; the next probe of
	// a VIP with suspects or conflicts goes when it closes, so they are re-checked once a
	// window (every second).
	answerWindow = time.Second
	// clearMisses: a conflict ends after this many probes in a row that its MAC did not
	// answer; one lost frame does not end it.
	clearMisses = 2
)

func (s Settings) withDefaults() Settings {
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	// A VIP is probed again only once its last probe's window has closed.
	s.Interval = max(s.Interval, answerWindow)
	if s.Rate <= 0 {
		s.Rate = DefaultRate
	}
	return s
}

// key is one probed address: the same VIP on two interfaces is probed on each.
type key struct {
	addr netip.Addr
	dev  string
}

type vipState struct {
	key
	holders []Target
	since   time.Time // held since
	next    time.Time // next probe due
	probed  time.Time // the open window's probe, zero when none is open
	macs    map[string]*macState
}

// macState is one MAC claiming a held VIP: a suspect, or a conflict once confirmed.
type macState struct {
	seen     time.Time // first evidence
	conflict bool
	since    time.Time // confirmed at
	answered bool      // evidence inside the open window
	misses   int       // windows in a row without its evidence, while a conflict
}

// tracker is the detector's pure logic: the held VIPs, their probe schedule under the
// rate cap, and the evidence turned into conflicts. The caller passes the time.
type tracker struct {
	s        Settings
	vips     map[key]*vipState
	tokens   float64
	burst    float64 // the most tokens: one tick's worth of the rate
	refilled time.Time
	lastSent time.Time // the last wake-up that sent probes
	changes  []Change  // since the last takeChanges
}

func newTracker(s Settings) *tracker {
	t := &tracker{s: s.withDefaults(), vips: map[key]*vipState{}}
	t.burst = max(1, math.Ceil(t.s.Rate*tick.Seconds()))
	t.tokens = t.burst
	return t
}

// setHeld replaces the held set. A VIP held before keeps its schedule and its suspects;
// a new one is first probed settle from now; one no longer held ends its conflicts.
func (t *tracker) setHeld(ts []Target, now time.Time) {
	seen := make(map[key]bool, len(ts))
	for _, tg := range ts {
		k := key{tg.Addr, tg.Dev}
		st := t.vips[k]
		if st == nil {
			st = &vipState{key: k, since: now, next: now.Add(settle), macs: map[string]*macState{}}
			t.vips[k] = st
		}
		if !seen[k] {
			seen[k] = true
			st.holders = st.holders[:0]
		}
		st.holders = append(st.holders, tg)
	}
	for k, st := range t.vips {
		if seen[k] {
			continue
		}
		for mac, m := range st.macs {
			if m.conflict {
				t.report(st, mac, m, false)
			}
		}
		delete(t.vips, k)
	}
}

// observe takes one piece of evidence: mac (not this host's) claimed addr on dev.
func (t *tracker) observe(addr netip.Addr, dev, mac string, now time.Time) {
	st := t.vips[key{addr, dev}]
	if st == nil {
		return // not held (any more): nothing to defend
	}
	m := st.macs[mac]
	if m == nil {
		m = &macState{seen: now}
		st.macs[mac] = m
		// Confirm soon, but never before the holder settled.
		st.next = later(earlier(st.next, now.Add(confirmAfter)), st.since.Add(settle))
		return
	}
	if st.probed.IsZero() {
		return // between windows: the next probe decides
	}
	m.answered = true
	if !m.conflict && !st.probed.Before(m.seen.Add(confirmAfter)) && !st.probed.Before(st.since.Add(settle)) {
		m.conflict, m.since, m.misses = true, now, 0
		t.report(st, mac, m, true)
	}
}

// closeWindows ends the answer windows open since answerWindow before now: a conflict
// its MAC did not answer misses once (and ends at clearMisses), a suspect that did not
// answer a probe sent after it was seen is dropped.
func (t *tracker) closeWindows(now time.Time) {
	for _, st := range t.vips {
		if st.probed.IsZero() || now.Before(st.probed.Add(answerWindow)) {
			continue
		}
		for mac, m := range st.macs {
			switch {
			case m.answered:
				m.misses = 0
			case m.conflict:
				if m.misses++; m.misses >= clearMisses {
					t.report(st, mac, m, false)
					delete(st.macs, mac)
				}
			case st.probed.After(m.seen):
				delete(st.macs, mac) // a probe sent after it was first seen, unanswered
			}
			m.answered = false
		}
		st.probed = time.Time{}
	}
}

// probes closes the windows due by now and returns the VIPs to probe now, earliest due
// first, as many as the rate cap allows; each is booked as probed at now. One pass over
// the held VIPs per probe (at most a tick's worth a call): no sort, no allocation per VIP.
func (t *tracker) probes(now time.Time) []key {
	t.closeWindows(now)
	t.refill(now)
	var out []key
	for t.tokens >= 1 {
		var best *vipState
		for _, st := range t.vips {
			if st.probed.IsZero() && !st.next.After(now) && (best == nil || dueBefore(st, best)) {
				best = st
			}
		}
		if best == nil {
			break
		}
		t.tokens--
		t.lastSent = now
		best.probed = now
		if len(best.macs) > 0 {
			best.next = now.Add(answerWindow) // re-check once the window closes
		} else {
			best.next = now.Add(t.s.Interval)
		}
		out = append(out, best.key)
	}
	return out
}

// dueBefore orders due VIPs: the longest due first, then by address and interface, so
// that the order does not depend on the map's.
func dueBefore(a, b *vipState) bool {
	if c := a.next.Compare(b.next); c != 0 {
		return c < 0
	}
	if c := a.addr.Compare(b.addr); c != 0 {
		return c < 0
	}
	return a.dev < b.dev
}

func (t *tracker) refill(now time.Time) {
	if !t.refilled.IsZero() && now.After(t.refilled) {
		t.tokens = min(t.burst, t.tokens+now.Sub(t.refilled).Seconds()*t.s.Rate)
	}
	if now.After(t.refilled) {
		t.refilled = now
	}
}

// nextWake is when probes next has something to do, false when nothing is held.
func (t *tracker) nextWake() (time.Time, bool) {
	var at time.Time
	ok := false
	consider := func(x time.Time) {
		if !ok || x.Before(at) {
			at, ok = x, true
		}
	}
	// The next probe waits for a token and a tick after the last batch.
	paced := t.lastSent.Add(tick)
	if t.tokens < 1 {
		paced = later(paced, t.refilled.Add(time.Duration((1-t.tokens)/t.s.Rate*float64(time.Second))))
	}
	for _, st := range t.vips {
		next := st.next
		if !st.probed.IsZero() {
			end := st.probed.Add(answerWindow)
			if len(st.macs) > 0 {
				// A suspect or a conflict: its window's end decides, on time. Other
				// windows close whenever probes next runs: nothing waits on them.
				consider(end)
				continue
			}
			next = later(next, end) // no probe while its window is open
		}
		consider(later(next, paced))
	}
	return at, ok
}

// report records a conflict's start or end for each of the VIP's holders.
func (t *tracker) report(st *vipState, mac string, m *macState, start bool) {
	for _, h := range st.holders {
		t.changes = append(t.changes, Change{Conflict: Conflict{Target: h, MAC: mac, Since: m.since}, Start: start})
	}
}

// takeChanges returns the changes since the last call.
func (t *tracker) takeChanges() []Change {
	c := t.changes
	t.changes = nil
	return c
}

// conflicts lists the conflicts now, one per holder and MAC, in a stable order.
func (t *tracker) conflicts() []Conflict {
	var out []Conflict
	for _, st := range t.vips {
		for mac, m := range st.macs {
			if !m.conflict {
				continue
			}
			for _, h := range st.holders {
				out = append(out, Conflict{Target: h, MAC: mac, Since: m.since})
			}
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), a.Addr.Compare(b.Addr), cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.MAC, b.MAC))
	})
	return out
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
