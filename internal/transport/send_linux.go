package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"syscall"
	"unsafe"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
	"golang.org/x/sys/unix"
)

// sender holds the scratch of one sendmsg: the message header, the destination and a
// packet-info control message that sets the source address and outgoing interface. It is
// reused under Conn.mu so that sending does not allocate either.
type sender struct {
	c     *Conn
	msg   unix.Msghdr
	iov   unix.Iovec
	sa4   unix.RawSockaddrInet4
	sa6   unix.RawSockaddrInet6
	oob   [64]byte
	operr error
	fn    func(fd uintptr) bool
}

func (s *sender) init(c *Conn) {
	s.c = c
	s.fn = s.sendmsg
}

func (s *sender) sendmsg(fd uintptr) bool {
	var errno unix.Errno
	for {
		_, _, errno = unix.RawSyscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&s.msg)), 0)
		if errno != unix.EINTR {
			break
		}
	}
	if errno == unix.EAGAIN {
		return false
	}
	s.operr = nil
	if errno != 0 {
		s.operr = errno
	}
	return true
}

// Send sends one VRRP message to dst (the group for multicast, or one unicast peer; for
// unicast the caller sends once per peer) from Source, with TTL / hop limit 255 and the
// checksum exactly as given.
//
// It fails with ErrNoAddress while the interface has no usable source (see Refresh), and
// with ErrInterfaceDown when the kernel reports the link down.
func (c *Conn) Send(payload []byte, dst netip.Addr) error {
	dst = dst.Unmap()
	if !dst.IsValid() || vrrp.FamilyOf(dst) != c.fam {
		return fmt.Errorf("transport: send on %s %v to %v: %w", c.ifname, c.fam, dst, errFamily)
	}
	if len(payload) == 0 || len(payload) > 65535-60 {
		return fmt.Errorf("transport: send on %s: payload of %d bytes", c.ifname, len(payload))
	}
	if c.closed.Load() {
		return ErrClosed
	}
	err := c.sendLocked(payload, dst)
	if err != nil && !errors.Is(err, ErrNoAddress) && !errors.Is(err, ErrClosed) {
		// "Network is unreachable" and friends usually mean the link went away; say so
		// in terms the daemon acts on.
		if rerr := c.refresh(); rerr != nil {
			return fmt.Errorf("%w; %w", err, rerr)
		}
	}
	return err
}

// Message is one VRRP message of a SendBatch.
type Message struct {
	Payload []byte
	Dst     netip.Addr
}

// SendBatch sends msgs as Send sends each, with one sendmmsg for all of them: a master of
// many virtual routers sends their adverts in one wake-up, and a system call a packet
// doubled the CPU of sending them (BenchmarkSendBatch). It returns how many were sent; when
// that is less than len(msgs), err is msgs[sent]'s error, and the ones after it are not
// sent (the caller goes on from sent+1).
func (c *Conn) SendBatch(msgs []Message) (sent int, err error) {
	// Up to the first message Send would refuse; that one's error once those went.
	valid, invalid := len(msgs), error(nil)
	for i, m := range msgs {
		dst := m.Dst.Unmap()
		if !dst.IsValid() || vrrp.FamilyOf(dst) != c.fam {
			valid, invalid = i, fmt.Errorf("transport: send on %s %v to %v: %w", c.ifname, c.fam, dst, errFamily)
			break
		}
		if len(m.Payload) == 0 || len(m.Payload) > 65535-60 {
			valid, invalid = i, fmt.Errorf("transport: send on %s: payload of %d bytes", c.ifname, len(m.Payload))
			break
		}
		msgs[i].Dst = dst
	}
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if valid > 0 {
		sent, err = c.sendBatchLocked(msgs[:valid])
		if err != nil && !errors.Is(err, ErrNoAddress) && !errors.Is(err, ErrClosed) {
			if rerr := c.refresh(); rerr != nil {
				err = fmt.Errorf("%w; %w", err, rerr)
			}
		}
	}
	if err == nil && invalid != nil {
		return valid, invalid
	}
	return sent, err
}

