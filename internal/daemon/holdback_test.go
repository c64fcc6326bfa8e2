package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/conflict"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestReloadHoldBackDuration: the hold-back is the break-first takeover's handoff delay
// (one interval, at most 250 ms), never under 50 ms.
func TestReloadHoldBackDuration(t *testing.T) {
	for _, c := range []struct{ interval, want time.Duration }{
		{10 * time.Millisecond, 50 * time.Millisecond},
		{40 * time.Millisecond, 50 * time.Millisecond},
		{100 * time.Millisecond, 100 * time.Millisecond},
		{200 * time.Millisecond, 200 * time.Millisecond},
		{300 * time.Millisecond, 250 * time.Millisecond},
		{time.Second, 250 * time.Millisecond},
		{3 * time.Second, 250 * time.Millisecond},
	} {
		if got := reloadHoldBack(c.interval); got != c.want {
			t.Errorf("reloadHoldBack(%v) = %v, want %v", c.interval, got, c.want)
		}
	}
}

// twoMasters starts A (VRID 1: x, y) and B (VRID 2: b0) on h, both master, and returns
// when they are.
func twoMasters(t *testing.T, h *fakeHost) (*Daemon, time.Time) {
	t.Helper()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("A", 1, 100, hbX, hbY), testInstance("B", 2, 100, hbB0))
	now := takeover(100)
	advance(d, now)
	for _, name := range []string{"A", "B"} {
		if s := snapOf(t, d, name); s.State != vrrp.StateMaster {
			t.Fatalf("%s is %v, want MASTER", name, s.State)
		}
	}
	return d, now
}

const (
	hbX, hbY, hbB0 = "10.99.0.100/24", "10.99.0.102/24", "10.99.0.101/24"
	hbN, hbR       = "10.99.0.110/24", "10.99.0.111/24" // new to the node
)

func eth0VIP(p string) vip.VIP { return vip.VIP{Prefix: netip.MustParsePrefix(p), Dev: "eth0"} }

// TestReloadHoldsBackOnlyAddressesNewToTheNode: one reload moves X from A to B (both
// master here) and gives B N, which no instance here held. X is B's at once (the bridge,
// A's release is not the last), N only reloadHoldBack later: not before, not re-added meanwhile by the
// VIP check, not handed to the conflict detector nor announced before it is on. A second
// reload meanwhile that keeps N does not restart its wait.
func TestReloadHoldsBackOnlyAddressesNewToTheNode(t *testing.T) {
	h := newFakeHost()
	d, now := twoMasters(t, h)
	now = now.Add(10 * time.Second) // the announcement bursts are over
	advance(d, now)
	calls, announced := len(h.vipCalls), len(h.announced)
	a1, b1 := testInstance("A", 1, 100, hbY), testInstance("B", 2, 100, hbB0, hbX, hbN)
	if err := d.reload(&config.Config{Instances: []config.Instance{a1, b1}}, now); err != nil {
		t.Fatal(err)
	}
	hb := reloadHoldBack(b1.AdvertInterval)
	for _, c := range h.vipCalls[calls:] {
		if strings.Contains(c, hbN) {
			t.Errorf("reload: VIP call %q; want N not added yet", c)
		}
	}
	if !h.held[eth0VIP(hbX)] || h.held[eth0VIP(hbN)] {
		t.Fatalf("after the reload: X held %v, N held %v; want X at once, N held back", h.held[eth0VIP(hbX)], h.held[eth0VIP(hbN)])
	}
	d.checkVIPs(now) // a netlink event's check must not "put back" what waits on purpose
	if h.held[eth0VIP(hbN)] {
		t.Fatal("the VIP check added N during its hold-back")
	}
	for _, tg := range h.conflicts.last() {
		if tg.Addr == eth0VIP(hbN).Prefix.Addr() {
			t.Errorf("N handed to the conflict detector before it is on")
		}
	}
	for _, a := range h.announced[announced:] {
		if slices.Contains(a.addrs, eth0VIP(hbN).Prefix.Addr()) {
			t.Errorf("N announced before it is on: %+v", a)
		}
	}

	// Halfway, a reload that keeps N (B's priority changes) leaves its deadline alone.
	b2 := b1
	b2.Priority = 110
	if err := d.reload(&config.Config{Instances: []config.Instance{a1, b2}}, now.Add(hb/2)); err != nil {
		t.Fatal(err)
	}
	advance(d, now.Add(hb-time.Millisecond))
	if h.held[eth0VIP(hbN)] {
		t.Fatalf("N added %v after the reload, before its hold-back of %v", hb-time.Millisecond, hb)
	}
	announced = len(h.announced)
	advance(d, now.Add(hb))
	if !h.held[eth0VIP(hbN)] || h.vipCalls[len(h.vipCalls)-1] != "add "+hbN+" dev eth0" {
		t.Fatalf("N not added at its hold-back (%v): last call %q", hb, h.vipCalls[len(h.vipCalls)-1])
	}
	if len(h.announced) == announced || !slices.Contains(h.announced[announced].addrs, eth0VIP(hbN).Prefix.Addr()) {
		t.Errorf("N not announced when added: %+v", h.announced[announced:])
	}
	if !slices.ContainsFunc(h.conflicts.last(), func(tg conflict.Target) bool { return tg.Addr == eth0VIP(hbN).Prefix.Addr() }) {
		t.Errorf("N not handed to the conflict detector once on")
	}
}

