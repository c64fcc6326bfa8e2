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
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
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

// SendIPv4 sends p out of interface ifname through a raw socket with IP_HDRINCL, header
// and all, so the receiver sees exactly the TTL, source and protocol the test chose.
func SendIPv4(ifname string, p IPv4) error {
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	return SendIPv4Bytes(ifname, b)
}

// SendIPv4Bytes sends b, a complete IPv4 packet (header included), out of ifname. The
// header must parse (x/net/ipv4 writes it back); the kernel fills in the total length and
// the header checksum.
func SendIPv4Bytes(ifname string, b []byte) error {
	if len(b) < ipv4.HeaderLen {
		return errors.New("rawinject: an IPv4 packet needs at least a 20-byte header")
	}
	h, err := ipv4.ParseHeader(b)
	if err != nil {
		return fmt.Errorf("rawinject: %w", err)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("rawinject: interface %q: %w", ifname, err)
	}
	// A socket of the packet's own protocol: with IP_HDRINCL the header is the test's.
	c, err := net.ListenPacket("ip4:"+strconv.Itoa(h.Protocol), "0.0.0.0")
	if err != nil {
		return fmt.Errorf("rawinject: raw IPv4 socket: %w", err)
	}
	defer c.Close()
	rc, err := ipv4.NewRawConn(c)
	if err != nil {
		return fmt.Errorf("rawinject: raw IPv4 socket: %w", err)
	}
	if h.Dst.IsMulticast() {
		if err := rc.SetMulticastInterface(ifi); err != nil {
			return fmt.Errorf("rawinject: IP_MULTICAST_IF %s: %w", ifname, err)
		}
	}
	if err := rc.WriteTo(h, b[h.Len:], &ipv4.ControlMessage{IfIndex: ifi.Index}); err != nil {
		return fmt.Errorf("rawinject: send %d bytes to %v on %s: %w", len(b), h.Dst, ifname, err)
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
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("rawinject: interface %q: %w", ifname, err)
	}
	c, err := net.ListenPacket("ip6:"+strconv.Itoa(next), "::")
	if err != nil {
		return fmt.Errorf("rawinject: raw IPv6 socket: %w", err)
	}
	defer c.Close()
	// Source, interface and hop limit ride in control messages: the hop limit applies to
	// this packet whatever the destination (unicast or multicast). No IPV6_CHECKSUM is
	// set, so the kernel leaves the payload alone.
	cm := &ipv6.ControlMessage{HopLimit: hop, Src: p.Src.AsSlice(), IfIndex: ifi.Index}
	dst := &net.IPAddr{IP: p.Dst.AsSlice()}
	if p.Dst.IsLinkLocalUnicast() || p.Dst.IsLinkLocalMulticast() {
		dst.Zone = ifname
	}
	if _, err := ipv6.NewPacketConn(c).WriteTo(p.Payload, cm, dst); err != nil {
		return fmt.Errorf("rawinject: send %d bytes %v -> %v on %s: %w", len(p.Payload), p.Src, p.Dst, ifname, err)
	}
	return nil
}
