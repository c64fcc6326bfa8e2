package netlab_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

func ping(t *testing.T, from *netlab.Host, to netip.Addr) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := from.Command(ctx, "ping", "-c", "1", "-W", "1", to.String()).CombinedOutput()
	if err != nil {
		return &pingError{string(out), err}
	}
	return nil
}

type pingError struct {
	out string
	err error
}

func (e *pingError) Error() string { return e.err.Error() + ": " + e.out }

func TestHostsReachEachOther(t *testing.T) {
	lab := netlabtest.New(t, "a", "b", "client")
	a, b, c := lab.Host("a"), lab.Host("b"), lab.Host("client")
	if a == nil || b == nil || c == nil || lab.Host("nope") != nil {
		t.Fatal("Host lookup by name is wrong")
	}
	if a.Addr4 != netip.MustParseAddr("10.99.0.10") || c.Addr6 != netip.MustParseAddr("fd00:99::c") {
		t.Fatalf("addresses: a %v, client %v", a.Addr4, c.Addr6)
	}
	for _, from := range []*netlab.Host{a, c} {
		for _, to := range []netip.Addr{b.Addr4, b.Addr6, b.LinkLocal} {
			dst := to
			if to.Is6() && to.IsLinkLocalUnicast() {
				dst = to.WithZone(from.Link)
			}
			if err := ping(t, from, dst); err != nil {
				t.Errorf("%s cannot ping %s at %s: %v", from.Name, b.Name, dst, err)
			}
		}
	}
	// After the pings the client knows b's MAC, on both families.
	for _, ip := range []netip.Addr{b.Addr4, b.Addr6} {
		mac, state, err := c.Neighbor(ip)
		if err != nil {
			t.Fatal(err)
		}
		if mac.String() != b.MAC.String() {
			t.Errorf("client's neighbour entry for %s: %v (%s), want b's %v", ip, mac, state, b.MAC)
		}
	}
	if mac, state, err := c.Neighbor(netip.MustParseAddr("10.99.0.200")); err != nil || mac != nil || state != "" {
		t.Errorf("entry for an unknown address: %v %q %v", mac, state, err)
	}
}

func TestAddrsAndLinkLocal(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	addrs, err := a.AddrsOn("eth0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Prefix]bool{
		netip.PrefixFrom(a.Addr4, 24):     false,
		netip.PrefixFrom(a.Addr6, 64):     false,
		netip.PrefixFrom(a.LinkLocal, 64): false,
	}
	for _, p := range addrs {
		if _, ok := want[p]; ok {
			want[p] = true
		}
	}
	for p, seen := range want {
		if !seen {
			t.Errorf("eth0 lacks %v; has %v", p, addrs)
		}
	}
	if ok, err := a.HasAddr(netip.MustParsePrefix("10.99.0.10/32")); err != nil || !ok {
		t.Errorf("HasAddr(own address) = %v, %v", ok, err)
	}
	if ok, err := a.HasAddr(netip.MustParsePrefix("10.99.0.99/32")); err != nil || ok {
		t.Errorf("HasAddr(foreign address) = %v, %v", ok, err)
	}
	if len(a.MAC) != 6 {
		t.Errorf("MAC %v", a.MAC)
	}
}

func TestDoRunsInsideAndComesBack(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	outside, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	// Many times, so that a thread left in the wrong namespace would show up
	// as a goroutine seeing lab interfaces outside Do.
	for range 20 {
		var names []string
		if err := a.Do(func() error {
			ifs, err := net.Interfaces()
			for _, i := range ifs {
				names = append(names, i.Name)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, ",") != "lo,eth0" {
			t.Fatalf("inside the host: interfaces %v, want lo,eth0", names)
		}
		if _, err := netlink.LinkByName(a.SwitchEnd); err == nil {
			t.Fatal("after Do, this thread sees the lab's switch veth: not back home")
		}
	}
	after, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(outside) {
		t.Errorf("outside interfaces changed from %d to %d", len(outside), len(after))
	}
}

func TestCutAndRestore(t *testing.T) {
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	if err := ping(t, a, b.Addr4); err != nil {
		t.Fatal(err)
	}
	if err := a.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := ping(t, a, b.Addr4); err == nil {
		t.Fatal("ping went through a cut link")
	}
	if err := ping(t, b, a.Addr6); err == nil {
		t.Fatal("ping went through a cut link (v6)")
	}
	if err := a.Restore(); err != nil {
		t.Fatal(err)
	}
	// Carrier comes back asynchronously; the first ping may still race it.
	var last error
	for range 10 {
		if last = ping(t, a, b.Addr4); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("no ping after Restore: %v", last)
	}
}

func TestCloseRemovesEverythingAndKillsProcesses(t *testing.T) {
	netlabtest.Require(t)
	lab, err := netlab.Create("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	cmd := lab.Host("a").Command(context.Background(), "sleep", "600")
	if err := cmd.Start(); err != nil {
		lab.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("process in the lab survived Close")
	}
	for _, ns := range []string{lab.SwitchNetns, lab.Host("a").Netns, lab.Host("b").Netns} {
		if _, err := os.Stat("/run/netns/" + ns); !os.IsNotExist(err) {
			t.Errorf("namespace %s still there after Close (%v)", ns, err)
		}
	}
	if err := lab.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A pair lab is two hosts on one veth pair: they reach each other on both
// families, there is no switch to cut them from, and Close removes both.
func TestPairLab(t *testing.T) {
	netlabtest.Require(t)
	if lab, err := netlab.CreatePair("a", "a"); err == nil {
		lab.Close()
		t.Error("netlab.CreatePair(a, a) succeeded")
	}
	lab, err := netlab.CreatePair("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	a, b := lab.Host("a"), lab.Host("b")
	if lab.SwitchNetns != "" || lab.Bridge != "" || a.SwitchEnd != "" {
		t.Fatalf("a pair lab has a switch: %q %q %q", lab.SwitchNetns, lab.Bridge, a.SwitchEnd)
	}
	for _, to := range []netip.Addr{b.Addr4, b.Addr6, b.LinkLocal.WithZone(a.Link)} {
		if err := ping(t, a, to); err != nil {
			t.Errorf("a cannot ping b at %s: %v", to, err)
		}
	}
	// eth0 is a veth, whose other end (b's eth0, which the pings reached) is the only one.
	nh, err := a.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	link, err := nh.LinkByName(a.Link)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := link.(*netlink.Veth); !ok {
		t.Fatalf("a's %s is a %s, not a veth", a.Link, link.Type())
	}
	if err := a.Cut(); err == nil {
		t.Error("Cut succeeded in a pair lab")
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{a.Netns, b.Netns} {
		if _, err := os.Stat("/run/netns/" + ns); !os.IsNotExist(err) {
			t.Errorf("namespace %s still there after Close (%v)", ns, err)
		}
	}
}

func TestCreateRejectsBadNames(t *testing.T) {
	netlabtest.Require(t)
	for _, names := range [][]string{nil, {"a", "a"}, {"a b"}, {""}} {
		if lab, err := netlab.Create(names...); err == nil {
			lab.Close()
			t.Errorf("netlab.Create(%q) succeeded", names)
		}
	}
}

// BenchmarkCreate measures building and tearing down a three-host lab.
func BenchmarkCreate(b *testing.B) {
	netlabtest.Require(b)
	for b.Loop() {
		lab, err := netlab.Create("a", "b", "client")
		if err != nil {
			b.Fatal(err)
		}
		if err := lab.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
