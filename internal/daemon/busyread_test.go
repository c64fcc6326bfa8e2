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
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestTakeoverReadsAdvertsBetweenChunks (issue 31's failover lab: a backup busy 770 ms
// adding a dead node's addresses took over two routers of a live master): while VI_1
// takes over with hundreds of addresses, holdChunk at a time, the advertisements that
// arrive meanwhile are read between the chunks, the batch the loop parked while it waited
// for the lock included. VI_2's live master's advert re-arms VI_2's Master_Down_Timer,
// which would otherwise run out during the add, so VI_2 stays BACKUP; a better master's
// advert for VI_3, master here, makes VI_3 step down at once, between two chunks, not
// after the last.
func TestTakeoverReadsAdvertsBetweenChunks(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	busy := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	const n = 300
	busy.ExcludedVIPs = excludedRun(n)
	startDaemon(t, d, busy, testInstance("VI_2", 2, 100, "10.99.0.101/24"), testInstance("VI_3", 3, 200, "10.99.0.102/24"))
	vi2 := d.byName["VI_2"]
	conn := vi2.conn
	// VI_2's master was last heard 50 ms after t0: its Master_Down_Timer runs out 50 ms
	// into VI_1's takeover, whose adds (38 chunks × 4 ms) last longer than that.
	d.handleBatch(&batch{conn: conn, tc: conn.tc, pkts: []transport.Packet{peerAdvert(t, 2, 150, "10.99.0.101/24")}, n: 1}, t0.Add(50*time.Millisecond))
	advance(d, takeover(100).Add(-time.Millisecond))
	if s := publishedStates(d); s != "VI_1=BACKUP VI_2=BACKUP VI_3=MASTER" {
		t.Fatalf("before VI_1's takeover: %s", s)
	}
	staleDeadline := vi2.sm.Deadline()

	h.events = nil
	h.addDelay = 4 * time.Millisecond
	s := h.socks[0]
	var parked *batch
	holds := 0
	h.onHold = func() {
		if holds++; holds != 2 { // after the first chunk of the excluded VIPs
			return
		}
		s.in <- []transport.Packet{peerAdvert(t, 2, 150, "10.99.0.101/24"), peerAdvert(t, 3, 250, "10.99.0.102/24")}
		parked = recvBatch(t, d)
		d.parkBatch(parked) // as the loop does while it waits for the lock
		h.events = append(h.events, "adverts arrived")
	}
	advance(d, takeover(100))
	h.onHold = nil
	if parked == nil {
		t.Fatal("VI_1's takeover made fewer than two Holds")
	}
	if d.takeParked(parked) {
		t.Error("the parked batch was still the loop's after the takeover: nobody read it between the chunks")
	}
	if u := d.unhandled.Load(); u != 0 {
		t.Errorf("%d batches counted unhandled after the takeover", u)
	}
	if !vi2.sm.Deadline().After(staleDeadline) {
		t.Errorf("VI_2's Master_Down_Timer still at %v after t0, not re-armed by the advert read between the chunks", vi2.sm.Deadline().Sub(t0))
	}
	if got := publishedStates(d); got != "VI_1=MASTER VI_2=BACKUP VI_3=BACKUP" {
		t.Errorf("after VI_1's takeover: %s, want VI_3 stepped down to the better master", got)
	}
	arrived := slices.Index(h.events, "adverts arrived")
	lastAdd, stepDown := -1, -1
	for i, e := range h.events {
		if strings.HasPrefix(e, "add ") && strings.Contains(e, "/32") {
			lastAdd = i
		}
		if e == "remove 10.99.0.102/24 dev eth0" {
			stepDown = i
		}
	}
	if arrived < 0 || stepDown < arrived || lastAdd < stepDown {
		t.Errorf("events: adverts arrived at %d, VI_3's VIP removed at %d, VI_1's last add at %d; want the removal between them:\n%s",
			arrived, stepDown, lastAdd, strings.Join(h.events, "\n"))
	}
	// Past the stale deadline VI_2 still follows its master.
	advance(d, staleDeadline.Add(10*time.Millisecond))
	if in := d.byName["VI_2"]; in.sm.State() != vrrp.StateBackup {
		t.Errorf("VI_2 is %v after its stale deadline: it took over from a live master", in.sm.State())
	}
}

// TestParkedBatchIsTheLoopsWhenNobodyReads: a batch the loop parked while waiting for the
// lock is its own to handle when no busy work took it meanwhile, and only once.
func TestParkedBatchIsTheLoopsWhenNobodyReads(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	h.socks[0].in <- []transport.Packet{peerAdvert(t, 1, 150, "10.99.0.100/24")}
	b := recvBatch(t, d)
	d.parkBatch(b)
	if !d.takeParked(b) {
		t.Fatal("the loop could not take back its parked batch")
	}
	if d.takeParked(b) {
		t.Error("the parked batch was taken back twice")
	}
	if got, ok := d.nextBatch(); ok {
		t.Errorf("a busy reader would get batch %p after the loop took its own back", got)
	}
}

// TestTakeoverStopsAddingOnABetterMaster: a router taking over with hundreds of addresses
// that hears a better master between two chunks (a false takeover: its master's adverts
// were late, or unread) stops adding, removes what it added, and is BACKUP under that
// master: no announcement of its addresses, no Adver_Timer left armed from the takeover,
// nothing of it on the interface.
func TestTakeoverStopsAddingOnABetterMaster(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	const n = 40 // five chunks, all in the advert: the announcement would follow the last
	vips := manyVIPs(n)
	startDaemon(t, d, testInstance("VI_1", 1, 100, vips...))
	in := d.byName["VI_1"]
	h.events = nil
	h.onHold = arriveOnCall(t, d, h, 2, true, peerAdvert(t, 1, 150, vips...))
	advance(d, takeover(100))
	h.onHold = nil
	if in.sm.State() != vrrp.StateBackup || in.sm.Timer() != vrrp.TimerMasterDown || in.sm.Master() != peer {
		t.Fatalf("after the better master's advert: %v, timer %v, master %v; want BACKUP under %v", in.sm.State(), in.sm.Timer(), in.sm.Master(), peer)
	}
	if at, ok := d.timers.Armed(in.timerKey); !ok || !at.Equal(in.sm.Deadline()) {
		t.Errorf("the timer heap has %v (armed %v), the state machine's Master_Down_Timer is at %v: the takeover's Adver_Timer was armed after the step-down", at.Sub(t0), ok, in.sm.Deadline().Sub(t0))
	}
	if held := h.heldList(); len(held) != 0 {
		t.Errorf("%d addresses left on the interface after the step-down: %v", len(held), held[:min(len(held), 5)])
	}
	adds := 0
	for _, e := range h.events {
		if strings.HasPrefix(e, "add ") {
			adds++
		}
	}
	if want := (n + holdChunk - 1) / holdChunk; adds >= want {
		t.Errorf("%d Holds, want fewer than the full takeover's %d: it went on adding after it stepped down:\n%s", adds, want, strings.Join(h.events, "\n"))
	}
	if len(h.announced) != 0 {
		t.Errorf("%d announcements after a takeover given up", len(h.announced))
	}
	if got := publishedStates(d); got != "VI_1=BACKUP" {
		t.Errorf("published %s", got)
	}
}

// TestPendingTakeoverDroppedOnABetterMaster: two routers take over in one wake-up; while
// the first adds its addresses, the second hears a better master. The second steps down
// there and then, and its takeover's remaining actions (its VIP, its announcement, its
// Adver_Timer), made before the advert was read, are not carried out after it.
func TestPendingTakeoverDroppedOnABetterMaster(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 101, manyVIPs(40)...), testInstance("VI_2", 2, 100, "10.99.0.200/24"))
	vi2 := d.byName["VI_2"]
	h.events = nil
	h.onHold = arriveOnCall(t, d, h, 2, false, peerAdvert(t, 2, 150, "10.99.0.200/24"))
	d.fireTimers(takeover(100)) // both Master_Down_Timers due in one wake-up
	h.onHold = nil
	if got := publishedStates(d); got != "VI_1=MASTER VI_2=BACKUP" {
		t.Errorf("published %s, want VI_2 back under the better master", got)
	}
	if vi2.sm.Timer() != vrrp.TimerMasterDown {
		t.Errorf("VI_2's timer is %v", vi2.sm.Timer())
	}
	if at, ok := d.timers.Armed(vi2.timerKey); !ok || !at.Equal(vi2.sm.Deadline()) {
		t.Errorf("the heap has VI_2's timer at %v (armed %v), its state machine at %v: the stale takeover re-armed it", at.Sub(t0), ok, vi2.sm.Deadline().Sub(t0))
	}
	for _, e := range h.events {
		if strings.Contains(e, "10.99.0.200/24") && strings.HasPrefix(e, "add ") {
			t.Errorf("VI_2's VIP was added after it stepped down: %q", e)
		}
	}
	for _, a := range h.announced {
		if slices.Contains(a.addrs, netip.MustParseAddr("10.99.0.200")) {
			t.Errorf("VI_2's VIP was announced after it stepped down")
		}
	}
	if slices.Contains(h.heldList(), "10.99.0.200/24 dev eth0") {
		t.Error("VI_2's VIP is on the interface")
	}
}

