// Package rawinject sends hand-made, possibly malformed, VRRP packets for tests: an IPv4
// packet whose whole header the test writes (any TTL, source, protocol, length), or an IPv6
// packet with any hop limit and source and a payload the kernel leaves alone (a bad
// checksum stays bad).
//
// It exists so that daemon tests can prove that a TTL of 254, a bad checksum, a truncated
// message, a wrong version, an unknown type or a wrong password are each counted and
// otherwise ignored. Call it inside the sending host's namespace (netlab.Host.Do); it needs
// CAP_NET_RAW. It is not used by vrrpd itself.
package rawinject

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IPv4 describes an IPv4 packet to build. Zero fields get VRRP's usual values.
type IPv4 struct {
	Src, Dst netip.Addr
	TTL      uint8 // 0 means 255; to send TTL 0, use Marshal and patch the byte
	Protocol uint8 // 0 means 112 (VRRP)
	TOS      uint8
	ID       uint16
	// Options are raw IP options (padded to a multiple of 4 bytes by Marshal).
	Options []byte
	Payload []byte
}

// Marshal returns the packet with a correct header checksum and total length. (With
// IP_HDRINCL Linux rewrites both anyway; the header is built complete so that the bytes
// are also usable elsewhere, e.g. in a pcap.)
func (p IPv4) Marshal() ([]byte, error) {
	if !p.Src.Is4() || !p.Dst.Is4() {
		return nil, fmt.Errorf("rawinject: IPv4 needs IPv4 source and destination, have %v -> %v", p.Src, p.Dst)
	}
	opts := len(p.Options)
	if pad := opts % 4; pad != 0 {
		opts += 4 - pad
	}
	hl := 20 + opts
	if hl > 60 {
		return nil, fmt.Errorf("rawinject: %d bytes of IP options, at most 40 fit", len(p.Options))
	}
	total := hl + len(p.Payload)
	if total > 65535 {
		return nil, fmt.Errorf("rawinject: packet of %d bytes is too long", total)
	}
	ttl, proto := p.TTL, p.Protocol
	if ttl == 0 {
		ttl = 255
	}
	if proto == 0 {
		proto = 112
	}
	b := make([]byte, total)
	b[0] = 4<<4 | byte(hl/4)
	b[1] = p.TOS
	binary.BigEndian.PutUint16(b[2:4], uint16(total))
	binary.BigEndian.PutUint16(b[4:6], p.ID)
	b[8] = ttl
	b[9] = proto
	src, dst := p.Src.As4(), p.Dst.As4()
	copy(b[12:16], src[:])
	copy(b[16:20], dst[:])
	copy(b[20:], p.Options)
	copy(b[hl:], p.Payload)
	binary.BigEndian.PutUint16(b[10:12], headerChecksum(b[:hl]))
	return b, nil
}

func headerChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// SendIPv4 sends p out of interface ifname through a raw IPPROTO_RAW socket, header and
// all, so the receiver sees exactly the TTL, source and protocol the test chose.
func SendIPv4(ifname string, p IPv4) error {
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	return SendIPv4Bytes(ifname, b)
}

// SendIPv4Bytes sends b, a complete IPv4 packet (header included), out of ifname. The
// destination is read from the header, so b must hold at least 20 bytes.
func SendIPv4Bytes(ifname string, b []byte) error {
	if len(b) < 20 {
		return errors.New("rawinject: an IPv4 packet needs at least a 20-byte header")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return fmt.Errorf("rawinject: raw IPv4 socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifname); err != nil {
		return fmt.Errorf("rawinject: bind to %s: %w", ifname, err)
	}
	dst := [4]byte(b[16:20])
	if dst[0] >= 224 && dst[0] < 240 {
		if err := setMulticastIf4(fd, ifname); err != nil {
			return err
		}
	}
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrInet4{Addr: dst}); err != nil {
		return fmt.Errorf("rawinject: send %d bytes to %v on %s: %w", len(b), netip.AddrFrom4(dst), ifname, err)
	}
	return nil
}

func setMulticastIf4(fd int, ifname string) error {
	idx, err := ifIndex(ifname)
	if err != nil {
		return err
	}
	mreq := &unix.IPMreqn{Ifindex: int32(idx)}
	if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, mreq); err != nil {
		return fmt.Errorf("rawinject: IP_MULTICAST_IF %s: %w", ifname, err)
	}
	return nil
}

// IPv6 describes an IPv6 VRRP packet to send. The kernel writes the IPv6 header; it does
// not touch the payload, so the VRRP checksum is whatever the test put there.
type IPv6 struct {
	// Src must be an address of the sending interface (link-local for VRRP).
	Src, Dst netip.Addr
	HopLimit int   // 0 means 255; 1..255 as given
	Next     uint8 // next header; 0 means 112 (VRRP)
	Payload  []byte
}

// SendIPv6 sends p out of interface ifname.
func SendIPv6(ifname string, p IPv6) error {
	if !p.Src.Is6() || !p.Dst.Is6() || p.Src.Is4In6() || p.Dst.Is4In6() {
		return fmt.Errorf("rawinject: IPv6 needs IPv6 source and destination, have %v -> %v", p.Src, p.Dst)
	}
	if p.HopLimit < 0 || p.HopLimit > 255 {
		return fmt.Errorf("rawinject: hop limit %d out of range", p.HopLimit)
	}
	hop, next := p.HopLimit, int(p.Next)
	if hop == 0 {
		hop = 255
	}
	if next == 0 {
		next = 112
	}
	idx, err := ifIndex(ifname)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, next)
	if err != nil {
		return fmt.Errorf("rawinject: raw IPv6 socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifname); err != nil {
		return fmt.Errorf("rawinject: bind to %s: %w", ifname, err)
	}
	// Source and hop limit ride in control messages: the hop limit applies to this packet
	// whatever the destination (unicast or multicast).
	oob := make([]byte, unix.CmsgSpace(unix.SizeofInet6Pktinfo)+unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(cmsgAt(oob, 0))
	h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_PKTINFO
	h.SetLen(unix.CmsgLen(unix.SizeofInet6Pktinfo))
	data := oob[unix.CmsgLen(0):]
	src := p.Src.As16()
	copy(data[0:16], src[:])
	binary.NativeEndian.PutUint32(data[16:20], uint32(idx))
	off := unix.CmsgSpace(unix.SizeofInet6Pktinfo)
	h = (*unix.Cmsghdr)(cmsgAt(oob, off))
	h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(oob[off+unix.CmsgLen(0):], uint32(hop))
	sa := &unix.SockaddrInet6{Addr: p.Dst.As16()}
	if p.Dst.IsLinkLocalUnicast() || p.Dst.IsLinkLocalMulticast() {
		sa.ZoneId = uint32(idx)
	}
	if err := unix.Sendmsg(fd, p.Payload, oob, sa, 0); err != nil {
		return fmt.Errorf("rawinject: send %d bytes %v -> %v on %s: %w", len(p.Payload), p.Src, p.Dst, ifname, err)
	}
	return nil
}

func ifIndex(ifname string) (int, error) {
	// if_nametoindex through an ioctl keeps this package free of the net package's
	// interface cache, and works in whatever namespace the calling thread is in.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("rawinject: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return 0, fmt.Errorf("rawinject: interface %q: %w", ifname, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("rawinject: interface %q: %w", ifname, err)
	}
	return int(ifr.Uint32()), nil
}

func cmsgAt(oob []byte, off int) unsafe.Pointer { return unsafe.Pointer(&oob[off]) }
