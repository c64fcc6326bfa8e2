package vrrpd_test

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// wireCapture records, kernel-stamped, the VRRP adverts (IPv4 and IPv6) in and out of a
// lab host's link, and its ARP frames and neighbour advertisements (the address each
// announces): the one capture of the benchmarks that time takeovers on the wire.
//
// It is a packet socket (mdlayher/packet, cooked, every protocol) with SO_TIMESTAMPNS, as
// tcpdump's: an arriving frame is stamped as the interface receives it, a leaving one as
// it is handed to the interface, which on a real NIC is when it goes on the wire. Nothing
// of the host's scheduling is in either, so the reader may be a plain goroutine. A BPF
// filter keeps everything else out of its buffer, which holds a burst of thousands of
// announcements.
type wireCapture struct {
	conn *packet.Conn
	mu   sync.Mutex
	seen []wireFrame
}

type wireFrame struct {
	at       time.Time // CLOCK_REALTIME, as time.Now's wall clock
	out      bool      // leaving the host
	advert   bool      // a VRRP advert from addr; otherwise an announcement of addr
	addr     netip.Addr
	vrid     uint8
	priority uint8
}

// captureSnap is how much of a frame the filter keeps: a neighbour advertisement's target
// ends at 64, the furthest the decoder reads.
const captureSnap = 128

// captureFilter passes ARP, VRRP over IPv4 and IPv6, and ICMPv6 neighbour advertisements.
// A cooked socket's filter sees the frame from its network header on, in and out.
var captureFilter = []bpf.Instruction{
	/* 0 */ bpf.LoadExtension{Num: bpf.ExtProto},
	/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_ARP, SkipTrue: 9},
	/* 2 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_IP, SkipFalse: 2},
	/* 3 */ bpf.LoadAbsolute{Off: 9, Size: 1}, // IPv4 protocol
	/* 4 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 112, SkipTrue: 6, SkipFalse: 7},
	/* 5 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_IPV6, SkipFalse: 6},
	/* 6 */ bpf.LoadAbsolute{Off: 6, Size: 1}, // IPv6 next header
	/* 7 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 112, SkipTrue: 3},
	/* 8 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 58, SkipFalse: 3},
	/* 9 */ bpf.LoadAbsolute{Off: 40, Size: 1}, // ICMPv6 type
	/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 136, SkipFalse: 1},
	/* 11 */ bpf.RetConstant{Val: captureSnap},
	/* 12 */ bpf.RetConstant{Val: 0},
}

func captureWire(tb testing.TB, h *netlab.Host) *wireCapture {
	tb.Helper()
	filter, err := bpf.Assemble(captureFilter)
	if err != nil {
		tb.Fatal(err)
	}
	w := &wireCapture{}
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		// ETH_P_ALL: a socket bound to one protocol sees only what arrives.
		if w.conn, err = packet.Listen(ifi, packet.Datagram, unix.ETH_P_ALL, &packet.Config{Filter: filter}); err != nil {
			return err
		}
		rc, err := w.conn.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20) // best effort
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}); err != nil {
			return err
		}
		return serr
	}); err != nil {
		if w.conn != nil {
			w.conn.Close()
		}
		tb.Fatalf("capture on %s: %v", h.Name, err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.read()
	}()
	tb.Cleanup(func() {
		w.conn.Close() // ends the read
		<-stopped
	})
	return w
}

// read records the frames until the socket is closed. packet.Conn's ReadFrom gives
// neither the direction nor the ancillary data with the stamp: recvmsg on its socket,
// through the runtime's poller, does.
func (w *wireCapture) read() {
	rc, err := w.conn.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 2048)
	oob := make([]byte, 128)
	for {
		var n, oobn int
		var from unix.Sockaddr
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, from, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT)
			return !errors.Is(rerr, unix.EAGAIN) && !errors.Is(rerr, unix.EINTR)
		})
		if err != nil || rerr != nil {
			return
		}
		at, ok := kernelStamp(oob[:oobn])
		ll, isLL := from.(*unix.SockaddrLinklayer)
		if !ok || !isLL {
			continue
		}
		f, ok := decodeFrame(ll.Protocol<<8|ll.Protocol>>8, buf[:n])
		if !ok {
			continue
		}
		f.at, f.out = at, ll.Pkttype == unix.PACKET_OUTGOING
		w.mu.Lock()
		w.seen = append(w.seen, f)
		w.mu.Unlock()
	}
}