// TestReloadDefersMastersPackets: a reload reads between the chunks of its slow work
// too, but steps no master down there (it reconfigures instances one by one): a better
// master's advert for VI_1, read while the reload removes VI_2's forty addresses, is
// handled when the reload ends, and VI_1 steps down then.
func TestReloadDefersMastersPackets(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	keep := testInstance("VI_1", 1, 100, "10.99.0.200/24")
	startDaemon(t, d, keep, testInstance("VI_2", 2, 100, manyVIPs(40)...))
	advance(d, takeover(100))
	if got := publishedStates(d); got != "VI_1=MASTER VI_2=MASTER" {
		t.Fatalf("before the reload: %s", got)
	}
	h.events = nil
	h.onRelease = arriveOnCall(t, d, h, 2, true, peerAdvert(t, 1, 150, "10.99.0.200/24"))
	if err := d.reload(&config.Config{Instances: []config.Instance{keep}}, takeover(100).Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	h.onRelease = nil
	if got := publishedStates(d); got != "VI_1=BACKUP" {
		t.Errorf("after the reload: %s, want VI_1 stepped down to the better master", got)
	}
	arrived, lastRemove, stepDown := slices.Index(h.events, "adverts arrived"), -1, -1
	for i, e := range h.events {
		switch {
		case strings.HasPrefix(e, "remove ") && strings.Contains(e, "10.99.0.200/24"):
			stepDown = i
		case strings.HasPrefix(e, "remove "):
			lastRemove = i
		}
	}
	if arrived < 0 || lastRemove < arrived || stepDown < lastRemove {
		t.Errorf("events: advert arrived at %d, VI_2's last removal at %d, VI_1's step-down at %d; want the step-down after the reload's work:\n%s",
			arrived, lastRemove, stepDown, strings.Join(h.events, "\n"))
	}
	if len(d.deferred) != 0 {
		t.Errorf("%d packets still deferred", len(d.deferred))
	}
}

// TestOwnAdvertsDoNotStopTheAdd: a master's own Adver_Timer, falling due between the
// chunks of its hundreds of excluded VIPs (10 ms adverts), sends its advert there and
// the add goes on to the last address (a stale-list check that counted every action list
// stopped it after the first advert: the failover lab then saw the interface check put
// back hundreds "taken off the interface", each announced again).
func TestOwnAdvertsDoNotStopTheAdd(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.AdvertInterval = 10 * time.Millisecond
	const n = 300
	ic.ExcludedVIPs = excludedRun(n)
	startDaemon(t, d, ic)
	h.events = nil
	h.addDelay = 2 * time.Millisecond // 38 chunks: about 76 ms, seven of its intervals
	advance(d, t0.Add(vrrp.MasterDownInterval(100, 10*time.Millisecond)))
	in := d.byName["VI_1"]
	if in.sm.State() != vrrp.StateMaster {
		t.Fatalf("VI_1 is %v", in.sm.State())
	}
	adverts := 0
	for _, e := range h.events {
		if e == "advert vrid 1 priority 100" {
			adverts++
		}
	}
	if adverts < 2 {
		t.Errorf("%d adverts during the takeover, want its own between the chunks too", adverts)
	}
	if held := len(h.heldList()); held != n+1 {
		t.Errorf("%d addresses held after the takeover, want all %d", held, n+1)
	}
}

// manyVIPs are n IPv4 VIPs from 10.99.0.100/24 on.
func manyVIPs(n int) []string {
	var vips []string
	for i := range n {
		vips = append(vips, fmt.Sprintf("10.99.0.%d/24", 100+i))
	}
	return vips
}

// arriveOnCall returns a hook for fakeHost.onHold or onRelease that, at its nth call, has
// the reader hand pkts over (waiting until the batch is queued for the loop) and notes
// "adverts arrived" in h.events when note is set.
func arriveOnCall(t *testing.T, d *Daemon, h *fakeHost, nth int, note bool, pkts ...transport.Packet) func() {
	calls := 0
	return func() {
		if calls++; calls != nth {
			return
		}
		h.socks[0].in <- pkts
		for len(d.batches) == 0 {
			time.Sleep(time.Millisecond) // the reader hands it over
		}
		if note {
			h.events = append(h.events, "adverts arrived")
		}
	}
}

// TestTakeoverAdvertisesBetweenItsOwnChunks: a router taking over with forty addresses at
// 10 ms adverts sends its own adverts between the chunks of its own add, not only once
// the last address is in: its backups wait three intervals, and a loaded host's add of a
// shared router's addresses lasts longer.
func TestTakeoverAdvertisesBetweenItsOwnChunks(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, manyVIPs(40)...)
	ic.AdvertInterval = 10 * time.Millisecond
	startDaemon(t, d, ic)
	h.events = nil
	h.addDelay = 6 * time.Millisecond // five chunks: 30 ms, three of its intervals
	advance(d, t0.Add(vrrp.MasterDownInterval(100, 10*time.Millisecond)))
	firstAdd, between := advertsAmong(h.events, "add ", "advert vrid 1 priority 100")
	if firstAdd < 0 || between == 0 {
		t.Errorf("no advert of its own between the chunks of its takeover:\n%s", strings.Join(h.events, "\n"))
	}
	// And it goes on advertising: the list's closing ArmTimer, carried out after the
	// adverts between the chunks moved the deadline, must not set the heap back.
	in := d.byName["VI_1"]
	at, ok := d.timers.Armed(in.timerKey)
	if !ok || !at.Equal(in.sm.Deadline()) {
		t.Fatalf("after the takeover the heap has %v (armed %v), the state machine's Adver_Timer is at %v", at.Sub(t0), ok, in.sm.Deadline().Sub(t0))
	}
	h.events, h.addDelay = nil, 0
	advance(d, in.sm.Deadline().Add(45*time.Millisecond))
	if n := strings.Count(strings.Join(h.events, "\n"), "advert vrid 1 priority 100"); n < 4 {
		t.Errorf("%d adverts in the 45 ms after the takeover at 10 ms adverts, want 5", n)
	}
}

