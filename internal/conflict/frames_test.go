package conflict

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/bpf"
)

var (
	ourMAC   = net.HardwareAddr{0x52, 0x54, 0, 0, 0, 1}
	theirMAC = net.HardwareAddr{0x52, 0x54, 0, 0, 0, 2}
	vip4     = netip.MustParseAddr("10.99.0.100")
	vip6     = netip.MustParseAddr("fd00:99::100")
)

func arpFrame(t *testing.T, op arp.Operation, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) []byte {
	t.Helper()
	p, err := arp.NewPacket(op, sha, spa, tha, tpa)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.MarshalBinary()
	f := ethernet.Frame{Destination: ethernet.Broadcast, Source: sha, EtherType: ethernet.EtherTypeARP, Payload: b}
	out, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// naFrame is a neighbour advertisement for target from mac, with or without a target
// link-layer address option.
func naFrame(t *testing.T, mac net.HardwareAddr, target netip.Addr, tlla bool) []byte {
	t.Helper()
	na := &ndp.NeighborAdvertisement{Override: true, TargetAddress: target}
	if tlla {
		na.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}}
	}
	src := netip.MustParseAddr("fe80::2")
	dst := netip.MustParseAddr("ff02::1")
	icmp, err := ndp.MarshalMessageChecksum(na, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 40)
	hdr[0] = 6 << 4
	binary.BigEndian.PutUint16(hdr[4:6], uint16(len(icmp)))
	hdr[6], hdr[7] = 58, 255
	s, d := src.As16(), dst.As16()
	copy(hdr[8:24], s[:])
	copy(hdr[24:40], d[:])
	f := ethernet.Frame{Destination: net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}, Source: mac, EtherType: ethernet.EtherTypeIPv6, Payload: append(hdr, icmp...)}
	out, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestARPProbe: RFC 5227's probe, byte for byte where it matters: broadcast, request,
// sender IP 0.0.0.0 (so it teaches nobody's cache anything), target MAC zero; and it is
// no claim itself.
func TestARPProbe(t *testing.T) {
	b, err := arpProbe(ourMAC, vip4)
	if err != nil {
		t.Fatal(err)
	}
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Destination, ethernet.Broadcast) || !bytes.Equal(f.Source, ourMAC) || f.EtherType != ethernet.EtherTypeARP {
		t.Fatalf("frame %v -> %v type %v", f.Source, f.Destination, f.EtherType)
	}
	var p arp.Packet
	if err := p.UnmarshalBinary(f.Payload); err != nil {
		t.Fatal(err)
	}
	if p.Operation != arp.OperationRequest || !p.SenderIP.IsUnspecified() || p.TargetIP != vip4 ||
		!bytes.Equal(p.SenderHardwareAddr, ourMAC) || !bytes.Equal(p.TargetHardwareAddr, zeroMAC) {
		t.Fatalf("probe %+v", p)
	}
	if c, ok := parseClaim(b); ok {
		t.Errorf("the probe parsed as a claim: %+v", c)
	}
}