// decodeFrame reads a cooked frame of the ethertype proto (host order).
func decodeFrame(proto uint16, p []byte) (f wireFrame, ok bool) {
	switch proto {
	case unix.ETH_P_ARP:
		if len(p) < 28 {
			return f, false
		}
		f.addr, _ = netip.AddrFromSlice(p[14:18]) // the sender's protocol address
	case unix.ETH_P_IP:
		if len(p) < 20 || p[9] != 112 || len(p) < int(p[0]&0x0f)*4+3 {
			return f, false
		}
		vrrp := p[int(p[0]&0x0f)*4:]
		f.advert, f.vrid, f.priority = true, vrrp[1], vrrp[2]
		f.addr, _ = netip.AddrFromSlice(p[12:16])
	case unix.ETH_P_IPV6:
		switch {
		case len(p) >= 43 && p[6] == 112:
			f.advert, f.vrid, f.priority = true, p[41], p[42]
			f.addr, _ = netip.AddrFromSlice(p[8:24])
		case len(p) >= 64 && p[6] == 58 && p[40] == 136: // a neighbour advertisement
			f.addr, _ = netip.AddrFromSlice(p[48:64]) // its target
		default:
			return f, false
		}
	default:
		return f, false
	}
	return f, true
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

// waitFor returns the time of the first frame stamped after t that match accepts,
// waiting up to a second for it.
func (w *wireCapture) waitFor(after time.Time, match func(wireFrame) bool) (time.Time, bool) {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(2 * time.Millisecond) {
		w.mu.Lock()
		for _, f := range w.seen {
			if f.at.After(after) && match(f) {
				w.mu.Unlock()
				return f.at, true
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
}

// first returns the first advert of vrid from src with priority prio, leaving the host
// (out) or arriving, that was stamped after t, waiting up to a second for it.
func (w *wireCapture) first(out bool, src netip.Addr, vrid, prio uint8, after time.Time) (time.Time, bool) {
	return w.waitFor(after, func(f wireFrame) bool {
		return f.advert && f.out == out && f.addr == src && f.vrid == vrid && f.priority == prio
	})
}

// firstARP returns the first ARP frame leaving the host that announces addr (a gratuitous
// ARP: addr is its sender's address), stamped after t, waiting up to a second for it.
func (w *wireCapture) firstARP(addr netip.Addr, after time.Time) (time.Time, bool) {
	return w.waitFor(after, func(f wireFrame) bool { return !f.advert && f.out && f.addr == addr })
}

// lastAdvert is when the last advert from src arrived before t.
func (w *wireCapture) lastAdvert(src netip.Addr, before time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.seen) - 1; i >= 0; i-- {
		if f := w.seen[i]; f.advert && !f.out && f.addr == src && f.at.Before(before) {
			return f.at, true
		}
	}
	return time.Time{}, false
}

// announcements are the times of the GARPs / NAs for addresses of set leaving the host
// in [from, to], in order.
func (w *wireCapture) announcements(set map[netip.Addr]bool, from, to time.Time) []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Time
	for _, f := range w.seen {
		if !f.advert && f.out && set[f.addr] && !f.at.Before(from) && !f.at.After(to) {
			out = append(out, f.at)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// advertGap is the longest time in [from, to] without an advert leaving the host from src.
func (w *wireCapture) advertGap(src netip.Addr, from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gap time.Duration
	prev := from
	for _, f := range w.seen {
		if !f.advert || !f.out || f.addr != src || f.at.Before(from) || f.at.After(to) {
			continue
		}
		gap = max(gap, f.at.Sub(prev))
		prev = f.at
	}
	return max(gap, to.Sub(prev))
}

// forget drops what was stamped before t, so that a long benchmark's searches stay short.
func (w *wireCapture) forget(before time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = slices.DeleteFunc(w.seen, func(f wireFrame) bool { return f.at.Before(before) })
}