// TestBreakFirstHoldsExcludedBack (issue 31's join lab): a break-first preemption (the
// Kubernetes mode's) adds none of the router's addresses at the takeover, its excluded
// VIPs included, and all of them when its Adver_Timer adds the VIPs, HandoffDelay later:
// the excluded ones used to go on at once, beside the preempted master's.
func TestBreakFirstHoldsExcludedBack(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.BreakFirstPreempt = true
	ic.ExcludedVIPs = excludedRun(20)
	startDaemon(t, d, ic)
	in := d.byName["VI_1"]
	// A lower-priority master advertises: VI_1 lets its Master_Down_Timer run out, then
	// preempts break-first.
	heard := t0.Add(time.Second)
	p := peerAdvert(t, 1, 100, "10.99.0.100/24")
	d.handleBatch(&batch{conn: in.conn, tc: in.conn.tc, pkts: []transport.Packet{p}, n: 1}, heard)
	takeoverAt := in.sm.Deadline()
	advance(d, takeoverAt)
	if in.sm.State() != vrrp.StateMaster || !in.sm.VIPsPending() {
		t.Fatalf("after the Master_Down_Timer: %v, VIPs pending %v; want a break-first MASTER", in.sm.State(), in.sm.VIPsPending())
	}
	if held := h.heldList(); len(held) != 0 {
		t.Errorf("at the break-first takeover %d addresses are on the interface, want none yet: %v", len(held), held[:min(len(held), 3)])
	}
	advance(d, takeoverAt.Add(vrrp.HandoffDelay(ic.AdvertInterval)+time.Duration(len(ic.VIPs)+len(ic.ExcludedVIPs))*vrrp.HandoffPerAddress))
	if held := len(h.heldList()); held != 21 {
		t.Errorf("after the handoff delay %d addresses are held, want the VIP and its 20 excluded", held)
	}
}

