package daemon

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// TestManyVIPsAddedInChunks (issue 31): an instance taking over with hundreds of
// addresses (its excluded VIPs here) adds them holdChunk at a time, each chunk one Hold
// after one Reserve of them all (the crash record written once, ahead), and the adverts
// that fall due meanwhile go out between the chunks: another master at 10 ms, whose
// advert would otherwise wait for every address of the slow add. Its step-down removes
// them the same way.
func TestManyVIPsAddedInChunks(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	const n = 300
	masterAndMany(t, d, 10*time.Millisecond, n)
	advance(d, takeover(100).Add(-time.Millisecond)) // VI_1 master, advertising
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=BACKUP" {
		t.Fatalf("before VI_2's takeover: %s", s)
	}
	h.events, h.reserved = nil, nil
	h.addDelay = 4 * time.Millisecond // each Hold: ~ 64 netlink adds
	advance(d, takeover(100))
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=MASTER" {
		t.Fatalf("after VI_2's takeover: %s", s)
	}
	var adds []int // how many addresses each Hold of the excluded ones was given
	firstAdd, lastAdd, between := -1, -1, 0
	for i, e := range h.events {
		if strings.HasPrefix(e, "add ") && strings.Contains(e, "/32") {
			adds = append(adds, strings.Count(e, "/32"))
			if firstAdd < 0 {
				firstAdd = i
			}
			lastAdd = i
		}
	}
	for _, e := range h.events[max(firstAdd, 0):max(lastAdd, 0)] {
		if e == "advert vrid 1 priority 150" {
			between++
		}
	}
	total := 0
	for _, a := range adds {
		total += a
		if a > holdChunk {
			t.Errorf("a Hold of %d addresses, want at most %d", a, holdChunk)
		}
	}
	if total != n || len(adds) != (n+holdChunk-1)/holdChunk {
		t.Errorf("the excluded VIPs were added in %d Holds of %v, want %d addresses in %d", len(adds), adds, n, (n+holdChunk-1)/holdChunk)
	}
	reservedExcluded := 0
	for _, r := range h.reserved {
		if strings.Count(r, "/32") == n {
			reservedExcluded++
		}
	}
	if reservedExcluded != 1 {
		t.Errorf("Reserve calls %q: want one of all %d excluded VIPs", h.reserved, n)
	}
	if between == 0 {
		t.Errorf("no advert of VI_1 (10 ms) between the chunks of VI_2's %d addresses, %v of adds:\n%s", n, time.Duration(len(adds))*h.addDelay, strings.Join(h.events, "\n"))
	}
	if h.turns != 0 {
		t.Errorf("%d turns left open", h.turns)
	}

	// The step-down: a better master for VRID 2; the excluded VIPs leave the same way.
	h.events = nil
	h.onRelease = func() { time.Sleep(4 * time.Millisecond) }
	in := d.byName["VI_2"]
	conn := in.conn
	// Heard 5 ms before VI_1's next advert is due: the removes (5 × 4 ms) outlast that.
	next, ok := d.timers.Armed(d.byName["VI_1"].timerKey)
	if !ok {
		t.Fatal("VI_1 has no Adver_Timer armed")
	}
	d.handleBatch(&batch{conn: conn, tc: conn.tc, pkts: []transport.Packet{peerAdvert(t, 2, 150, "10.99.0.101/24")}, n: 1}, next.Add(-5*time.Millisecond))
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=BACKUP" {
		t.Fatalf("after VI_2's step-down: %s", s)
	}
	removes, removed, firstRm, lastRm, between := 0, 0, -1, -1, 0
	for i, e := range h.events {
		if strings.HasPrefix(e, "remove ") && strings.Contains(e, "/32") {
			removes++
			c := strings.Count(e, "/32")
			removed += c
			if c > holdChunk {
				t.Errorf("a Release of %d addresses, want at most %d", c, holdChunk)
			}
			if firstRm < 0 {
				firstRm = i
			}
			lastRm = i
		}
	}
	for _, e := range h.events[max(firstRm, 0):max(lastRm, 0)] {
		if e == "advert vrid 1 priority 150" {
			between++
		}
	}
	if removed != n || removes != (n+holdChunk-1)/holdChunk {
		t.Errorf("the excluded VIPs were removed in %d Releases of %d addresses, want %d in %d", removes, removed, n, (n+holdChunk-1)/holdChunk)
	}
	if between == 0 {
		t.Errorf("no advert of VI_1 between the chunks of VI_2's step-down:\n%s", strings.Join(h.events, "\n"))
	}
	if h.turns != 0 {
		t.Errorf("%d turns left open after the step-down", h.turns)
	}
}