// TestReloadHoldBackCancelled: an address held back is never added, nor released, when
// the next reload removes it or the instance leaves master before its time.
func TestReloadHoldBackCancelled(t *testing.T) {
	h := newFakeHost()
	d, now := twoMasters(t, h)
	a, b := testInstance("A", 1, 100, hbX, hbY), testInstance("B", 2, 100, hbB0, hbN)
	hb := reloadHoldBack(b.AdvertInterval)
	calls := len(h.vipCalls)
	if err := d.reload(&config.Config{Instances: []config.Instance{a, b}}, now); err != nil {
		t.Fatal(err)
	}
	// Removed again within the hold-back.
	b0 := testInstance("B", 2, 100, hbB0)
	if err := d.reload(&config.Config{Instances: []config.Instance{a, b0}}, now.Add(hb/2)); err != nil {
		t.Fatal(err)
	}
	advance(d, now.Add(2*hb))
	for _, c := range h.vipCalls[calls:] {
		if strings.Contains(c, hbN) {
			t.Errorf("N removed within its hold-back: VIP call %q, want none", c)
		}
	}

	// B leaves master within the hold-back: a higher-priority peer.
	now = now.Add(2 * hb)
	calls = len(h.vipCalls)
	if err := d.reload(&config.Config{Instances: []config.Instance{a, b}}, now); err != nil {
		t.Fatal(err)
	}
	p := peerAdvert(t, 2, 150, hbB0, hbN)
	d.handlePacket(d.byName["B"].conn, &p, now.Add(hb/2))
	if s := snapOf(t, d, "B"); s.State != vrrp.StateBackup {
		t.Fatalf("B is %v after a higher priority's advert, want BACKUP", s.State)
	}
	advance(d, now.Add(2*hb))
	for _, c := range h.vipCalls[calls:] {
		if strings.Contains(c, hbN) {
			t.Errorf("B left master within N's hold-back: VIP call %q, want none", c)
		}
	}
	if h.held[eth0VIP(hbN)] || len(d.byName["B"].holdBack) != 0 {
		t.Errorf("N held %v, still waiting %v; want neither", h.held[eth0VIP(hbN)], d.byName["B"].holdBack)
	}
}

// TestTakeoverIsNotHeldBack: a backup given a new address by a reload adds it the moment
// it takes over, as before: only a master's reload additions wait.
func TestTakeoverIsNotHeldBack(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("B", 2, 100, hbB0))
	if err := d.reload(&config.Config{Instances: []config.Instance{testInstance("B", 2, 100, hbB0, hbN)}}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	at := takeover(100)
	advance(d, at)
	if s := snapOf(t, d, "B"); s.State != vrrp.StateMaster || !h.held[eth0VIP(hbN)] {
		t.Errorf("at its takeover B is %v, N held %v; want MASTER holding N at once", s.State, h.held[eth0VIP(hbN)])
	}
}

