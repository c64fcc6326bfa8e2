package garp

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// lazyAnnouncer is an Announcer on recorders with the given pacing: no socket, no root.
func lazyAnnouncer(t *testing.T, interval time.Duration) (*Announcer, *frameRecorder, *frameRecorder) {
	t.Helper()
	s := Defaults()
	s.Interval, s.NAInterval = interval, interval
	arp, na := &frameRecorder{}, &frameRecorder{}
	ifi := &net.Interface{Index: 7, Name: "fake0", HardwareAddr: capturedMAC}
	a := start(ifi, s, func(err error) { t.Errorf("send: %v", err) }, arp, na, newRouterFlag(&fakeForwarding{}))
	t.Cleanup(func() { a.Close() })
	return a, arp, na
}

// TestAnnounceHugeBurstIsLazy: 2^31-1 rounds (the largest garp_master_repeat keepalived
// reads) queue in constant time and memory: Announce returns at once, and Cancel ends
// them. The messages were made as they were sent, never all at once.
func TestAnnounceHugeBurstIsLazy(t *testing.T) {
	a, _, _ := lazyAnnouncer(t, 10*time.Millisecond)
	vips := []netip.Addr{capturedV4, capturedV6}
	start := time.Now()
	a.Announce(vips, 1<<31-1)
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Announce of 2^31-1 rounds took %v", d)
	}
	a.mu.Lock()
	jobs, pending := len(a.lane4.jobs)+len(a.lane6.jobs), a.pending
	a.mu.Unlock()
	// The first of each family went out from Announce (TestAnnounceFirstFromCaller).
	if jobs != 2 || pending != 2*(1<<31-1)-2 {
		t.Errorf("%d jobs, %d pending; want 2 jobs for %d messages", jobs, pending, 2*(1<<31-1)-2)
	}
	time.Sleep(35 * time.Millisecond)
	a.Cancel(vips)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := a.flush(ctx); err != nil {
		t.Fatalf("flush after Cancel: %v", err)
	}
	// Paced at 10 ms per family: about four of each in 35 ms, never hundreds.
	if c := a.counts(); c.GARPs < 1 || c.GARPs > 10 || c.NAs < 1 || c.NAs > 10 {
		t.Errorf("sent %+v in 35 ms at 10 ms pacing", c)
	}
}

// TestAnnounceFirstFromCaller: on an idle Announcer the first GARP and the first NA of a
// burst are written before Announce returns, by the caller (the lanes hand a message to
// one sender only, so the goroutine cannot have sent these), and the rest follow from the
// sender goroutine. A message whose pacing slot has not come is left to the goroutine.
func TestAnnounceFirstFromCaller(t *testing.T) {
	a, arp, na := lazyAnnouncer(t, 50*time.Millisecond)
	x, y := netip.MustParseAddr("10.99.0.150"), netip.MustParseAddr("10.99.0.151")
	a.Announce([]netip.Addr{x, capturedV6, y}, 1)
	if g, n := len(arp.take()), len(na.take()); g != 1 || n != 1 {
		t.Fatalf("written when Announce returned: %d GARPs, %d NAs; want the first of each", g, n)
	}
	// y's GARP waits for its slot, 50 ms after x's, in the goroutine.
	if err := a.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if g := arp.take(); len(g) != 1 || !bytes.Contains(g[0], y.AsSlice()) {
		t.Fatalf("after the flush: %d GARPs, want y's", len(g))
	}
	// The ARP slot is 50 ms away again: a new burst's GARP is not the caller's.
	a.Announce([]netip.Addr{x}, 1)
	if g := arp.take(); len(g) != 0 {
		t.Errorf("a GARP inside the pacing interval was written by Announce: %d", len(g))
	}
	if err := a.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if g := arp.take(); len(g) != 1 {
		t.Errorf("the paced GARP: %d sent, want 1", len(g))
	}
}

// TestAnnounceRoundsInOrder: with no pacing every round goes out whole, in the order
// given, and a partial Cancel keeps the others' messages.
func TestAnnounceRoundsInOrder(t *testing.T) {
	a, arp, _ := lazyAnnouncer(t, 0)
	x, y := netip.MustParseAddr("10.99.0.150"), netip.MustParseAddr("10.99.0.151")
	a.Announce([]netip.Addr{x, y}, 3)
	if err := a.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got []netip.Addr
	for _, f := range arp.take() {
		ip, _ := netip.AddrFromSlice(f[28:32]) // ARP sender protocol address
		got = append(got, ip)
	}
	if want := []netip.Addr{x, y, x, y, x, y}; !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}

	// Paced: cancel one of two addresses mid-burst; only the other goes on.
	slow, arp2, _ := lazyAnnouncer(t, 20*time.Millisecond)
	slow.Announce([]netip.Addr{x, y}, 3)
	time.Sleep(10 * time.Millisecond) // x of round 1 is out, y waits
	slow.Cancel([]netip.Addr{x})
	if err := slow.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, f := range arp2.take() {
		ip, _ := netip.AddrFromSlice(f[28:32])
		got = append(got, ip)
	}
	if want := []netip.Addr{x, y, y, y}; !slices.Equal(got, want) {
		t.Errorf("after cancelling %v mid-burst: sent %v, want %v", x, got, want)
	}
}