// TestReloadAddsManyVIPsAdvertsBetween (issue 31): a reload that gives a master hundreds
// of new addresses (a shared router gaining Services; its excluded VIPs here) adds them
// holdChunk at a time, and the adverts of another master (10 ms) that fall due meanwhile
// go out between the chunks, even with a timer of another kind (the publication) due
// ahead of them in the heap: that timer waits for the loop's next turn, the adverts do
// not. Before, a reload sent none until it ended, and a timer of another kind due first
// kept them back even between a takeover's chunks.
func TestReloadAddsManyVIPsAdvertsBetween(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	fast := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	fast.AdvertInterval = 10 * time.Millisecond
	many := testInstance("VI_2", 2, 100, "10.99.0.101/24")
	startDaemon(t, d, fast, many)
	at := takeover(100).Add(time.Millisecond)
	advance(d, at)
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=MASTER" {
		t.Fatalf("before the reload: %s", s)
	}
	const n = 300
	many.ExcludedVIPs = excludedRun(n)
	h.events = nil
	h.addDelay = 4 * time.Millisecond // each Hold: a few IPv6 adds on a loaded host
	// A publication due now, ahead of VI_1's next advert in the heap.
	d.timers.Set(d.publishK, at)
	if err := d.reload(&config.Config{Instances: []config.Instance{fast, many}}, at); err != nil {
		t.Fatal(err)
	}
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=MASTER" {
		t.Fatalf("after the reload: %s", s)
	}
	added, holds, firstAdd, lastAdd := 0, 0, -1, -1
	for i, e := range h.events {
		if strings.HasPrefix(e, "add ") && strings.Contains(e, "/32") {
			c := strings.Count(e, "/32")
			added += c
			holds++
			if c > holdChunk {
				t.Errorf("a Hold of %d addresses, want at most %d", c, holdChunk)
			}
			if firstAdd < 0 {
				firstAdd = i
			}
			lastAdd = i
		}
	}
	if added != n {
		t.Fatalf("the reload added %d of the %d excluded VIPs in %d Holds:\n%s", added, n, holds, strings.Join(h.events, "\n"))
	}
	between := 0
	for _, e := range h.events[firstAdd:lastAdd] {
		if e == "advert vrid 1 priority 150" {
			between++
		}
	}
	// The adds take at least holds × 4 ms (150 ms and more), VI_1's adverts are due every
	// 10 ms: a few must have gone out between them, however slow the host.
	if want := 3; between < want {
		t.Errorf("%d adverts of VI_1 (10 ms) between the %d Holds of the reload's %d addresses, want at least %d:\n%s", between, holds, n, want, strings.Join(h.events, "\n"))
	}
	if h.turns != 0 {
		t.Errorf("%d turns left open", h.turns)
	}
	if !d.wake.now.IsZero() {
		t.Errorf("the wake-up clock is left set after the reload: %v", d.wake.now)
	}
}

