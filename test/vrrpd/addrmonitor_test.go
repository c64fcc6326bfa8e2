package vrrpd_test

import (
	"errors"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// addrMonitor records when each address (IPv4 and IPv6) was added in a lab host, for the
// benchmarks that time takeovers: an rtnetlink address monitor whose buffer holds
// thousands of notifications, read by a goroutine locked to its thread and blocked in the
// read, which stamps each notification as it returns. That is a little after the kernel
// added the address, a bound from above and the same for every daemon. (Not
// vishvananda/netlink's AddrSubscribe: its updates come through a channel, and the
// receiving goroutine's scheduling would be in every figure.)
type addrMonitor struct {
	fd     int
	mu     sync.Mutex
	events []addrEvent
	done   chan struct{}
}

type addrEvent struct {
	at   time.Time
	addr netip.Addr
}

func monitorAddrs(tb testing.TB, h *netlab.Host) *addrMonitor {
	tb.Helper()
	m := &addrMonitor{done: make(chan struct{})}
	if err := h.Do(func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		m.fd = fd
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20) // best effort
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR}); err != nil {
			return err
		}
		// A timeout, so that the reader notices done: closing does not end a blocking read.
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
	}); err != nil {
		tb.Fatalf("address monitor on %s: %v", h.Name, err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		m.read()
	}()
	tb.Cleanup(func() {
		close(m.done)
		<-stopped
		unix.Close(m.fd)
	})
	return m
}

func (m *addrMonitor) read() {
	buf := make([]byte, 1<<16)
	for {
		select {
		case <-m.done:
			return
		default:
		}
		n, _, err := unix.Recvfrom(m.fd, buf, 0)
		at := time.Now()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
			continue
		}
		if err != nil {
			return
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			continue
		}
		for _, msg := range msgs {
			if msg.Header.Type != unix.RTM_NEWADDR {
				continue
			}
			attrs, err := syscall.ParseNetlinkRouteAttr(&msg)
			if err != nil {
				continue
			}
			for _, a := range attrs {
				if a.Attr.Type != unix.IFA_ADDRESS {
					continue
				}
				if ip, ok := netip.AddrFromSlice(a.Value); ok {
					m.mu.Lock()
					m.events = append(m.events, addrEvent{at: at, addr: ip.Unmap()})
					m.mu.Unlock()
				}
			}
		}
	}
}

// added returns when addr was first added at or after t, waiting up to a second for it.
func (m *addrMonitor) added(addr netip.Addr, since time.Time) (time.Time, bool) {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(2 * time.Millisecond) {
		m.mu.Lock()
		for _, e := range m.events {
			if e.addr == addr && !e.at.Before(since) {
				m.mu.Unlock()
				return e.at, true
			}
		}
		m.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
}

// span is when the first and the last address of set were added after t, and how many
// distinct ones were.
func (m *addrMonitor) span(set map[netip.Addr]bool, after time.Time) (first, last time.Time, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[netip.Addr]bool, len(set))
	for _, e := range m.events {
		if !set[e.addr] || !e.at.After(after) || seen[e.addr] {
			continue
		}
		seen[e.addr] = true
		if first.IsZero() {
			first = e.at
		}
		last = e.at
	}
	return first, last, len(seen)
}

// dump lists the address events, for failure messages.
func (m *addrMonitor) dump() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sb []byte
	for _, e := range m.events {
		sb = e.at.AppendFormat(sb, "15:04:05.000 ")
		sb = append(sb, e.addr.String()...)
		sb = append(sb, '\n')
	}
	return string(sb)
}

// forget drops what was added before t, so that a long benchmark's searches stay short.
func (m *addrMonitor) forget(before time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = slices.DeleteFunc(m.events, func(e addrEvent) bool { return e.at.Before(before) })
}
