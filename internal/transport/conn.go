package transport

import (
	"errors"
	"net/netip"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Family is the address family of a Conn (the protocol core's).
type Family = vrrp.Family

// The two families VRRP runs over.
const (
	IPv4 = vrrp.IPv4
	IPv6 = vrrp.IPv6
)

// Errors a Conn reports. Except ErrClosed they come wrapped with the interface name and the
// failing step, so test them with errors.Is. The daemon turns ErrNoInterface, ErrInterfaceDown and
// ErrNoAddress into FAULT and retries later; they are not fatal.
var (
	ErrNoInterface   = errors.New("no such interface")
	ErrInterfaceDown = errors.New("interface is down")
	ErrNoAddress     = errors.New("no usable source address")
	ErrClosed        = errors.New("transport: connection closed")
)

// errFamily is Open's and Send's answer to an address of the wrong family: a caller bug,
// never a state to recover from, so not one of the errors above.
var errFamily = errors.New("address family mismatch")

// Default batch geometry. 64 slots drain a burst of 255 masters' adverts in four calls;
// each slot holds the largest valid VRRP packet of the socket's family, so no valid
// advertisement is ever truncated: MaxPacketSize4 is a maximal IPv4 header (a raw IPv4
// socket reads it) and VRRPv2 with 255 addresses and its 8 bytes of authentication data;
// MaxPacketSize, v3 over IPv6 with 255 addresses (a raw IPv6 socket reads no header), and
// an upper bound for both. An IPv4 slot of the IPv6 size would spread a burst of small
// adverts over a page each, up to 256 KiB resident per socket, where the whole buffer of
// 1 KiB slots is 68 KiB (issue 12's memory).
const (
	DefaultBatchSize = 64
	MaxPacketSize    = 60 + 8 + 255*16
	MaxPacketSize4   = 60 + 8 + 255*4 + 8
)

// maxPacket is the largest VRRP packet a socket of the family reads.
func maxPacket(f Family) int {
	if f == IPv4 {
		return MaxPacketSize4
	}
	return MaxPacketSize
}

// readBuffer is the socket receive buffer in bytes (SO_RCVBUF, forced when running as
// root): 4 MiB, enough to ride out a scheduling stall with 255 instances.
const readBuffer = 4 << 20

// Options tune Open. The zero value joins the standard group and picks the source address
// from the interface.
type Options struct {
	// Group is the multicast group to join and to send multicast adverts to: keepalived's
	// vrrp_mcast_group4 / vrrp_mcast_group6. Zero means 224.0.0.18 or ff02::12.
	Group netip.Addr
	// NoJoin skips joining Group, for an interface where every instance is unicast (as
	// keepalived does with unicast_peer). Sending to Group still works.
	NoJoin bool
	// Source is the source address to send from (keepalived's unicast_src_ip). Zero means
	// the interface's primary IPv4 address, or its IPv6 link-local address.
	Source netip.Addr
	// SourceInterface, when set, is the interface whose address Source defaults to,
	// instead of the one the Conn is on: a virtual MAC interface (keepalived's use_vmac)
	// has no address of its own, and keepalived sends from its parent's.
	SourceInterface string
	// BatchSize is the most packets one ReadBatch returns; zero means DefaultBatchSize.
	BatchSize int
	// PacketSocket sends multicast advertisements as frames on a packet socket, with the
	// same headers, instead of through the raw IP socket (linksend_linux.go): less CPU on
	// a master, but netfilter's OUTPUT and POSTROUTING hooks and the kernel's IP output
	// counters no longer see them. Off by default: adverts go through the IP stack, as
	// keepalived's do, so that the host's firewall applies to them. Only Ethernet
	// interfaces; unicast adverts always go through the IP stack.
	PacketSocket bool
}

// A Packet is one received VRRP message.
type Packet struct {
	// Payload is the VRRP message with the IP header stripped. It points into a buffer
	// owned by the Conn and is valid only until the next ReadBatch.
	Payload []byte
	// Src and Dst are the IP source and destination (Dst is the group for multicast).
	// IPv6 link-local sources carry no zone, so they compare equal to configured peers.
	Src, Dst netip.Addr
	// TTL is the IPv4 TTL or the IPv6 hop limit as received; VRRP requires 255.
	TTL int
	// IfIndex is the index of the interface the packet arrived on.
	IfIndex int
	// Arrived is when the kernel received the packet (SO_TIMESTAMPNS, the wall clock), zero
	// when it did not say. A receiver that times from an advertisement's arrival
	// (Master_Down_Timer) uses it rather than the moment it got around to reading it.
	Arrived time.Time
}

// Stats are a Conn's own counters: packets that never reached a caller because they could
// not be attributed to any virtual router.
type Stats struct {
	// Received counts packets handed to the caller.
	Received uint64
	// Dropped counts packets the Conn discarded: larger than maxPacket, with an IPv4
	// header that does not parse, or from another interface (a race at socket creation).
	Dropped uint64
}