// TestReloadExcludedVIPsDiffed (issue 31): a master whose excluded VIPs change in a
// reload (a shared router gaining and losing Services, the cut at what an advert carries
// moving) adds the new ones and removes the dropped ones only. An address that stays,
// also one moving between the advertised VIPs and the excluded ones, is never off the
// interface; before, every excluded VIP was removed and added back.
func TestReloadExcludedVIPsDiffed(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	excl := func(from, to int) []config.VIP {
		var out []config.VIP
		for i := from; i <= to; i++ {
			out = append(out, config.VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf("10.99.1.%d/32", i)), Dev: "eth0"})
		}
		return out
	}
	ic := testInstance("VI_1", 1, 100, "10.99.0.101/24", "10.99.2.1/32")
	ic.ExcludedVIPs = excl(1, 100)
	startDaemon(t, d, ic)
	at := takeover(100).Add(time.Millisecond)
	advance(d, at)
	if s := publishedStates(d); s != "VI_1=MASTER" {
		t.Fatalf("before the reload: %s", s)
	}
	addr := func(s string) vip.VIP { return vip.VIP{Prefix: netip.MustParsePrefix(s), Dev: "eth0"} }
	kept := []vip.VIP{addr("10.99.0.101/24"), addr("10.99.2.1/32")}
	for i := 6; i <= 100; i++ {
		kept = append(kept, addr(fmt.Sprintf("10.99.1.%d/32", i)))
	}
	// Every kept address must be on the host between any two of the reload's VIP calls.
	var gaps []string
	check := func() {
		h.vipMu.Lock()
		defer h.vipMu.Unlock()
		for _, v := range kept {
			if !h.held[v] {
				gaps = append(gaps, fmt.Sprintf("%v off after %d VIP calls", v, len(h.vipCalls)))
			}
		}
	}
	check()
	if len(gaps) > 0 {
		t.Fatalf("before the reload: %v", gaps)
	}
	h.onHold, h.onRelease = check, check
	h.vipCalls = nil
	// 10.99.1.1-5 dropped, 10.99.1.101-110 new, 10.99.1.50 now advertised and
	// 10.99.2.1 now excluded.
	ic2 := ic
	ic2.VIPs = []config.VIP{{Prefix: netip.MustParsePrefix("10.99.0.101/24"), Dev: "eth0"}, {Prefix: netip.MustParsePrefix("10.99.1.50/32"), Dev: "eth0"}}
	ic2.ExcludedVIPs = slices.DeleteFunc(excl(6, 110), func(v config.VIP) bool { return v.Prefix.Addr() == netip.MustParseAddr("10.99.1.50") })
	ic2.ExcludedVIPs = append(ic2.ExcludedVIPs, config.VIP{Prefix: netip.MustParsePrefix("10.99.2.1/32"), Dev: "eth0"})
	if err := d.reload(&config.Config{Instances: []config.Instance{ic2}}, at.Add(time.Second/2)); err != nil {
		t.Fatal(err)
	}
	h.onHold, h.onRelease = nil, nil
	check()
	if s := publishedStates(d); s != "VI_1=MASTER" {
		t.Fatalf("after the reload: %s", s)
	}
	if len(gaps) > 0 {
		t.Errorf("kept addresses off the interface during the reload: %v\nVIP calls:\n%s", gaps, strings.Join(h.vipCalls, "\n"))
	}
	for i := 1; i <= 110; i++ {
		v := addr(fmt.Sprintf("10.99.1.%d/32", i))
		if want := i > 5; h.held[v] != want {
			t.Errorf("%v held %v, want %v", v, h.held[v], want)
		}
	}
	added := 0
	for _, c := range h.vipCalls {
		if a, ok := strings.CutPrefix(c, "add "); ok && a != "" {
			added += strings.Count(a, ",") + 1
		}
	}
	// The 10 new excluded ones, 10.99.2.1 under the excluded holder and 10.99.1.50
	// under the instance's own name (each already on the interface for the other).
	if added > 12 {
		t.Errorf("the reload added %d addresses, want at most 12:\n%s", added, strings.Join(h.vipCalls, "\n"))
	}
}

// TestAdvertDueInATakeoversWakeUpKeepsItsTimer (issue 31's leave lab): a master's
// Adver_Timer that falls due in the same wake-up as another instance's takeover, just
// after it, is sent with the takeover's advertisement and re-armed at once, not after the
// takeover's hundreds of addresses are in. Armed only when its own list's turn came, it
// was off the heap for all of them: a survivor taking over the leaving node's router
// went silent 420 ms in one of its own, and that router's backup took it over beside it.
func TestAdvertDueInATakeoversWakeUpKeepsItsTimer(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	const n = 300
	masterAndMany(t, d, 100*time.Millisecond, n)
	// Run up to VI_1's first Adver_Timer after VI_2's Master_Down_Timer, and fire both
	// in one wake-up then, the takeover first.
	down := takeover(100)
	advance(d, down.Add(-time.Millisecond))
	vi1 := d.byName["VI_1"]
	for {
		next, ok := d.timers.Armed(vi1.timerKey)
		if !ok {
			t.Fatal("VI_1 has no Adver_Timer armed")
		}
		if next.After(down) {
			h.events = nil
			h.addDelay = 4 * time.Millisecond // each Hold; 38 Holds outlast VI_1's interval
			d.fireTimers(next)
			break
		}
		d.fireTimers(next)
	}
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=MASTER" {
		t.Fatalf("after VI_2's takeover: %s", s)
	}
	firstAdd, lastAdd, adverts, between := -1, -1, 0, 0
	for i, e := range h.events {
		if strings.HasPrefix(e, "add ") && strings.Contains(e, "/32") {
			if firstAdd < 0 {
				firstAdd = i
			}
			lastAdd = i
		}
		if e == "advert vrid 1 priority 150" {
			adverts++
			if firstAdd >= 0 && lastAdd == i-1 {
				between++ // right after a chunk: sent from within the add
			}
		}
	}
	if adverts == 0 || firstAdd < 0 {
		t.Fatalf("VI_1 sent %d adverts, VI_2 added from event %d:\n%s", adverts, firstAdd, strings.Join(h.events, "\n"))
	}
	if between == 0 {
		t.Errorf("VI_1's Adver_Timer fell due with VI_2's takeover and sent nothing between the %d chunks of VI_2's %d addresses (%v):\n%s",
			(n+holdChunk-1)/holdChunk, n, time.Duration((n+holdChunk-1)/holdChunk)*h.addDelay, strings.Join(h.events, "\n"))
	}
}

