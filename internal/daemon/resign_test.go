package daemon

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestResignBreaksFirst: a master that resigns by choice (its instance removed by a
// reload, as on a node excluded from load balancers; or vrrpd stopping) takes its VIPs off
// before its priority-0 advertisement leaves, so no backup's Skew_Time starts while the
// VIPs are still here. Leaving for FAULT keeps the state machine's order.
func TestResignBreaksFirst(t *testing.T) {
	for _, how := range []string{"reload", "shutdown"} {
		t.Run(how, func(t *testing.T) {
			h := newFakeHost()
			d := newTestDaemon(t, h)
			startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
			at := takeover(100)
			advance(d, at)
			if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster {
				t.Fatalf("VI_1 %v, want MASTER", s.State)
			}
			h.events = nil
			now := at.Add(time.Second)
			if how == "reload" {
				if err := d.reload(&config.Config{}, now); err != nil {
					t.Fatal(err)
				}
			} else {
				d.shutdown(now)
			}
			rm := slices.IndexFunc(h.events, func(e string) bool { return strings.HasPrefix(e, "remove 10.99.0.100/24") })
			adv := slices.Index(h.events, "advert vrid 1 priority 0")
			if rm < 0 || adv < 0 || rm > adv {
				t.Fatalf("%s: want the VIP removed, then priority 0 sent:\n%s", how, strings.Join(h.events, "\n"))
			}
		})
	}
}

// TestResignBreakFirstOrder checks the reordering itself: RemoveVIPs moves ahead of the
// priority-0 advertisement, nothing else moves, and sequences without both are kept.
func TestResignBreakFirstOrder(t *testing.T) {
	sc := vrrp.Action{Kind: vrrp.ActionStateChange}
	zero := vrrp.Action{Kind: vrrp.ActionSendAdvert, Priority: 0}
	rm := vrrp.Action{Kind: vrrp.ActionRemoveVIPs}
	stop := vrrp.Action{Kind: vrrp.ActionStopTimer}
	got := resignBreakFirst([]vrrp.Action{sc, zero, rm, stop})
	want := []vrrp.Action{sc, rm, zero, stop}
	if !slices.EqualFunc(got, want, func(a, b vrrp.Action) bool { return a.Kind == b.Kind && a.Priority == b.Priority }) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, acts := range [][]vrrp.Action{{sc, stop}, {sc, zero, stop}, {sc, rm, zero, stop}} {
		in := slices.Clone(acts)
		if out := resignBreakFirst(in); !slices.EqualFunc(out, acts, func(a, b vrrp.Action) bool { return a.Kind == b.Kind }) {
			t.Errorf("%v reordered to %v", acts, out)
		}
	}
}
