package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"unsafe"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// linkSender writes a Conn's multicast advertisements as frames on a packet socket
// (mdlayher/packet, SOCK_DGRAM: the kernel adds the Ethernet header for the group's
// multicast MAC, from the interface's own address) with the IP header built here, instead
// of through the raw IP socket. It is an opt-in (Options.PacketSocket, vrrpd
// --send-on-packet-socket); by default every advertisement goes through the IP stack, as
// keepalived's do.
//
// Why anyone would: a host that joined the VRRP group (every VRRP speaker does, to hear
// its peers) gets no cached route for sending to it: Linux allocates and frees a route
// entry for every multicast packet to a group the output interface is a member of, and
// runs the IP output path (corking, fragmentation checks, the netfilter hooks) around it.
// The packet socket skips all of it: 0.007 to 0.04 CPU-s per 20 s at 50 instances at
// 100 ms, depending on the run (docs/capacity.md). Nothing else changes on the wire: the same IPv4 header as the
// kernel's for a raw socket (DF, TTL 255; the identification aside) or IPv6 header (hop
// limit 255; flow label 0), the same source MAC, and the qdisc and packet taps (tcpdump)
// see the frames as before.
//
// What that costs, and why it is not the default: the adverts bypass the netfilter
// OUTPUT and POSTROUTING hooks (nftables and iptables rules there, conntrack, egress host
// policies such as Calico's HostEndpoints in iptables mode, DSCP marking rules), and the
// kernel's IP output counters do not count them. An OUTPUT rule that drops VRRP does not
// silence a master that sends this way (test/vrrpd's TestFirewallOutputDrop). Unicast
// adverts always go through the IP stack: their next hop needs the neighbour table.
//
// The socket is mdlayher/packet's; the frames of one wake-up go out in one sendmmsg on its
// descriptor (mmsgWriter, as on the IP socket), since the library writes one frame per
// sendto: that way the opt-in cost more CPU than the IP stack it is meant to undercut
// (docs/capacity.md, 2026-11-28).
type linkSender struct {
	conn *packet.Conn
	raw  syscall.RawConn
	sll  unix.RawSockaddrLinklayer // the group's multicast MAC on the interface, for sendmmsg
	fam  Family
	id   uint16 // the last IPv4 identification; starts at random

	mmsgWriter
	ipHdrs []byte       // a batch's IP headers, ipHeaderLen each
	iovs   []unix.Iovec // two per message: its IP header, its VRRP message
	one    [1]Message   // Send's batch
}

// dropAll is a socket filter that accepts nothing: the packet socket is bound to the
// family's EtherType (a packet socket sends with the protocol it is bound to), and would
// otherwise queue a copy of every IPv4 or IPv6 packet of the interface.
var dropAll = []bpf.Instruction{bpf.RetConstant{Val: 0}}

