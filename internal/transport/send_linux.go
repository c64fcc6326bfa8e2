package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
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
		_, _, errno = unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&s.msg)), 0)
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

func (c *Conn) sendLocked(payload []byte, dst netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.source.IsValid() {
		if c.srcErr != nil {
			return c.srcErr
		}
		return fmt.Errorf("transport: %s: %w", c.ifname, ErrNoAddress)
	}
	s := &c.send
	s.iov.Base = &payload[0]
	s.iov.SetLen(len(payload))
	s.msg = unix.Msghdr{Iov: &s.iov}
	s.msg.SetIovlen(1)
	oob := s.oob[:]
	clear(oob)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	data := oob[unix.CmsgLen(0):]
	if c.fam == IPv4 {
		s.sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: dst.As4()}
		s.msg.Name = (*byte)(unsafe.Pointer(&s.sa4))
		s.msg.Namelen = unix.SizeofSockaddrInet4
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
		h.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
		// in_pktinfo: ifindex, spec_dst (the source to use), addr (ignored on send).
		binary.NativeEndian.PutUint32(data[0:4], uint32(c.ifindex))
		src := c.source.As4()
		copy(data[4:8], src[:])
		s.msg.Control = &oob[0]
		s.msg.SetControllen(unix.CmsgSpace(unix.SizeofInet4Pktinfo))
	} else {
		s.sa6 = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: dst.As16()}
		if dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() || dst.IsInterfaceLocalMulticast() {
			s.sa6.Scope_id = uint32(c.ifindex)
		}
		s.msg.Name = (*byte)(unsafe.Pointer(&s.sa6))
		s.msg.Namelen = unix.SizeofSockaddrInet6
		h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_PKTINFO
		h.SetLen(unix.CmsgLen(unix.SizeofInet6Pktinfo))
		src := c.source.As16()
		copy(data[0:16], src[:])
		binary.NativeEndian.PutUint32(data[16:20], uint32(c.ifindex))
		s.msg.Control = &oob[0]
		s.msg.SetControllen(unix.CmsgSpace(unix.SizeofInet6Pktinfo))
	}
	if err := c.raw.Write(s.fn); err != nil {
		return c.wrap("send", err)
	}
	if s.operr != nil {
		return c.wrap(fmt.Sprintf("send to %v from %v", dst, c.source), s.operr)
	}
	return nil
}