// TestReloadHoldBackOnTheClock runs the real loop and timer thread on the real clock with
// the VIPs of a real vip.Manager in a lab namespace: one reload moves X between two
// masters here and gives three masters (20 ms, 200 ms and 1 s adverts) an address new to
// the node each. X never leaves the interface and is B's before Reload returns; each new
// address appears no sooner than its hold-back after Reload was called (the monitor reads
// events late, never early, so a late read can only lengthen what it measures), and
// within a generous bound. The figures are logged.
func TestReloadHoldBackOnTheClock(t *testing.T) {
	h, d := labDaemon(t)
	x := netip.MustParsePrefix(hbX)
	ivals := []time.Duration{20 * time.Millisecond, 200 * time.Millisecond, time.Second}
	ics := []config.Instance{testInstance("A", 1, 100, hbX, hbY)}
	for i, iv := range ivals {
		ic := testInstance(fmt.Sprintf("B%d", i+1), uint8(2+i), 100, fmt.Sprintf("10.99.0.%d/24", 120+i))
		ic.AdvertInterval = iv
		ics = append(ics, ic)
	}
	ics[0].AdvertInterval = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, &config.Config{Instances: slices.Clone(ics)}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !allMaster(d) {
		if time.Now().After(deadline) {
			t.Fatalf("not every instance is master after 30 s: %+v", d.Snapshot().Instances)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mon, settle := watchAddrs(t, h)

	next := slices.Clone(ics)
	next[0].VIPs = next[0].VIPs[1:]                                                       // X leaves A ...
	next[2].VIPs = append(slices.Clone(next[2].VIPs), config.VIP{Prefix: x, Dev: "eth0"}) // ... for B2
	fresh := make([]netip.Prefix, len(ivals))
	for i := range ivals {
		fresh[i] = netip.MustParsePrefix(fmt.Sprintf("10.99.0.%d/24", 130+i))
		next[1+i].VIPs = append(slices.Clone(next[1+i].VIPs), config.VIP{Prefix: fresh[i], Dev: "eth0"})
	}
	start := time.Now()
	if err := d.Reload(ctx, &config.Config{Instances: next}); err != nil {
		t.Fatal(err)
	}
	if on, err := h.HasAddr(x); err != nil || !on {
		t.Errorf("X moved between two masters here: on eth0 %v, %v right after the reload; want it never off", on, err)
	}
	for i, p := range fresh {
		hb := reloadHoldBack(ivals[i])
		var at time.Time
		poll := time.Now().Add(30 * time.Second)
		for at = mon.firstAdded(p.Addr()); at.IsZero(); at = mon.firstAdded(p.Addr()) {
			if time.Now().After(poll) {
				t.Fatalf("%v (adverts every %v) not added 30 s after the reload", p, ivals[i])
			}
			time.Sleep(time.Millisecond)
		}
		took := at.Sub(start)
		t.Logf("adverts every %v: hold-back %v, address on after %v", ivals[i], hb, took.Round(100*time.Microsecond))
		if took < hb {
			t.Errorf("%v (adverts every %v) on %v after the reload, before its hold-back of %v", p, ivals[i], took, hb)
		}
		if took > hb+2*time.Second {
			t.Errorf("%v (adverts every %v) on %v after the reload, long after its hold-back of %v", p, ivals[i], took, hb)
		}
	}
	settle()
	if n := mon.deletions(x.Addr()); n != 0 {
		t.Errorf("X moved between two masters here deleted %d time(s), want never", n)
	}
}

func allMaster(d *Daemon) bool {
	s := d.Snapshot()
	if len(s.Instances) == 0 {
		return false
	}
	for _, in := range s.Instances {
		if in.State != vrrp.StateMaster {
			return false
		}
	}
	return true
}

// TestReloadHoldBackInLab is the hold-back on a real vip.Manager in a lab namespace, on
// the loop's virtual clock, with the namespace's address events as the witness: (a) an
// address new to the node is not on the interface after the reload nor 1 ms before its
// hold-back, and is at it; (b) an address moving between two masters here in the same
// reload is never deleted and is on at once; (c) an address a reload adds and the next,
// within the hold-back, removes never appears.
func TestReloadHoldBackInLab(t *testing.T) {
	h, d := labDaemon(t)
	x, n, r := netip.MustParsePrefix(hbX), netip.MustParsePrefix(hbN), netip.MustParsePrefix(hbR)
	a, b := testInstance("A", 1, 100, hbX, hbY), testInstance("B", 2, 100, hbB0)
	startDaemon(t, d, a, b)
	now := takeover(100)
	advance(d, now)
	mon, settle := watchAddrs(t, h)
	on := func(p netip.Prefix) bool {
		t.Helper()
		ok, err := h.HasAddr(p)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	hb := reloadHoldBack(b.AdvertInterval)

	// (a) and (b)
	now = now.Add(time.Second)
	advance(d, now)
	a1, b1 := testInstance("A", 1, 100, hbY), testInstance("B", 2, 100, hbB0, hbX, hbN)
	if err := d.reload(&config.Config{Instances: []config.Instance{a1, b1}}, now); err != nil {
		t.Fatal(err)
	}
	if !on(x) || on(n) {
		t.Errorf("right after the reload: X on %v, N on %v; want X on (moved here), N held back", on(x), on(n))
	}
	advance(d, now.Add(hb-time.Millisecond))
	settle()
	if on(n) || mon.sawAdded(n.Addr()) {
		t.Errorf("N on %v before its hold-back of %v", hb-time.Millisecond, hb)
	}
	advance(d, now.Add(hb))
	if !on(n) {
		t.Errorf("N not on at its hold-back of %v", hb)
	}
	settle()
	if k := mon.deletions(x.Addr()); k != 0 {
		t.Errorf("X moved between two masters here: deleted %d time(s), want never", k)
	}

	// (c)
	now = now.Add(time.Second)
	advance(d, now)
	b2 := testInstance("B", 2, 100, hbB0, hbX, hbN, hbR)
	if err := d.reload(&config.Config{Instances: []config.Instance{a1, b2}}, now); err != nil {
		t.Fatal(err)
	}
	advance(d, now.Add(hb/2))
	if err := d.reload(&config.Config{Instances: []config.Instance{a1, b1}}, now.Add(hb/2)); err != nil {
		t.Fatal(err)
	}
	advance(d, now.Add(3*hb))
	settle()
	if mon.sawAdded(r.Addr()) || on(r) {
		t.Errorf("R, removed within its hold-back, appeared on eth0")
	}
	if !on(x) || !on(n) {
		t.Errorf("X on %v, N on %v after R came and went; want both on", on(x), on(n))
	}
}
