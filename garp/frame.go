package garp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"
)

// EtherTypes of the frames this package writes.
const (
	etherTypeARP  = 0x0806
	etherTypeIPv6 = 0x86dd
)

var (
	broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	// allNodes is ff02::1, where unsolicited NAs go (RFC 4861 7.2.6).
	allNodes    = netip.MustParseAddr("ff02::1")
	allNodesMAC = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}
)

// errNotEthernet means the interface has no 6-byte hardware address.
var errNotEthernet = errors.New("garp: not an Ethernet interface")

// garpFrame returns the gratuitous ARP keepalived sends for ip from an
// interface with hardware address mac: an Ethernet broadcast carrying an
// ARP request whose sender and target IP are both ip and whose target MAC
// is the broadcast address (42 bytes; the NIC pads it on the wire).
func garpFrame(mac net.HardwareAddr, ip netip.Addr) ([]byte, error) {
	if len(mac) != 6 {
		return nil, errNotEthernet
	}
	if !ip.Is4() {
		return nil, fmt.Errorf("garp: gratuitous ARP for %v: not an IPv4 address", ip)
	}
	p, err := arp.NewPacket(arp.OperationRequest, mac, ip, broadcastMAC, ip)
	if err != nil {
		return nil, fmt.Errorf("garp: %w", err)
	}
	payload, err := p.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("garp: %w", err)
	}
	return ethernetFrame(broadcastMAC, mac, etherTypeARP, payload), nil
}

// naFrame returns the unsolicited neighbour advertisement keepalived sends
// for ip: from ip to ff02::1 (Ethernet 33:33:00:00:00:01), hop limit 255,
// flow label 0, Override set, Solicited clear, Router as given (keepalived
// sets it when the interface forwards IPv6), with a target link-layer
// address option carrying mac.
func naFrame(mac net.HardwareAddr, ip netip.Addr, router bool) ([]byte, error) {
	if len(mac) != 6 {
		return nil, errNotEthernet
	}
	if !ip.Is6() || ip.Is4In6() {
		return nil, fmt.Errorf("garp: neighbour advertisement for %v: not an IPv6 address", ip)
	}
	ip = ip.WithZone("")
	na := &ndp.NeighborAdvertisement{
		Router:        router,
		Override:      true,
		TargetAddress: ip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
	}
	icmp, err := ndp.MarshalMessageChecksum(na, ip, allNodes)
	if err != nil {
		return nil, fmt.Errorf("garp: %w", err)
	}
	hdr := make([]byte, 40, 40+len(icmp))
	hdr[0] = 6 << 4 // version 6, traffic class 0, flow label 0
	binary.BigEndian.PutUint16(hdr[4:6], uint16(len(icmp)))
	hdr[6] = 58           // next header: ICMPv6
	hdr[7] = ndp.HopLimit // 255, or receivers must drop it (RFC 4861 7.1.2)
	src, dst := ip.As16(), allNodes.As16()
	copy(hdr[8:24], src[:])
	copy(hdr[24:40], dst[:])
	return ethernetFrame(allNodesMAC, mac, etherTypeIPv6, append(hdr, icmp...)), nil
}

// ethernetFrame builds an untagged frame without padding, as keepalived
// hands it to its packet socket.
func ethernetFrame(dst, src net.HardwareAddr, etherType uint16, payload []byte) []byte {
	b := make([]byte, 14, 14+len(payload))
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:14], etherType)
	return append(b, payload...)
}
