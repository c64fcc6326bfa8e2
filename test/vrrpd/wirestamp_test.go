package vrrpd_test

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// wireStamps records every IPv4 VRRP packet, and every ARP frame, in or out of a lab host's eth0 with the
// kernel's timestamp (SO_TIMESTAMPNS on a packet socket, as tcpdump's): an arriving packet
// is stamped as the interface receives it, a leaving one as it is handed to the
// interface, which on a real NIC is when it goes on the wire. Nothing of the host's
// scheduling is in either.
type wireStamps struct {
	fd   int
	mu   sync.Mutex
	seen []stamped
	done chan struct{}
}

type stamped struct {
	at       time.Time  // CLOCK_REALTIME, as time.Now's wall clock
	out      bool       // leaving the host
	src      netip.Addr // for ARP the sender's protocol address: the announced one
	vrid     uint8
	priority uint8
	arp      bool
}

func stampWire(tb testing.TB, h *netlab.Host) *wireStamps {
	tb.Helper()
	w := &wireStamps{done: make(chan struct{})}
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		// ETH_P_ALL: a socket bound to one protocol sees only what arrives.
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		w.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return err
		}
		// A timeout, so that the reader notices close: closing does not end a blocking read.
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
	}); err != nil {
		tb.Fatalf("wire timestamps on %s: %v", h.Name, err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.read()
	}()
	tb.Cleanup(func() {
		close(w.done)
		<-stopped
		unix.Close(w.fd)
	})
	return w
}

func (w *wireStamps) read() {
	buf := make([]byte, 2048)
	oob := make([]byte, 128)
	for {
		select {
		case <-w.done:
			return
		default:
		}
		n, oobn, _, from, err := unix.Recvmsg(w.fd, buf, oob, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		at, ok := kernelStamp(oob[:oobn])
		ll, isLL := from.(*unix.SockaddrLinklayer)
		if ok && isLL && ll.Protocol == htons(unix.ETH_P_ARP) && n >= 28 {
			// SOCK_DGRAM: the frame without its Ethernet header; the sender's protocol
			// address is at 14.
			src, _ := netip.AddrFromSlice(buf[14:18])
			w.mu.Lock()
			w.seen = append(w.seen, stamped{at: at, out: ll.Pkttype == unix.PACKET_OUTGOING, src: src, arp: true})
			w.mu.Unlock()
			continue
		}
		if !ok || !isLL || ll.Protocol != htons(unix.ETH_P_IP) || n < 20 || buf[9] != 112 {
			continue
		}
		ihl := int(buf[0]&0x0f) * 4
		if n < ihl+3 {
			continue
		}
		src, _ := netip.AddrFromSlice(buf[12:16])
		w.mu.Lock()
		w.seen = append(w.seen, stamped{at: at, out: ll.Pkttype == unix.PACKET_OUTGOING, src: src, vrid: buf[ihl+1], priority: buf[ihl+2]})
		w.mu.Unlock()
	}
}

func kernelStamp(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix()), true
		}
	}
	return time.Time{}, false
}

// first returns the first packet of vrid from src with priority prio, leaving the host
// (out) or arriving, that was stamped after t, waiting up to a second for it.
func (w *wireStamps) first(out bool, src netip.Addr, vrid, prio uint8, after time.Time) (time.Time, bool) {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		w.mu.Lock()
		for _, s := range w.seen {
			if !s.arp && s.out == out && s.src == src && s.vrid == vrid && s.priority == prio && s.at.After(after) {
				w.mu.Unlock()
				return s.at, true
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// firstARP returns the first ARP frame leaving the host that announces addr (a gratuitous
// ARP: addr is its sender's address), stamped after t, waiting up to a second for it.
func (w *wireStamps) firstARP(addr netip.Addr, after time.Time) (time.Time, bool) {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(2 * time.Millisecond) {
		w.mu.Lock()
		for _, s := range w.seen {
			if s.arp && s.out && s.src == addr && s.at.After(after) {
				w.mu.Unlock()
				return s.at, true
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
}

// forget drops what was stamped before t, so that a long benchmark's searches stay short.
func (w *wireStamps) forget(before time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := 0
	for i < len(w.seen) && w.seen[i].at.Before(before) {
		i++
	}
	w.seen = append(w.seen[:0], w.seen[i:]...)
}