// TestNSProbe: a neighbour solicitation from the link-local address with the source
// link-layer option (answered unicast, to this host alone), or without one RFC 4862's
// duplicate address detection form: from ::, no option. Both to the solicited-node group
// and its MAC, hop limit 255, the target, a valid checksum, and no claim themselves.
func TestNSProbe(t *testing.T) {
	ll := netip.MustParseAddr("fe80::5054:ff:fe00:1")
	for _, tc := range []struct {
		name string
		src  netip.Addr
		opts int
	}{{"from the link-local address", ll, 1}, {"without one: from ::", netip.Addr{}, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := nsProbe(ourMAC, tc.src, vip6)
			if err != nil {
				t.Fatal(err)
			}
			var f ethernet.Frame
			if err := f.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if want := (net.HardwareAddr{0x33, 0x33, 0xff, 0, 0x01, 0}); !bytes.Equal(f.Destination, want) || f.EtherType != ethernet.EtherTypeIPv6 {
				t.Fatalf("to %v type %v, want %v IPv6", f.Destination, f.EtherType, want)
			}
			ip6 := f.Payload
			src, _ := netip.AddrFromSlice(ip6[8:24])
			dst, _ := netip.AddrFromSlice(ip6[24:40])
			wantSrc := tc.src
			if !wantSrc.IsValid() {
				wantSrc = netip.IPv6Unspecified()
			}
			if ip6[6] != 58 || ip6[7] != 255 || src != wantSrc || dst != netip.MustParseAddr("ff02::1:ff00:100") {
				t.Fatalf("IPv6 header: next %d hop %d %v -> %v", ip6[6], ip6[7], src, dst)
			}
			n := int(binary.BigEndian.Uint16(ip6[4:6]))
			icmp := ip6[40 : 40+n]
			m, err := ndp.ParseMessage(icmp)
			if err != nil {
				t.Fatal(err)
			}
			ns, ok := m.(*ndp.NeighborSolicitation)
			if !ok || ns.TargetAddress != vip6 || len(ns.Options) != tc.opts {
				t.Fatalf("message %#v", m)
			}
			if tc.opts == 1 {
				if l, ok := ns.Options[0].(*ndp.LinkLayerAddress); !ok || l.Direction != ndp.Source || !bytes.Equal(l.Addr, ourMAC) {
					t.Errorf("option %#v, want the source link-layer address %v", ns.Options[0], ourMAC)
				}
			}
			// The checksum: the same message marshalled with the pseudo-header matches.
			want, _ := ndp.MarshalMessageChecksum(ns, src, dst)
			if !bytes.Equal(icmp, want) {
				t.Error("checksum differs")
			}
			if c, ok := parseClaim(b); ok {
				t.Errorf("the probe parsed as a claim: %+v", c)
			}
		})
	}
}

// TestParseClaim: replies, gratuitous ARPs and neighbour advertisements claim an address
// for a MAC; ordinary requests, probes and junk claim nothing.
func TestParseClaim(t *testing.T) {
	zero := netip.IPv4Unspecified()
	other := netip.MustParseAddr("10.99.0.12")
	for _, tc := range []struct {
		name  string
		frame []byte
		want  claim
		ok    bool
	}{
		{"reply to a probe", arpFrame(t, arp.OperationReply, theirMAC, vip4, ourMAC, zero), claim{vip4, theirMAC.String(), theirMAC.String()}, true},
		{"gratuitous request", arpFrame(t, arp.OperationRequest, theirMAC, vip4, ethernet.Broadcast, vip4), claim{vip4, theirMAC.String(), theirMAC.String()}, true},
		{"gratuitous reply", arpFrame(t, arp.OperationReply, theirMAC, vip4, ethernet.Broadcast, vip4), claim{vip4, theirMAC.String(), theirMAC.String()}, true},
		{"ordinary request", arpFrame(t, arp.OperationRequest, theirMAC, other, zeroMAC, vip4), claim{}, false},
		{"NA with a target link-layer address", naFrame(t, theirMAC, vip6, true), claim{vip6, theirMAC.String(), theirMAC.String()}, true},
		{"NA without one: the frame's source", naFrame(t, theirMAC, vip6, false), claim{vip6, theirMAC.String(), theirMAC.String()}, true},
		{"short", []byte{1, 2, 3}, claim{}, false},
		{"truncated NA", naFrame(t, theirMAC, vip6, true)[:70], claim{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseClaim(tc.frame)
			if ok != tc.ok || got != tc.want {
				t.Errorf("parseClaim = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzParseClaim: nothing a wire can carry makes the parser panic.
func FuzzParseClaim(f *testing.F) {
	b, _ := arpProbe(ourMAC, vip4)
	f.Add(b)
	b, _ = nsProbe(ourMAC, netip.MustParseAddr("fe80::1"), vip6)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) { parseClaim(b) })
}

// TestFiltersAssemble: the kernel filters assemble (x/net/bpf's VM cannot run their
// packet-type load; their behaviour on real frames is test/vrrpd's: another host's answer
// arrives, this host's own frames and VRRP do not).
func TestFiltersAssemble(t *testing.T) {
	for name, f := range map[string]func() ([]bpf.RawInstruction, error){"ARP": arpFilter, "NA": naFilter} {
		if ins, err := f(); err != nil || len(ins) == 0 {
			t.Errorf("%s filter: %d instructions, %v", name, len(ins), err)
		}
	}
}