// TestTakeoversInOneWakeUpKeepAdvertising (issue 31's join lab): two routers take over in
// one wake-up, each with excluded VIPs. While the first adds its addresses, the second's
// first Adver_Timer falls due between the chunks, and with it, the first's: both must go
// out, and go on every interval. The second's advert, sent before its own takeover list
// ran, once went on to add its excluded VIPs there and then (its list's work, out of
// order), nested in the first's add and ahead of the first's advert collected with it:
// in the lab the first router went silent for 340 ms of its own takeover, long enough for
// the joining node to take it as well.
func TestTakeoversInOneWakeUpKeepAdvertising(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	var ics []config.Instance
	// VI_1 takes over first and adds its addresses; VI_2, which heard a master since, is
	// due in the same wake-up after it. VI_2's first Adver_Timer falls due 10 ms before
	// VI_1's, and with Holds of 20 ms both are collected between the same two chunks,
	// VI_2's first.
	for k, c := range []struct {
		prio uint8
		iv   time.Duration
	}{{254, 110 * time.Millisecond}, {250, 100 * time.Millisecond}} {
		ic := testInstance(fmt.Sprintf("VI_%d", k+1), uint8(k+1), c.prio, fmt.Sprintf("10.99.0.%d/24", 100+k))
		ic.AdvertInterval = c.iv
		for i := range 100 {
			ic.ExcludedVIPs = append(ic.ExcludedVIPs, config.VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf("10.%d.0.%d/32", 10+k, 1+i)), Dev: "eth0"})
		}
		ics = append(ics, ic)
	}
	startDaemon(t, d, ics...)
	vi2 := d.byName["VI_2"]
	d.handleBatch(&batch{conn: vi2.conn, tc: vi2.conn.tc, pkts: []transport.Packet{peerAdvert(t, 2, 254, "10.99.0.101/24")}, n: 1}, t0.Add(50*time.Millisecond))
	var last time.Time
	for _, in := range d.instances {
		if at, ok := d.timers.Armed(in.timerKey); ok && at.After(last) {
			last = at
		}
	}
	h.events = nil
	h.addDelay = 20 * time.Millisecond // 13 Holds of excluded VIPs each: about 260 ms a router
	d.fireTimers(last)
	if s := publishedStates(d); strings.Count(s, "=MASTER") != 2 {
		t.Fatalf("after the takeovers: %s", s)
	}
	adverts := map[string]int{}
	for _, e := range h.events {
		if strings.HasPrefix(e, "advert vrid ") {
			adverts[strings.Fields(e)[2]]++
		}
	}
	// Each router's adverts must be at most an interval apart (5 or 6 Holds of 20 ms),
	// plus a Hold or two of slack: count the Holds between each router's adverts.
	for _, vrid := range []string{"1", "2"} {
		since, worst, adverts := -1, 0, 0
		for _, e := range h.events {
			switch {
			case strings.HasPrefix(e, "advert vrid "+vrid+" "):
				adverts++
				since = 0
			case strings.HasPrefix(e, "add ") && since >= 0:
				since++
				worst = max(worst, since)
			}
		}
		if adverts < 2 || worst > 8 {
			t.Errorf("VRID %s: %d adverts, up to %d Holds of %v apart, want at most 8 (its interval and some slack):\n%s",
				vrid, adverts, worst, h.addDelay, strings.Join(h.events, "\n"))
		}
	}
	for _, in := range d.instances {
		if _, ok := d.timers.Armed(in.timerKey); !ok {
			t.Errorf("%s: no timer armed after the takeovers", in.cfg.Name)
		}
	}
}

// masterAndMany starts VI_1 (10.99.0.100, priority 150, advertising every interval: it
// becomes master first) and VI_2 (10.99.0.101 and n excluded VIPs, priority 100, every
// second) on d.
func masterAndMany(t *testing.T, d *Daemon, interval time.Duration, n int) {
	t.Helper()
	master := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	master.AdvertInterval = interval
	many := testInstance("VI_2", 2, 100, "10.99.0.101/24")
	many.ExcludedVIPs = excludedRun(n)
	startDaemon(t, d, master, many)
}