// TestTakeoverAnnouncesBeforeItsExcludedVIPs: a takeover adds its advertised VIPs,
// announces, and then adds its excluded VIPs; its own adverts sent between the chunks
// (10 ms adverts) do not add the excluded ones first, which held the failover lab's
// announcements back until all of a shared router's addresses were in.
func TestTakeoverAnnouncesBeforeItsExcludedVIPs(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, manyVIPs(40)...)
	ic.AdvertInterval = 10 * time.Millisecond
	for i := range 40 {
		ic.ExcludedVIPs = append(ic.ExcludedVIPs, config.VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf("10.99.1.%d/32", 1+i)), Dev: "eth0"})
	}
	startDaemon(t, d, ic)
	h.addDelay = 6 * time.Millisecond
	announcedAtExcluded := -1
	h.onHold = func() {
		if announcedAtExcluded < 0 && strings.Contains(h.events[len(h.events)-1], "10.99.1.") {
			announcedAtExcluded = len(h.announced)
		}
	}
	advance(d, t0.Add(vrrp.MasterDownInterval(100, 10*time.Millisecond)))
	if announcedAtExcluded != 1 {
		t.Errorf("%d announcements when the first excluded VIP went on, want the takeover's one first", announcedAtExcluded)
	}
	if held := len(h.heldList()); held != 80 {
		t.Errorf("%d addresses held after the takeover, want 80", held)
	}
}

