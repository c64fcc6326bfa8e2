package garp

import (
	"bytes"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// frameRecorder is a frameConn that keeps what is written to it.
type frameRecorder struct {
	mu     sync.Mutex
	frames [][]byte
}

func (r *frameRecorder) WriteTo(b []byte, _ net.Addr) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frames = append(r.frames, bytes.Clone(b))
	return len(b), nil
}

func (r *frameRecorder) Close() error { return nil }

func (r *frameRecorder) take() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.frames
	r.frames = nil
	return f
}

// fakeForwarding is a forwardingSource the test flips, counting reads.
type fakeForwarding struct {
	on    atomic.Bool
	reads atomic.Int32
}

func (f *fakeForwarding) forwarding() bool {
	f.reads.Add(1)
	return f.on.Load()
}

func (f *fakeForwarding) close() error { return nil }

// fakeClock is the time the router flag sees, set by the test.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// naFlags is the flags byte of the NA frames (Router 0x80, Solicited 0x40, Override 0x20).
func naFlags(t *testing.T, frames [][]byte) []byte {
	t.Helper()
	var out []byte
	for _, f := range frames {
		if len(f) < 59 || f[54] != 136 {
			t.Fatalf("not an NA frame: % x", f)
		}
		out = append(out, f[58])
	}
	return out
}

// recordingAnnouncer is an Announcer whose frames go to recorders, its Router flag read
// from src on clock: no socket, no root.
func recordingAnnouncer(t *testing.T, src forwardingSource, clock *fakeClock, recheck time.Duration) (*Announcer, *frameRecorder) {
	t.Helper()
	ifi := &net.Interface{Index: 7, Name: "fake0", HardwareAddr: capturedMAC}
	rf := newRouterFlag(src)
	rf.now, rf.recheck = clock.now, recheck
	na := &frameRecorder{}
	a := start(ifi, Defaults(), func(err error) { t.Errorf("send: %v", err) }, &frameRecorder{}, na, rf)
	t.Cleanup(func() { a.Close() })
	return a, na
}

func announceRound(t *testing.T, a *Announcer, rec *frameRecorder, vips ...netip.Addr) []byte {
	t.Helper()
	a.Announce(vips, 1)
	if err := a.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	return naFlags(t, rec.take())
}

// TestRouterFlagReadWhenSent: the Router flag of the unsolicited NAs follows the
// interface's forwarding setting as it is when they are sent (keepalived reads it then),
// not as it was when the Announcer was made: flipped between rounds, the next round's
// frames carry the new value.
func TestRouterFlagReadWhenSent(t *testing.T) {
	src := &fakeForwarding{}
	clock := &fakeClock{}
	a, rec := recordingAnnouncer(t, src, clock, 0)
	v6b := netip.MustParseAddr("fd00:99::151")
	for i, on := range []bool{false, true, true, false, true} {
		src.on.Store(on)
		clock.add(time.Millisecond)
		want := byte(0x20) // Override
		if on {
			want |= 0x80 // Router
		}
		got := announceRound(t, a, rec, capturedV6, v6b)
		if !bytes.Equal(got, []byte{want, want}) {
			t.Errorf("round %d, forwarding %v: NA flags % x, want %02x for both", i, on, got, want)
		}
	}
}

// TestRouterFlagRecheck: like keepalived, a forwarding value read for an NA is used for
// 5 s; a change shows in the first NA sent more than 5 s after the last read.
func TestRouterFlagRecheck(t *testing.T) {
	src := &fakeForwarding{}
	clock := &fakeClock{}
	clock.add(time.Hour)
	a, rec := recordingAnnouncer(t, src, clock, routerRecheck)
	if routerRecheck != 5*time.Second {
		t.Fatalf("recheck %v, keepalived's is 5 s", routerRecheck)
	}
	steps := []struct {
		after time.Duration
		on    bool
		flags byte
		reads int32
	}{
		{0, false, 0x20, 1},                               // first NA: read
		{time.Second, true, 0x20, 1},                      // within 5 s: the value read then
		{4 * time.Second, true, 0x20, 1},                  // 5 s after the read, not more
		{time.Nanosecond, true, 0xa0, 2},                  // more than 5 s: read again
		{6 * time.Second, false, 0x20, 3},                 // and again
		{time.Millisecond, true, 0x20, 3},                 // cached
		{5*time.Second + time.Millisecond, true, 0xa0, 4}, // read
	}
	for i, s := range steps {
		clock.add(s.after)
		src.on.Store(s.on)
		got := announceRound(t, a, rec, capturedV6)
		if len(got) != 1 || got[0] != s.flags || src.reads.Load() != s.reads {
			t.Errorf("step %d: flags % x after %d reads, want %02x after %d", i, got, src.reads.Load(), s.flags, s.reads)
		}
	}
}

// TestForwardingValue: keepalived's reading of the sysctl (get_sysctl): the first
// character if it is a digit, non-zero meaning forwarding; anything unreadable counts as
// forwarding.
func TestForwardingValue(t *testing.T) {
	for in, want := range map[string]bool{"0\n": false, "0": false, "1\n": true, "2": true, "": true, "x": true, " 0": true} {
		if got := forwardingValue([]byte(in)); got != want {
			t.Errorf("forwardingValue(%q) = %v, want %v", in, got, want)
		}
	}
	if !(sysctlForwarding{}).forwarding() {
		t.Error("a setting that could not be opened reads as not forwarding; keepalived takes it as forwarding")
	}
}

// TestRouterFlagFollowsSysctl is TestRouterFlagReadWhenSent on a real interface: the
// lab host's IPv6 forwarding is switched between rounds through /proc, and the NAs on the
// wire follow it. The Announcer reads the file of its own namespace from its sending
// goroutine, which runs outside it.
func TestRouterFlagFollowsSysctl(t *testing.T) {
	lab := netlabtest.New(t, "a", "client")
	a, client := lab.Host("a"), lab.Host("client")
	ipCmd(t, a, "addr", "add", "fd00:99::150/64", "dev", "eth0", "nodad")
	sn := sniff(t, client)
	ann := newAnnouncer(t, a, Defaults())
	ann.router.recheck = 0 // set before the first Announce: the sender reads it after
	for i, on := range []string{"0", "1", "0", "1"} {
		if out, err := a.Command(t.Context(), "sh", "-c", "echo "+on+" > /proc/sys/net/ipv6/conf/eth0/forwarding").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		time.Sleep(time.Millisecond) // the flag is re-read when the clock has moved
		ann.Announce([]netip.Addr{netip.MustParseAddr("fd00:99::150")}, 1)
		_, nas := sn.collect(t, a.MAC, 1)
		want := byte(0x20)
		if on == "1" {
			want = 0xa0
		}
		if got := nas[0][58]; got != want {
			t.Errorf("round %d, forwarding %s: NA flags %02x, want %02x", i, on, got, want)
		}
	}
}
