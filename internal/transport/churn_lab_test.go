package transport_test

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
)

// TestRefreshWhileAddressesChurn: Refresh reads the interface's addresses to pick the
// source, and a dump of thousands of addresses that change while it is read comes back
// flagged as possibly incomplete (NLM_F_DUMP_INTR). That is what a master taking over an
// instance of 1,000 IPv6 VIPs does to its own interface: the kernel announces each new
// address from a work queue after the add returned, each announcement wakes a Refresh,
// and the flagged dump was once taken for "no usable source", so the new master went
// FAULT and dropped every VIP it had just added (issue 31's 1,000-IPv6-VIP interop lab).
// While another goroutine adds and removes a thousand addresses on the interface, every
// Refresh must succeed and keep the source.
func TestRefreshWhileAddressesChurn(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a")
	h := lab.Host("a")
	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		t.Run(fam.String(), func(t *testing.T) {
			c := open(t, h, fam, transport.Options{})
			src := c.Source()
			if !src.IsValid() {
				t.Fatal("no source after Open")
			}
			nh, err := h.Netlink()
			if err != nil {
				t.Fatal(err)
			}
			defer nh.Close()
			link, err := nh.LinkByName(h.Link)
			if err != nil {
				t.Fatal(err)
			}
			addrs := make([]*netlink.Addr, 1000)
			for i := range addrs {
				// Inside the lab's own ranges, on the lab host's own link.
				s := fmt.Sprintf("fd00:99::6:%x/64", i+1)
				if fam == transport.IPv4 {
					s = fmt.Sprintf("10.99.%d.%d/32", 101+i/250, 1+i%250)
				}
				a, err := netlink.ParseAddr(s)
				if err != nil {
					t.Fatal(err)
				}
				if fam == transport.IPv6 {
					a.Flags = unix.IFA_F_NODAD // as package vip adds a VIP
				} else {
					a.Broadcast = net.IPv4zero
				}
				addrs[i] = a
			}
			stop, exited := make(chan struct{}), make(chan struct{})
			var churnErr error // read once exited is closed
			var rounds atomic.Int64
			go func() {
				defer close(exited)
				for {
					for _, op := range []func(netlink.Link, *netlink.Addr) error{nh.AddrAdd, nh.AddrDel} {
						for _, a := range addrs {
							select {
							case <-stop:
								return
							default:
							}
							if err := op(link, a); err != nil {
								churnErr = err
								return
							}
						}
					}
					rounds.Add(1)
				}
			}()
			// Refresh for a while and for at least two rounds of adds and removes,
			// however slow the machine.
			var refreshes, failures int
			var firstErr error
			deadline := time.Now().Add(2 * time.Second)
		refreshing:
			for limit := time.Now().Add(60 * time.Second); time.Now().Before(limit); refreshes++ {
				select {
				case <-exited:
					break refreshing // failed: churnErr says why
				default:
				}
				if err := c.Refresh(); err != nil {
					failures++
					if firstErr == nil {
						firstErr = err
					}
				} else if got := c.Source(); got != src {
					t.Errorf("source %v after a Refresh, was %v", got, src)
				}
				if time.Now().After(deadline) && rounds.Load() >= 2 {
					break
				}
			}
			close(stop)
			<-exited
			for _, a := range addrs {
				nh.AddrDel(link, a) // what the last round left
			}
			if churnErr != nil {
				t.Fatalf("changing addresses: %v", churnErr)
			}
			t.Logf("%d Refreshes during %d rounds of 1,000 adds and removes; %d failed", refreshes, rounds.Load(), failures)
			if failures > 0 {
				t.Errorf("%d of %d Refreshes failed while the addresses changed, the first with: %v", failures, refreshes, firstErr)
			}
		})
	}
}