// TestBatchOfStepDownsReadsOnBetweenChunks (issue 31's leave lab): one batch carries a
// better master's advert for each of two masters here, each with 40 addresses (five
// chunks). The first steps down and releases its addresses; the second's advert, next in
// the same batch, is handled between the first's chunks, not after the last: its new
// master adds its addresses a handoff delay after its own advert, and a host that goes
// on holding them for the whole of another router's release holds them beside it.
func TestBatchOfStepDownsReadsOnBetweenChunks(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	const n = 40
	one, two := manyVIPs(n), make([]string, 0, n)
	for i := range n {
		two = append(two, fmt.Sprintf("10.99.1.%d/24", 100+i))
	}
	startDaemon(t, d, testInstance("VI_1", 1, 100, one...), testInstance("VI_2", 2, 100, two...))
	advance(d, takeover(100))
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=MASTER" {
		t.Fatalf("before the better masters: %s", s)
	}
	h.events = nil
	h.onRelease = func() { time.Sleep(time.Millisecond) }
	in := d.byName["VI_1"]
	pkts := []transport.Packet{peerAdvert(t, 1, 150, one...), peerAdvert(t, 2, 150, two...)}
	d.handleBatch(&batch{conn: in.conn, tc: in.conn.tc, pkts: pkts, n: len(pkts)}, takeover(100).Add(100*time.Millisecond))
	if s := publishedStates(d); s != "VI_1=BACKUP VI_2=BACKUP" {
		t.Fatalf("after the better masters: %s", s)
	}
	lastOne, firstTwo := -1, -1
	for i, e := range h.events {
		if !strings.HasPrefix(e, "remove ") {
			continue
		}
		if strings.Contains(e, "10.99.0.") {
			lastOne = i
		}
		if strings.Contains(e, "10.99.1.") && firstTwo < 0 {
			firstTwo = i
		}
	}
	if lastOne < 0 || firstTwo < 0 {
		t.Fatalf("removes of VI_1 up to event %d, of VI_2 from %d:\n%s", lastOne, firstTwo, strings.Join(h.events, "\n"))
	}
	if firstTwo > lastOne {
		t.Errorf("VI_2 stepped down after all of VI_1's %d addresses were released (events %d, %d): the rest of the batch waited for the release:\n%s",
			n, lastOne, firstTwo, strings.Join(h.events, "\n"))
	}
	if held := h.heldList(); len(held) != 0 {
		t.Errorf("%d addresses left: %v", len(held), held[:min(len(held), 5)])
	}
}

