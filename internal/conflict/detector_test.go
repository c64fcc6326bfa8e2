package conflict

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
)

// runIn runs d in h's namespace until the test ends.
func runIn(t *testing.T, h *netlab.Host, d *Detector) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := h.Do(func() error { d.Run(ctx); return nil }); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestDetectorStaticHolder runs a Detector on real packet sockets in a namespace lab: a
// holds the VIPs (as far as the detector knows), b has them as static addresses (IPv6
// without DAD). Both are reported with b's MAC within 5 s, through the kernel filters, the
// probes and the parser; once b lets them go they end within 5 s, and OnChange heard each
// start and end.
func TestDetectorStaticHolder(t *testing.T) {
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	ip := func(args ...string) {
		t.Helper()
		if out, err := b.Command(t.Context(), "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	var mu sync.Mutex
	var changes []Change
	d := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnChange: func(c Change) {
		mu.Lock()
		changes = append(changes, c)
		mu.Unlock()
	}})
	v4, v6 := netip.MustParseAddr("10.99.0.100"), netip.MustParseAddr("fd00:99::100")
	runIn(t, a, d)
	d.SetHeld([]Target{{Addr: v4, Dev: a.Link, Instance: "VI_4", Intf: a.Link, VRID: 4}, {Addr: v6, Dev: a.Link, Instance: "VI_6", Intf: a.Link, VRID: 6}})
	time.Sleep(settle) // held a while before the other appears

	ip("addr", "add", "10.99.0.100/24", "dev", b.Link)
	ip("addr", "add", "fd00:99::100/64", "dev", b.Link, "nodad")
	added := time.Now()
	mac := b.MAC.String()
	poll.Until(t, 15*time.Second, func() error {
		cs := d.Conflicts()
		if len(cs) != 2 || cs[0].Addr != v4 || cs[1].Addr != v6 || cs[0].MAC != mac || cs[1].MAC != mac {
			return fmt.Errorf("conflicts %+v, want both VIPs with %s", cs, mac)
		}
		return nil
	})
	took := time.Since(added)
	t.Logf("confirmed %v after b took the addresses", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("confirmed %v after b took the addresses, want within 5 s", took.Round(time.Millisecond))
	}
	if cs := d.Conflicts(); cs[0].Instance != "VI_4" || cs[0].VRID != 4 || cs[0].Intf != a.Link {
		t.Errorf("conflict %+v lacks its holder", cs[0])
	}

	ip("addr", "del", "10.99.0.100/24", "dev", b.Link)
	ip("addr", "del", "fd00:99::100/64", "dev", b.Link)
	removed := time.Now()
	poll.Until(t, 15*time.Second, func() error {
		if cs := d.Conflicts(); len(cs) > 0 {
			return fmt.Errorf("conflicts %+v", cs)
		}
		return nil
	})
	took = time.Since(removed)
	t.Logf("ended %v after b let go", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("ended %v after b let go, want within 5 s", took.Round(time.Millisecond))
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %v %v", c.Instance, c.MAC == mac, c.Start))
	}
	slices.Sort(got)
	if want := []string{"VI_4 true false", "VI_4 true true", "VI_6 true false", "VI_6 true true"}; !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
}

// TestDetectorQuietLAN: the same lab with nobody else holding the VIPs, and b's own
// traffic on the segment (ARP and neighbour discovery for its own addresses, a ping each
// way): no conflict over 5 s, the host's own frames included.
func TestDetectorQuietLAN(t *testing.T) {
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	d := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	runIn(t, a, d)
	d.SetHeld([]Target{{Addr: a.Addr4, Dev: a.Link, Instance: "own4"}, {Addr: a.Addr6, Dev: a.Link, Instance: "own6"},
		{Addr: netip.MustParseAddr("10.99.0.100"), Dev: a.Link, Instance: "VI_4"}})
	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		for _, args := range [][]string{{"-c1", "-W1", a.Addr4.String()}, {"-6", "-c1", "-W1", a.Addr6.String()}} {
			_ = b.Command(t.Context(), "ping", args...).Run()
		}
		if cs := d.Conflicts(); len(cs) > 0 {
			t.Fatalf("conflicts %+v on a quiet LAN", cs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
