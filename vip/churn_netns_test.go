package vip

import (
	"errors"
	"fmt"

	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// TestHoldWhileAddressesChurn: Hold and Missing read the interface's addresses, and a
// dump that changed while it was read comes back flagged as possibly incomplete
// (NLM_F_DUMP_INTR), as it does while another master on the host takes over or lets go
// of a thousand addresses. Hold must still add what is absent, find foreign what someone
// else holds, and Missing must call nothing missing that is there.
func TestHoldWhileAddressesChurn(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	churn := hostNetlink(t, a)
	link, err := churn.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's thousand addresses come and go on eth0 throughout.
	churning(t, churn, link, "fd00:99::7:%x/64")

	vips := func(round, n int) []VIP {
		vs := make([]VIP, n)
		for i := range vs {
			vs[i] = VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf("fd00:99::8:%x:%x/64", round, i+1)), Dev: "eth0"}
		}
		return vs
	}
	var holds, misses int
	for round, end := 0, time.Now().Add(2*time.Second); round < 5 || time.Now().Before(end); round++ {
		mine, theirs := vips(round, 64), vips(round+0x100, 8)
		// theirs are on eth0 before Hold: foreign, never recorded nor removed.
		for _, v := range theirs {
			if err := churn.AddrAdd(link, toNetlink(v, true)); err != nil {
				t.Fatal(err)
			}
		}
		foreign, err := m.Hold("VI_1", append(slices.Clone(mine), theirs...)...)
		holds++
		if err != nil {
			t.Fatalf("round %d: Hold: %v", round, err)
		}
		if len(foreign) != len(theirs) {
			t.Fatalf("round %d: Hold found %d foreign, want the %d someone else added", round, len(foreign), len(theirs))
		}
		for range 5 {
			missing, err := m.Missing(mine...)
			misses++
			if len(missing) > 0 {
				t.Fatalf("round %d: Missing calls %d held VIPs missing (err %v)", round, len(missing), err)
			}
		}
		if err := m.Release("VI_1", append(mine, theirs...)...); err != nil {
			t.Fatalf("round %d: Release: %v", round, err)
		}
		for _, v := range theirs {
			if !presentSettled(t, churn, v) {
				t.Fatalf("round %d: someone else's %s was removed", round, v)
			}
			if err := churn.AddrDel(link, toNetlink(v, false)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d Holds of 72 addresses and %d Missing of 64 while 1,000 others came and went", holds, misses)
}

// presentSettled is present, asked again until a dump was not interrupted (or listed v).
func presentSettled(t *testing.T, nl *netlink.Handle, v VIP) bool {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		ok, err := present(nl, v)
		if err == nil {
			return ok
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) || time.Now().After(end) {
			t.Fatalf("is %s there: %v", v, err)
		}
	}
}

// churning adds and removes a thousand addresses (format takes 1..1000: the lab's own
// ranges) on link, round after round, until the test ends.
func churning(t *testing.T, nl *netlink.Handle, link netlink.Link, format string) {
	t.Helper()
	addrs := make([]*netlink.Addr, 1000)
	for i := range addrs {
		addrs[i] = toNetlink(VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf(format, i+1)), Dev: link.Attrs().Name}, true)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var churnErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, op := range []func(netlink.Link, *netlink.Addr) error{nl.AddrAdd, nl.AddrDel} {
				for _, x := range addrs {
					select {
					case <-stop:
						return
					default:
					}
					if err := op(link, x); err != nil {
						churnErr = err
						return
					}
				}
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		for _, x := range addrs {
			nl.AddrDel(link, x)
		}
		if churnErr != nil {
			t.Errorf("changing addresses: %v", churnErr)
		}
	})
}

// TestInterfaceForWhileAddressesChurn: InterfaceFor (interfaceFromIP) finds the holder of
// a local address in a dump of every address of the namespace, which another
// interface's churn interrupts (NLM_F_DUMP_INTR); the address it looks for is still
// listed, and found.
func TestInterfaceForWhileAddressesChurn(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	ip(t, a, "link", "add", "side0", "type", "veth", "peer", "name", "side1")
	ip(t, a, "link", "set", "side0", "up")
	nl := hostNetlink(t, a)
	side, err := nl.LinkByName("side0")
	if err != nil {
		t.Fatal(err)
	}
	churning(t, nl, side, "fd00:99::9:%x/64")
	own := a.Addr6 // on eth0
	var calls int
	err = a.Do(func() error {
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); calls++ {
			got, err := InterfaceFor(own)
			if err != nil || got != "eth0" {
				return fmt.Errorf("call %d: InterfaceFor(%s) = %q, %v; want eth0", calls, own, got, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d lookups while 1,000 addresses came and went on side0", calls)
}
