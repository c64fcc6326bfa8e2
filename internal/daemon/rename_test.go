package daemon

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestReloadRenamesInstanceInPlace: a reload where instance A (VRID 1 on eth0) disappears
// and R appears with the same interface, family and VRID is the same virtual router under
// a new name, as when a shared router adopts a member's per-Service VRID
// (docs/design/router-sharing.md §5). On a real vip.Manager in a lab namespace, with the
// namespace's address events: R is master at once with no transition and no priority-0
// advert (a stop and start would send one, delete X and Y and wait a Master_Down_Interval
// in BACKUP); X and Y are never deleted; N, new to the node, comes after the hold-back;
// the holds moved with the name, so a later rename that drops Y releases it, and removing
// the instance removes the rest.
func TestReloadRenamesInstanceInPlace(t *testing.T) {
	h, d, fh := labDaemonHost(t)
	x, y, n := netip.MustParsePrefix(hbX), netip.MustParsePrefix(hbY), netip.MustParsePrefix(hbN)
	a, b := testInstance("A", 1, 100, hbX, hbY), testInstance("B", 2, 100, hbB0)
	startDaemon(t, d, a, b)
	now := takeover(100)
	advance(d, now)
	if s := snapOf(t, d, "A"); s.State != vrrp.StateMaster {
		t.Fatalf("A is %v, want MASTER", s.State)
	}
	mon, settle := watchAddrs(t, h)
	on := func(p netip.Prefix) bool {
		t.Helper()
		ok, err := h.HasAddr(p)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	transitions := snapOf(t, d, "A").Transitions
	sent := len(fh.sent)
	hb := reloadHoldBack(a.AdvertInterval)

	// A becomes R, with N more.
	now = now.Add(time.Second)
	advance(d, now)
	r := testInstance("R", 1, 100, hbX, hbY, hbN)
	if err := d.reload(&config.Config{Instances: []config.Instance{r, b}}, now); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.byName["A"]; ok {
		t.Error("A still runs after the rename")
	}
	if s := snapOf(t, d, "R"); s.State != vrrp.StateMaster || s.Transitions != transitions {
		t.Errorf("R is %v after %d transition(s), want MASTER after %d (A's)", s.State, s.Transitions, transitions)
	}
	if !on(x) || !on(y) || on(n) {
		t.Errorf("right after the rename: X %v, Y %v, N %v; want X and Y on, N held back", on(x), on(y), on(n))
	}
	advance(d, now.Add(hb-time.Millisecond))
	if on(n) {
		t.Errorf("N on before its hold-back of %v", hb)
	}
	advance(d, now.Add(hb))
	if !on(n) {
		t.Errorf("N not on at its hold-back of %v", hb)
	}
	settle()
	for _, p := range []netip.Prefix{x, y} {
		if k := mon.deletions(p.Addr()); k != 0 {
			t.Errorf("%v deleted %d time(s) by the rename, want never", p, k)
		}
	}
	if p := fh.priorities()[sent:]; slices.Contains(p, 0) {
		t.Errorf("adverts after the rename have priorities %v: a priority 0 is a restart", p)
	}
	advance(d, now.Add(a.AdvertInterval+hb))
	var last []netip.Addr
	for _, s := range fh.sent[sent:] {
		if s.adv.VRID == 1 {
			last = s.adv.Addresses
		}
	}
	if len(last) != 3 {
		t.Errorf("VRID 1's last advert after the hold-back lists %v, want X, Y and N", last)
	}
	if s := snapOf(t, d, "R"); s.State != vrrp.StateMaster || s.Transitions != transitions {
		t.Errorf("R is %v after %d transition(s) at the hold-back, want MASTER after %d", s.State, s.Transitions, transitions)
	}

	// R becomes S without Y: Y goes (it was held under R, not A), X and N stay.
	now = now.Add(time.Second)
	advance(d, now)
	if err := d.reload(&config.Config{Instances: []config.Instance{testInstance("S", 1, 100, hbX, hbN), b}}, now); err != nil {
		t.Fatal(err)
	}
	advance(d, now)
	settle()
	if on(y) || !on(x) || !on(n) {
		t.Errorf("after S dropped Y: X %v, Y %v, N %v; want X and N on, Y off", on(x), on(y), on(n))
	}
	if k := mon.deletions(x.Addr()); k != 0 {
		t.Errorf("X deleted %d time(s) by the second rename, want never", k)
	}

	// S removed: nothing is left held under an old name.
	now = now.Add(time.Second)
	advance(d, now)
	if err := d.reload(&config.Config{Instances: []config.Instance{b}}, now); err != nil {
		t.Fatal(err)
	}
	advance(d, now)
	if on(x) || on(n) {
		t.Errorf("after S was removed: X %v, N %v; want both off", on(x), on(n))
	}
}

// TestReloadRenameNeedsTheSameSlot: a new name on another VRID is a new virtual router:
// the old instance resigns (priority 0) and the new one starts in BACKUP, as before.
func TestReloadRenameNeedsTheSameSlot(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("A", 1, 100, hbX))
	now := takeover(100)
	advance(d, now)
	sent := len(h.sent)
	if err := d.reload(&config.Config{Instances: []config.Instance{testInstance("R", 3, 100, hbX)}}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if p := h.priorities()[sent:]; !slices.Contains(p, 0) {
		t.Errorf("adverts after A left for R on another VRID: %v, want A's priority 0", p)
	}
	if s := snapOf(t, d, "R"); s.State == vrrp.StateMaster {
		t.Errorf("R on a new VRID is MASTER at once, want it started afresh")
	}
}
