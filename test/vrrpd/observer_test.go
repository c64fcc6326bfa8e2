package vrrpd_test

import (
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// observer watches one lab host from the inside: every VRRP advertisement that reaches
// its eth0 (with the time it arrived) and every address added to it. Failover times are
// measured between the two, on the same clock, as the brief defines them: from the
// master's last advertisement to the backup holding the VIP.
type observer struct {
	mu      sync.Mutex
	adverts []seenAdvert
	added   []seenAddr
	conns   []*transport.Conn
	nlfd    int
	done    chan struct{}
}

type seenAdvert struct {
	at       time.Time
	src      netip.Addr
	vrid     uint8
	priority uint8
}

type seenAddr struct {
	at   time.Time
	addr netip.Addr
}

func observe(t testing.TB, h *netlab.Host) *observer {
	t.Helper()
	o := &observer{done: make(chan struct{})}
	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		var c *transport.Conn
		if err := h.Do(func() error {
			var err error
			c, err = transport.Open(h.Link, fam, transport.Options{})
			return err
		}); err != nil {
			t.Fatalf("observer on %s: %v", h.Name, err)
		}
		o.conns = append(o.conns, c)
		go o.read(c)
	}
	// Address events come from a plain rtnetlink socket opened in the host's namespace and
	// read in a blocking loop: nothing between the kernel and the timestamp.
	var fd int
	if err := h.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
		return unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR})
	}); err != nil {
		t.Fatalf("address events of %s: %v", h.Name, err)
	}
	o.nlfd = fd
	go o.readAddrs(fd)
	t.Cleanup(o.close)
	return o
}

// readAddrs records every RTM_NEWADDR with the time it was read.
func (o *observer) readAddrs(fd int) {
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EINTR || err == unix.ENOBUFS {
				continue
			}
			return
		}
		if n == 0 {
			return
		}
		now := time.Now()
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if m.Header.Type != unix.RTM_NEWADDR {
				continue
			}
			attrs, err := syscall.ParseNetlinkRouteAttr(&m)
			if err != nil {
				continue
			}
			for _, a := range attrs {
				if a.Attr.Type != unix.IFA_ADDRESS && a.Attr.Type != unix.IFA_LOCAL {
					continue
				}
				if ip, ok := netip.AddrFromSlice(a.Value); ok {
					o.mu.Lock()
					o.added = append(o.added, seenAddr{at: now, addr: ip.Unmap()})
					o.mu.Unlock()
				}
			}
		}
	}
}

func (o *observer) read(c *transport.Conn) {
	pkts := make([]transport.Packet, 16)
	for {
		n, err := c.ReadBatch(pkts)
		if err != nil {
			return
		}
		now := time.Now()
		o.mu.Lock()
		for _, p := range pkts[:n] {
			_, vrid, ok := vrrp.ParseHeader(p.Payload)
			if !ok {
				continue
			}
			o.adverts = append(o.adverts, seenAdvert{at: now, src: p.Src, vrid: vrid, priority: p.Payload[2]})
		}
		o.mu.Unlock()
	}
}

func (o *observer) close() {
	select {
	case <-o.done:
		return
	default:
	}
	close(o.done)
	for _, c := range o.conns {
		c.Close()
	}
	// Shutting the socket down ends the blocking recvfrom of readAddrs.
	_ = unix.Shutdown(o.nlfd, unix.SHUT_RDWR)
	_ = unix.Close(o.nlfd)
}

// dump lists the address events, for failure messages.
func (o *observer) dump() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var sb []byte
	for _, a := range o.added {
		sb = a.at.AppendFormat(sb, "15:04:05.000 ")
		sb = append(sb, a.addr.String()...)
		sb = append(sb, '\n')
	}
	return string(sb)
}

// addedAt returns when addr was first added after since.
func (o *observer) addedAt(addr netip.Addr, since time.Time) (time.Time, bool) {
	// The netlink event may trail the address itself by a moment: a caller that has just
	// seen the VIP on the host waits up to a second for the observer to record it.
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		o.mu.Lock()
		for _, a := range o.added {
			if a.addr == addr && !a.at.Before(since) {
				o.mu.Unlock()
				return a.at, true
			}
		}
		o.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
}

// lastAdvert returns the last advertisement of vrid from src that arrived before t and
// matches prio (any priority when prio < 0).
func (o *observer) lastAdvert(src netip.Addr, vrid uint8, prio int, before time.Time) (seenAdvert, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.adverts) - 1; i >= 0; i-- {
		a := o.adverts[i]
		if a.src == src && a.vrid == vrid && a.at.Before(before) && (prio < 0 || int(a.priority) == prio) {
			return a, true
		}
	}
	return seenAdvert{}, false
}

// countFrom counts the advertisements of vrid from src since t.
func (o *observer) countFrom(src netip.Addr, vrid uint8, since time.Time) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, a := range o.adverts {
		if a.src == src && a.vrid == vrid && !a.at.Before(since) {
			n++
		}
	}
	return n
}

// maxGap returns the longest silence between two advertisements of vrid from src within
// [from, to].
func (o *observer) maxGap(src netip.Addr, vrid uint8, from, to time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var gap time.Duration
	prev := from
	for _, a := range o.adverts {
		if a.src != src || a.vrid != vrid || a.at.Before(from) || a.at.After(to) {
			continue
		}
		gap = max(gap, a.at.Sub(prev))
		prev = a.at
	}
	return max(gap, to.Sub(prev))
}

// timeline lists the arrival times of vrid's adverts from src in [from, to], for failure
// messages.
func (o *observer) timeline(src netip.Addr, vrid uint8, from, to time.Time) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b []byte
	for _, a := range o.adverts {
		if a.src == src && a.vrid == vrid && !a.at.Before(from) && !a.at.After(to) {
			b = a.at.AppendFormat(b, "15:04:05.000 ")
			b = append(b, byte('0'+a.priority/100), byte('0'+a.priority/10%10), byte('0'+a.priority%10), '\n')
		}
	}
	return string(b)
}