// openLinkSender opens the packet socket for sending to group on Ethernet interface
// ifindex.
func openLinkSender(ifindex int, fam Family, group netip.Addr) (*linkSender, error) {
	filter, err := bpf.Assemble(dropAll)
	if err != nil {
		return nil, fmt.Errorf("packet socket filter: %w", err)
	}
	proto, mac := unix.ETH_P_IP, make(net.HardwareAddr, 6)
	g := group.AsSlice()
	if fam == IPv4 {
		// RFC 1112 §6.4: 01:00:5e and the group's low 23 bits.
		copy(mac, []byte{0x01, 0x00, 0x5e, g[1] & 0x7f, g[2], g[3]})
	} else {
		proto = unix.ETH_P_IPV6
		// RFC 2464 §7: 33:33 and the group's low 32 bits.
		copy(mac, []byte{0x33, 0x33, g[12], g[13], g[14], g[15]})
	}
	// The filter is attached before the bind, so not one packet is ever queued.
	pc, err := packet.Listen(&net.Interface{Index: ifindex}, packet.Datagram, proto, &packet.Config{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	raw, err := pc.SyscallConn()
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	s := &linkSender{conn: pc, raw: raw, fam: fam, id: uint16(rand.Uint32())}
	// packet(7): to send, sll_family, sll_addr, sll_halen, sll_ifindex and sll_protocol.
	s.sll = unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(uint16(proto)), Ifindex: int32(ifindex), Halen: 6}
	copy(s.sll.Addr[:], mac)
	return s, nil
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

func (s *linkSender) close() { s.conn.Close() }

// SendsFrames reports whether the Conn sends its multicast advertisements as frames on a
// packet socket (Options.PacketSocket set, an Ethernet interface) rather than through the
// IP stack, and, when it does not although it was asked to, why: the packet socket could
// not be opened, or the kernel refused a send on it.
func (c *Conn) SendsFrames() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link != nil, c.linkErr
}

// linkRefused reports whether err, from a send on the packet socket, says the host does
// not let vrrpd send there (a security module's verdict); the Conn then falls back to the
// IP stack for good (dropLink).
func linkRefused(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}

// dropLink closes the packet socket after err and leaves the IP stack to send. Under
// Conn.mu.
func (c *Conn) dropLink(err error) {
	c.link.close()
	c.link, c.linkErr = nil, err
}

// ipHeaderLen is the length of the IP header linkSender builds for fam.
func ipHeaderLen(fam Family) int {
	if fam == IPv4 {
		return 20
	}
	return 40
}

// putIPHeader writes the IP header of a VRRP message of n bytes from src to dst into h,
// with IPv4 identification id.
func putIPHeader(h []byte, fam Family, n int, src, dst netip.Addr, id uint16) {
	if fam == IPv4 {
		h[0] = 0x45 // version 4, 5 words
		h[1] = 0    // TOS: the raw socket's default
		binary.BigEndian.PutUint16(h[2:4], uint16(20+n))
		// DF set, as the raw socket sets it by path MTU discovery's default. The
		// identification of an unfragmentable datagram means nothing (RFC 6864 §4.1);
		// like Linux's, it changes from one datagram to the next.
		binary.BigEndian.PutUint16(h[4:6], id)
		binary.BigEndian.PutUint16(h[6:8], 0x4000)
		h[8] = 255          // TTL: RFC 5798 §5.1.1.3
		h[9] = vrrpProtocol // protocol
		h[10], h[11] = 0, 0 // checksum, below
		s4, d4 := src.As4(), dst.As4()
		copy(h[12:16], s4[:])
		copy(h[16:20], d4[:])
		binary.BigEndian.PutUint16(h[10:12], ipv4HeaderChecksum(h[:20]))
		return
	}
	binary.BigEndian.PutUint32(h[0:4], 6<<28) // version 6, traffic class 0, flow label 0
	binary.BigEndian.PutUint16(h[4:6], uint16(n))
	h[6] = vrrpProtocol // next header
	h[7] = 255          // hop limit: RFC 5798 §5.1.2.3
	s16, d16 := src.As16(), dst.As16()
	copy(h[8:24], s16[:])
	copy(h[24:40], d16[:])
}

// vrrpProtocol is VRRP's IP protocol number.
const vrrpProtocol = 112

// ipv4HeaderChecksum is the Internet checksum of h (RFC 1071), whose checksum field is 0.
func ipv4HeaderChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// sendBatch sends msgs, every one to the group, from src, in as few sendmmsg calls as
// the socket takes, and returns how many went; the error is the first unsent message's.
// Under Conn.mu.
func (s *linkSender) sendBatch(c *Conn, msgs []Message, src netip.Addr) (int, error) {
	n, hl := len(msgs), ipHeaderLen(s.fam)
	s.ipHdrs = slices.Grow(s.ipHdrs[:0], n*hl)[:n*hl]
	s.hdrs = slices.Grow(s.hdrs[:0], n)[:n]
	s.iovs = slices.Grow(s.iovs[:0], 2*n)[:2*n]
	for i, m := range msgs {
		h := s.ipHdrs[i*hl : (i+1)*hl]
		s.id++
		putIPHeader(h, s.fam, len(m.Payload), src, m.Dst, s.id)
		iov := s.iovs[2*i : 2*i+2]
		iov[0].Base = &h[0]
		iov[0].SetLen(hl)
		iov[1].Base = &m.Payload[0]
		iov[1].SetLen(len(m.Payload))
		s.hdrs[i] = unix.Mmsghdr{Hdr: unix.Msghdr{
			Name:    (*byte)(unsafe.Pointer(&s.sll)),
			Namelen: unix.SizeofSockaddrLinklayer,
			Iov:     &iov[0],
		}}
		s.hdrs[i].Hdr.SetIovlen(2)
	}
	return c.write(&s.mmsgWriter, s.raw, msgs, src)
}
