package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
)

// watchLab is a one-host lab with an interface of its own to change (a veth: the dummy
// module may not be loaded), and a netlinkLinks whose
// Watch listens inside the host's namespace.
type watchLab struct {
	host  *netlab.Host
	nh    *netlink.Handle
	link  netlink.Link
	links *netlinkLinks
}

// newWatchLab builds the lab; rcvbuf, when not zero, is the watch socket's SO_RCVBUF.
func newWatchLab(t *testing.T, rcvbuf int) *watchLab {
	t.Helper()
	lab := netlabtest.New(t, "a")
	h := lab.Host("a")
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nh.Delete)
	if err := nh.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nlw0"}, PeerName: "nlw0p"}); err != nil {
		t.Fatal(err)
	}
	link, err := nh.LinkByName("nlw0")
	if err != nil {
		t.Fatal(err)
	}
	links := &netlinkLinks{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	links.subscribe = func() (*nl.NetlinkSocket, error) {
		var s *nl.NetlinkSocket
		err := h.Do(func() (err error) {
			s, err = subscribeRoute()
			return err
		})
		if err == nil && rcvbuf != 0 {
			if err = s.SetReceiveBufferSize(rcvbuf, false); err != nil {
				s.Close()
			}
		}
		return s, err
	}
	return &watchLab{host: h, nh: nh, link: link, links: links}
}

func (w *watchLab) addr(t *testing.T, cidr string) *netlink.Addr {
	t.Helper()
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// quiet waits until wakes has not moved for a while, so that what follows is not
// satisfied by the echo of an earlier change.
func quiet(t *testing.T, wakes *atomic.Int64) {
	t.Helper()
	last, since := wakes.Load(), time.Now()
	poll.Until(t, 10*time.Second, func() error {
		if n := wakes.Load(); n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) < 300*time.Millisecond {
			return errors.New("wakes still coming")
		}
		return nil
	})
}

// Every kind of change the daemon relies on wakes it: an address added and removed, in
// both families, the link going up and down, its MTU changing, the link deleted. After
// stop, the goroutine is gone and nothing wakes any more.
func TestWatchWakesOnLinkAndAddressChanges(t *testing.T) {
	w := newWatchLab(t, 0)
	before := runtime.NumGoroutine()
	var wakes atomic.Int64
	stop := w.links.Watch(func() { wakes.Add(1) })
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	// The subscription is made by the goroutine: wait for it to listen.
	poll.Until(t, 10*time.Second, func() error {
		if err := w.nh.LinkSetMTU(w.link, 1400+int(time.Now().UnixNano()%100)); err != nil {
			return err
		}
		if wakes.Load() == 0 {
			return errors.New("no wake yet")
		}
		return nil
	})
	v4, v6 := w.addr(t, "10.99.0.200/32"), w.addr(t, "fd00:99::200/128")
	v6.Flags = 0x02 // IFA_F_NODAD: no DAD events after the add
	changes := []struct {
		name string
		do   func() error
	}{
		{"IPv4 address added", func() error { return w.nh.AddrAdd(w.link, v4) }},
		{"IPv6 address added", func() error { return w.nh.AddrAdd(w.link, v6) }},
		{"link up", func() error { return w.nh.LinkSetUp(w.link) }},
		{"MTU lowered", func() error { return w.nh.LinkSetMTU(w.link, 1280) }},
		{"IPv4 address removed", func() error { return w.nh.AddrDel(w.link, v4) }},
		{"IPv6 address removed", func() error { return w.nh.AddrDel(w.link, v6) }},
		{"link down", func() error { return w.nh.LinkSetDown(w.link) }},
		{"link deleted", func() error { return w.nh.LinkDel(w.link) }},
	}
	for _, c := range changes {
		quiet(t, &wakes)
		n := wakes.Load()
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		poll.Until(t, 10*time.Second, func() error {
			if wakes.Load() == n {
				return fmt.Errorf("%s: no wake", c.name)
			}
			return nil
		})
	}
	if n := w.links.overflows.Load(); n != 0 {
		t.Errorf("%d overflows with the default buffer and a few changes", n)
	}

	ended := make(chan struct{})
	go func() { stop(); close(ended) }()
	select {
	case <-ended:
		stopped = true
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return")
	}
	quiet(t, &wakes)
	n := wakes.Load()
	if err := w.nh.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nlw1"}, PeerName: "nlw1p"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if m := wakes.Load(); m != n {
		t.Errorf("%d wakes after stop", m-n)
	}
	// The goroutine has ended: stop waits for it.
	poll.Until(t, 10*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > before {
			return fmt.Errorf("%d goroutines after stop, %d before Watch", n, before)
		}
		return nil
	})
}

// A burst the socket has no room for (the kernel drops the events and reports ENOBUFS)
// wakes the loop once more, so that it re-reads everything rather than miss a change,
// and the events go on after it.
func TestWatchOverflowWakesAndGoesOn(t *testing.T) {
	// The smallest buffer the kernel allows holds a few messages.
	w := newWatchLab(t, 1)
	gate := make(chan struct{})
	var wakes, afterOverflow atomic.Int64
	stop := w.links.Watch(func() {
		wakes.Add(1)
		if w.links.overflows.Load() > 0 {
			afterOverflow.Add(1)
		}
		<-gate // the loop is busy: nothing is read while the burst comes
	})
	defer stop()
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()
	poll.Until(t, 10*time.Second, func() error {
		if err := w.nh.LinkSetMTU(w.link, 1400+int(time.Now().UnixNano()%100)); err != nil {
			return err
		}
		if wakes.Load() == 0 {
			return errors.New("no wake yet")
		}
		return nil
	})
	// The first wake holds the goroutine; the burst overflows the socket behind it.
	for i := range 200 {
		if err := w.nh.AddrAdd(w.link, w.addr(t, fmt.Sprintf("10.99.1.%d/32", i))); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	released = true
	poll.Until(t, 10*time.Second, func() error {
		if w.links.overflows.Load() == 0 {
			return errors.New("no overflow counted")
		}
		if afterOverflow.Load() == 0 {
			return errors.New("overflow counted but no wake after it")
		}
		return nil
	})
	// The socket still listens.
	quiet(t, &wakes)
	n := wakes.Load()
	if err := w.nh.LinkSetMTU(w.link, 1300); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if wakes.Load() == n {
			return errors.New("no wake for a change after the overflow")
		}
		return nil
	})
}