// sendBatch is SendBatch's scratch, reused under Conn.mu.
type sendBatch struct {
	mmsgWriter
	iovs []unix.Iovec
	sa4  []unix.RawSockaddrInet4
	sa6  []unix.RawSockaddrInet6
}

// mmsgWriter sends a batch of messages with sendmmsg, on the IP socket or the packet
// socket.
type mmsgWriter struct {
	hdrs []unix.Mmsghdr
	from int // the first message the next sendmmsg sends
	sent int // how many that sendmmsg sent
	err  error
	fn   func(fd uintptr) bool // sendmmsg, bound once: a method value per call allocates
}

// sendmmsg, like sendmsg, is a raw system call (no entersyscall): the socket is
// non-blocking (a full buffer is EAGAIN, and RawConn.Write waits in the poller), so the
// call never blocks, and the runtime's handing over of the P around a blocking one costs a
// thread wake-up per send (see recvmmsg).
func (w *mmsgWriter) sendmmsg(fd uintptr) bool {
	hdrs := w.hdrs[w.from:]
	var r uintptr
	var errno unix.Errno
	for {
		r, _, errno = unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
		if errno != unix.EINTR {
			break
		}
	}
	if errno == unix.EAGAIN {
		return false
	}
	w.sent, w.err = int(r), nil
	if errno != 0 {
		w.sent, w.err = 0, errno
	}
	return true
}

// write sends w.hdrs, msgs' headers, on raw from src, in as many sendmmsg calls as it
// takes, and returns how many went; the error is the first unsent message's. Under
// Conn.mu.
func (c *Conn) write(w *mmsgWriter, raw syscall.RawConn, msgs []Message, src netip.Addr) (int, error) {
	if w.fn == nil {
		w.fn = w.sendmmsg
	}
	done := 0
	for done < len(w.hdrs) {
		w.from = done
		if err := raw.Write(w.fn); err != nil {
			return done, c.wrap("send", err)
		}
		if w.err != nil {
			return done, c.wrap(fmt.Sprintf("send to %v from %v", msgs[done].Dst, src), w.err)
		}
		done += w.sent
	}
	return done, nil
}

func (c *Conn) sendBatchLocked(msgs []Message) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.source.IsValid() {
		if c.srcErr != nil {
			return 0, c.srcErr
		}
		return 0, fmt.Errorf("transport: %s: %w", c.ifname, ErrNoAddress)
	}
	if c.link != nil && allTo(msgs, c.group) {
		n, err := c.link.sendBatch(c, msgs, c.source)
		if err == nil || !linkRefused(err) {
			return n, err
		}
		c.dropLink(err)
		msgs = msgs[n:] // the rest through the IP stack
		sent, err := c.sendBatchIP(msgs)
		return n + sent, err
	}
	return c.sendBatchIP(msgs)
}

// sendBatchIP is sendBatchLocked through the raw IP socket. Under Conn.mu.
func (c *Conn) sendBatchIP(msgs []Message) (int, error) {
	// Every message has the same control message (source and interface): the one
	// Send builds, shared.
	s := &c.send
	controlLen := s.control()
	b := &c.batch
	n := len(msgs)
	b.hdrs = slices.Grow(b.hdrs[:0], n)[:n]
	b.iovs = slices.Grow(b.iovs[:0], n)[:n]
	if c.fam == IPv4 {
		b.sa4 = slices.Grow(b.sa4[:0], n)[:n]
	} else {
		b.sa6 = slices.Grow(b.sa6[:0], n)[:n]
	}
	for i, m := range msgs {
		b.iovs[i].Base = &m.Payload[0]
		b.iovs[i].SetLen(len(m.Payload))
		h := &b.hdrs[i]
		*h = unix.Mmsghdr{Hdr: unix.Msghdr{Iov: &b.iovs[i], Control: &s.oob[0]}}
		h.Hdr.SetIovlen(1)
		h.Hdr.SetControllen(controlLen)
		if c.fam == IPv4 {
			b.sa4[i] = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: m.Dst.As4()}
			h.Hdr.Name = (*byte)(unsafe.Pointer(&b.sa4[i]))
			h.Hdr.Namelen = unix.SizeofSockaddrInet4
		} else {
			b.sa6[i] = sockaddr6(m.Dst, c.ifindex)
			h.Hdr.Name = (*byte)(unsafe.Pointer(&b.sa6[i]))
			h.Hdr.Namelen = unix.SizeofSockaddrInet6
		}
	}
	return c.write(&b.mmsgWriter, c.raw, msgs, c.source)
}