// TestHandoffDueWithOtherAdvertsSendsThemFirst (issue 31's leave lab): a break-first
// master's VIPs fall due (its handoff, hundreds of addresses) in the same collection of
// due adverts as another master's advert. The other's advert goes first, and its timer is
// back in the heap before the add begins, so it goes on advertising between the add's
// chunks; handled in collection order, it waited out the whole add, popped from the heap,
// and the lab's survivor went 664 ms without advertising two routers.
func TestHandoffDueWithOtherAdvertsSendsThemFirst(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.BreakFirstPreempt = true
	ic.ExcludedVIPs = excludedRun(100)
	// VI_2 (500 ms adverts) takes over at 1.785 s and advertises at 3.785 s: 20 ms after
	// VI_1's VIPs fall due (its takeover at 3.414 s, then 250 ms and 101 addresses).
	other := testInstance("VI_2", 2, 110, "10.99.0.101/24")
	other.AdvertInterval = 500 * time.Millisecond
	startDaemon(t, d, ic, other)
	in := d.byName["VI_1"]
	d.handleBatch(&batch{conn: in.conn, tc: in.conn.tc, pkts: []transport.Packet{peerAdvert(t, 1, 100, "10.99.0.100/24")}, n: 1}, t0.Add(time.Second))
	takeoverAt := takeover(150)
	advance(d, takeoverAt)
	if !in.sm.VIPsPending() {
		t.Fatalf("VI_1 %v, VIPs pending %v: want a break-first MASTER", in.sm.State(), in.sm.VIPsPending())
	}
	due := in.sm.Deadline()
	if want := takeoverAt.Add(vrrp.HandoffDelay(time.Second) + 101*vrrp.HandoffPerAddress); !due.Equal(want) {
		t.Fatalf("VI_1's VIPs due at %v, want %v", due.Sub(t0), want.Sub(t0))
	}
	next, ok := d.timers.Armed(d.byName["VI_2"].timerKey)
	if !ok || !next.After(due) || next.Sub(due) > 50*time.Millisecond {
		t.Fatalf("VI_2's next advert at %v (armed %v), want within its slack after %v", next.Sub(t0), ok, due.Sub(t0))
	}
	advance(d, due.Add(-time.Millisecond))
	h.events = nil
	h.addDelay = 2 * time.Millisecond
	d.fireTimers(due)
	other2, firstAdd := -1, -1
	for i, e := range h.events {
		if e == "advert vrid 2 priority 110" && other2 < 0 {
			other2 = i
		}
		if strings.HasPrefix(e, "add ") && firstAdd < 0 {
			firstAdd = i
		}
	}
	if other2 < 0 || firstAdd < 0 || other2 > firstAdd {
		t.Errorf("VI_2's advert at event %d, VI_1's first add at %d: the advert must not wait for the handoff's addresses:\n%s", other2, firstAdd, strings.Join(h.events, "\n"))
	}
	if held := len(h.heldList()); held != 102 {
		t.Errorf("%d addresses held after the handoff, want VI_1's 101 and VI_2's VIP", held)
	}
}

