package pcapfile

import (
	"encoding/binary"
	"net/netip"
)

// Ethernet types of the frames ParseIP opens.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
)

// IPPacket is the IP header fields a protocol test needs, and the payload.
type IPPacket struct {
	Src, Dst netip.Addr
	// Protocol is the IPv4 protocol or the IPv6 next header after any extension headers
	// this function does not skip (it skips none: VRRP and ICMPv6 follow the fixed header).
	Protocol uint8
	// TTL is the IPv4 TTL or the IPv6 hop limit.
	TTL uint8
	// Payload is the bytes after the IP header, cut to the length the header gives, so
	// Ethernet padding is not part of it.
	Payload []byte
}

// ParseIP opens the IPv4 or IPv6 packet in a frame of the given link type (Ethernet, with
// at most one VLAN tag, or raw IP). ok is false for anything else (ARP, a truncated or
// malformed header, IPv4 fragments other than the first).
func ParseIP(lt LinkType, frame []byte) (p IPPacket, ok bool) {
	var b []byte
	switch lt {
	case LinkTypeEthernet:
		if len(frame) < 14 {
			return p, false
		}
		et := binary.BigEndian.Uint16(frame[12:])
		b = frame[14:]
		if et == etherTypeVLAN {
			if len(b) < 4 {
				return p, false
			}
			et, b = binary.BigEndian.Uint16(b[2:]), b[4:]
		}
		if et != etherTypeIPv4 && et != etherTypeIPv6 {
			return p, false
		}
	case LinkTypeRaw:
		b = frame
	default:
		return p, false
	}
	if len(b) < 1 {
		return p, false
	}
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return p, false
		}
		ihl := int(b[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(b[2:]))
		if ihl < 20 || total < ihl || total > len(b) {
			return p, false
		}
		if binary.BigEndian.Uint16(b[6:])&0x1fff != 0 { // a later fragment
			return p, false
		}
		p.Src = netip.AddrFrom4([4]byte(b[12:16]))
		p.Dst = netip.AddrFrom4([4]byte(b[16:20]))
		p.Protocol, p.TTL = b[9], b[8]
		p.Payload = b[ihl:total]
		return p, true
	case 6:
		if len(b) < 40 {
			return p, false
		}
		n := int(binary.BigEndian.Uint16(b[4:]))
		if 40+n > len(b) {
			return p, false
		}
		p.Src = netip.AddrFrom16([16]byte(b[8:24]))
		p.Dst = netip.AddrFrom16([16]byte(b[24:40]))
		p.Protocol, p.TTL = b[6], b[7]
		p.Payload = b[40 : 40+n]
		return p, true
	}
	return p, false
}