func (c *Conn) sendLocked(payload []byte, dst netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.source.IsValid() {
		if c.srcErr != nil {
			return c.srcErr
		}
		return fmt.Errorf("transport: %s: %w", c.ifname, ErrNoAddress)
	}
	if c.link != nil && dst == c.group {
		c.link.one[0] = Message{Payload: payload, Dst: dst}
		_, err := c.link.sendBatch(c, c.link.one[:], c.source)
		c.link.one[0] = Message{}
		if err == nil || !linkRefused(err) {
			return err
		}
		c.dropLink(err) // and send it through the IP stack
	}
	s := &c.send
	s.iov.Base = &payload[0]
	s.iov.SetLen(len(payload))
	s.msg = unix.Msghdr{Iov: &s.iov}
	s.msg.SetIovlen(1)
	s.msg.Control = &s.oob[0]
	s.msg.SetControllen(s.control())
	if c.fam == IPv4 {
		s.sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: dst.As4()}
		s.msg.Name = (*byte)(unsafe.Pointer(&s.sa4))
		s.msg.Namelen = unix.SizeofSockaddrInet4
	} else {
		s.sa6 = sockaddr6(dst, c.ifindex)
		s.msg.Name = (*byte)(unsafe.Pointer(&s.sa6))
		s.msg.Namelen = unix.SizeofSockaddrInet6
	}
	if err := c.raw.Write(s.fn); err != nil {
		return c.wrap("send", err)
	}
	if s.operr != nil {
		return c.wrap(fmt.Sprintf("send to %v from %v", dst, c.source), s.operr)
	}
	return nil
}

// control fills s.oob with the packet-info control message that sets the source address
// and the outgoing interface, and returns its length. Under Conn.mu.
func (s *sender) control() int {
	c := s.c
	oob := s.oob[:]
	clear(oob)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	data := oob[unix.CmsgLen(0):]
	if c.fam == IPv4 {
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
		h.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
		// in_pktinfo: ifindex, spec_dst (the source to use), addr (ignored on send).
		binary.NativeEndian.PutUint32(data[0:4], uint32(c.ifindex))
		src := c.source.As4()
		copy(data[4:8], src[:])
		return unix.CmsgSpace(unix.SizeofInet4Pktinfo)
	}
	h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_PKTINFO
	h.SetLen(unix.CmsgLen(unix.SizeofInet6Pktinfo))
	src := c.source.As16()
	copy(data[0:16], src[:])
	binary.NativeEndian.PutUint32(data[16:20], uint32(c.ifindex))
	return unix.CmsgSpace(unix.SizeofInet6Pktinfo)
}

// sockaddr6 is dst as a sockaddr_in6, scoped to the interface when dst needs it.
func sockaddr6(dst netip.Addr, ifindex int) unix.RawSockaddrInet6 {
	sa := unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: dst.As16()}
	if dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() || dst.IsInterfaceLocalMulticast() {
		sa.Scope_id = uint32(ifindex)
	}
	return sa
}

// allTo reports whether every message goes to dst.
func allTo(msgs []Message, dst netip.Addr) bool {
	for _, m := range msgs {
		if m.Dst != dst {
			return false
		}
	}
	return true
}