// TestSteppedDownAdvertisesWhileItReleases (issue 31's join lab): in the Kubernetes mode a
// master that steps down for a better one advertises its own priority between the chunks
// of its release, so that the better master, which waits to add the addresses, waits on
// until they are gone; standalone it stays silent, as RFC 5798's backups do.
func TestSteppedDownAdvertisesWhileItReleases(t *testing.T) {
	for _, k8s := range []bool{true, false} {
		h := newFakeHost()
		d := newRecordingDaemon(t, h)
		const n = 40 // five chunks
		vips := manyVIPs(n)
		ic := testInstance("VI_1", 1, 100, vips...)
		ic.AdvertInterval = 100 * time.Millisecond
		ic.BreakFirstPreempt = k8s
		startDaemon(t, d, ic)
		advance(d, t0.Add(vrrp.MasterDownInterval(100, ic.AdvertInterval)))
		in := d.byName["VI_1"]
		if in.sm.State() != vrrp.StateMaster {
			t.Fatalf("VI_1 %v, want MASTER", in.sm.State())
		}
		h.events = nil
		h.onRelease = func() { time.Sleep(10 * time.Millisecond) } // five chunks, 50 ms: two quarter intervals
		d.handleBatch(&batch{conn: in.conn, tc: in.conn.tc, pkts: []transport.Packet{peerAdvert(t, 1, 150, vips...)}, n: 1}, t0.Add(5*time.Second))
		if in.sm.State() != vrrp.StateBackup {
			t.Fatalf("after the better master: %v", in.sm.State())
		}
		_, between := advertsAmong(h.events, "remove ", "advert vrid 1 priority 100")
		if k8s && between == 0 {
			t.Errorf("Kubernetes mode: no advert of its own priority between the chunks of its release:\n%s", strings.Join(h.events, "\n"))
		}
		if !k8s && between != 0 {
			t.Errorf("standalone: %d adverts sent as a backup during the release:\n%s", between, strings.Join(h.events, "\n"))
		}
		if held := h.heldList(); len(held) != 0 {
			t.Errorf("%d addresses left after the release", len(held))
		}
	}
}

// excludedRun is n excluded VIPs on eth0, 10.99.1.1/32 up (250 to a /24).
func excludedRun(n int) []config.VIP {
	var out []config.VIP
	for i := range n {
		out = append(out, config.VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf("10.99.%d.%d/32", 1+i/250, 1+i%250)), Dev: "eth0"})
	}
	return out
}

// advertsAmong counts the events equal to advert between the first and the last event
// that starts with edge (a run of adds or removes), and returns where that run began
// (-1: none).
func advertsAmong(events []string, edge, advert string) (first, between int) {
	first, last := -1, -1
	for i, e := range events {
		if strings.HasPrefix(e, edge) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	for _, e := range events[max(first, 0):max(last, 0)] {
		if e == advert {
			between++
		}
	}
	return first, between
}
