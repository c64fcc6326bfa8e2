package conflict

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/bpf"
)

var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// arpProbe is the RFC 5227 ARP probe for ip from mac: a broadcast request with sender IP
// 0.0.0.0 and target MAC zero. Whoever holds ip answers it (Linux replies to a probe
// unicast, to mac), and nobody's ARP cache learns anything from it, where a request from
// the VIP would rewrite the other holder's entries for it.
func arpProbe(mac net.HardwareAddr, ip netip.Addr) ([]byte, error) {
	p, err := arp.NewPacket(arp.OperationRequest, mac, netip.IPv4Unspecified(), zeroMAC, ip)
	if err != nil {
		return nil, fmt.Errorf("conflict: ARP probe for %v: %w", ip, err)
	}
	b, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	f := ethernet.Frame{Destination: ethernet.Broadcast, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: b}
	return f.MarshalBinary()
}

// nsProbe is a neighbour solicitation for ip from src, the interface's link-local
// address, with mac as its source link-layer address, to ip's solicited-node group
// (RFC 4861 §7.2.2), hop limit 255: a node holding ip answers with a solicited
// advertisement unicast to mac, which nobody else hears, where an answer to a duplicate
// address detection probe (from ::) would go to all nodes and move every neighbour's
// entry for ip to the other holder, once a probe. Without a link-local address (IPv6
// addresses off on the interface) it is that probe, from :: without the option (RFC 4862
// §5.4.2), all the same: better an answer everyone hears than none. vrrpd adds its VIPs
// without DAD (IFA_F_NODAD), so neither form makes another vrrpd's VIP fail DAD.
func nsProbe(mac net.HardwareAddr, src, ip netip.Addr) ([]byte, error) {
	dst, err := ndp.SolicitedNodeMulticast(ip)
	if err != nil {
		return nil, fmt.Errorf("conflict: neighbour solicitation for %v: %w", ip, err)
	}
	ns := &ndp.NeighborSolicitation{TargetAddress: ip.WithZone("")}
	if src.IsValid() {
		src = src.WithZone("")
		ns.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: mac}}
	} else {
		src = netip.IPv6Unspecified()
	}
	icmp, err := ndp.MarshalMessageChecksum(ns, src, dst)
	if err != nil {
		return nil, fmt.Errorf("conflict: neighbour solicitation for %v: %w", ip, err)
	}
	// The IPv6 header: x/net/ipv6 parses one but does not marshal it.
	hdr := make([]byte, 40, 40+len(icmp))
	hdr[0] = 6 << 4
	binary.BigEndian.PutUint16(hdr[4:6], uint16(len(icmp)))
	hdr[6] = 58           // ICMPv6
	hdr[7] = ndp.HopLimit // 255, or receivers drop it (RFC 4861 §7.1.1)
	sa, d := src.As16(), dst.As16()
	copy(hdr[8:24], sa[:])
	copy(hdr[24:40], d[:])
	// 33:33 and the group's last four bytes (RFC 2464 §7).
	dmac := net.HardwareAddr{0x33, 0x33, d[12], d[13], d[14], d[15]}
	f := ethernet.Frame{Destination: dmac, Source: mac, EtherType: ethernet.EtherTypeIPv6, Payload: append(hdr, icmp...)}
	return f.MarshalBinary()
}

// claim is one frame's claim on an address: mac says it holds addr. src is the frame's
// Ethernet source, which differs from mac only for a proxy or a forged frame.
type claim struct {
	addr     netip.Addr
	mac, src string
}

// parseClaim reads a frame that the sockets' filters let through: an ARP reply, or a
// gratuitous ARP request (sender IP = target IP), claims its sender IP for its sender
// MAC; a neighbour advertisement claims its target for its target link-layer address, or
// for the frame's source without one. Anything else, or anything malformed, is no claim.
func parseClaim(b []byte) (claim, bool) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		return claim{}, false
	}
	switch f.EtherType {
	case ethernet.EtherTypeARP:
		var p arp.Packet
		if err := p.UnmarshalBinary(f.Payload); err != nil || len(p.SenderHardwareAddr) != 6 {
			return claim{}, false
		}
		gratuitous := p.Operation == arp.OperationRequest && p.SenderIP == p.TargetIP
		if (p.Operation != arp.OperationReply && !gratuitous) || !p.SenderIP.Is4() || p.SenderIP.IsUnspecified() {
			return claim{}, false
		}
		return claim{p.SenderIP, p.SenderHardwareAddr.String(), f.Source.String()}, true
	case ethernet.EtherTypeIPv6:
		ip6 := f.Payload
		if len(ip6) < 40 || ip6[0]>>4 != 6 || ip6[6] != 58 || ip6[7] != ndp.HopLimit {
			return claim{}, false
		}
		n := int(binary.BigEndian.Uint16(ip6[4:6]))
		if 40+n > len(ip6) {
			return claim{}, false
		}
		m, err := ndp.ParseMessage(ip6[40 : 40+n])
		if err != nil {
			return claim{}, false
		}
		na, ok := m.(*ndp.NeighborAdvertisement)
		if !ok {
			return claim{}, false
		}
		mac := f.Source
		for _, o := range na.Options {
			if l, ok := o.(*ndp.LinkLayerAddress); ok && l.Direction == ndp.Target && len(l.Addr) == 6 {
				mac = l.Addr
			}
		}
		return claim{na.TargetAddress, mac.String(), f.Source.String()}, true
	}
	return claim{}, false
}

// Offsets in an untagged Ethernet frame.
const (
	offARPOp       = 14 + 6
	offARPSPA      = 14 + 14
	offARPTPA      = 14 + 24
	offIPv6Next    = 14 + 6
	offICMPv6Type  = 14 + 40
	packetOutgoing = 4 // skb->pkt_type PACKET_OUTGOING: a frame this host sent
	snapLen        = 256
)

// arpFilter passes, of the ARP frames the interface receives (never those this host
// sends), the replies and the gratuitous requests; every other request on the segment is
// dropped in the kernel, so a busy LAN's ARP traffic wakes nobody.
func arpFilter() ([]bpf.RawInstruction, error) {
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: packetOutgoing, SkipTrue: 8},
		bpf.LoadAbsolute{Off: offARPOp, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(arp.OperationReply), SkipTrue: 5},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(arp.OperationRequest), SkipFalse: 5},
		bpf.LoadAbsolute{Off: offARPSPA, Size: 4},
		bpf.TAX{},
		bpf.LoadAbsolute{Off: offARPTPA, Size: 4},
		bpf.JumpIfX{Cond: bpf.JumpNotEqual, SkipTrue: 1},
		bpf.RetConstant{Val: snapLen},
		bpf.RetConstant{Val: 0},
	})
}

// naFilter passes, of the IPv6 frames the interface receives (never those this host
// sends), the ICMPv6 neighbour advertisements without extension headers (RFC 4861 §7.1.2
// lets receivers drop the rest); all other IPv6 traffic, VRRP's included, is dropped in
// the kernel.
func naFilter() ([]bpf.RawInstruction, error) {
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: packetOutgoing, SkipTrue: 5},
		bpf.LoadAbsolute{Off: offIPv6Next, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 58, SkipTrue: 3},
		bpf.LoadAbsolute{Off: offICMPv6Type, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 136, SkipTrue: 1},
		bpf.RetConstant{Val: snapLen},
		bpf.RetConstant{Val: 0},
	})
}
