package transport

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestDecodeIPv4(t *testing.T) {
	vrrpMsg := []byte{0x31, 7, 100, 1, 0, 100, 0xab, 0xcd, 10, 99, 0, 100}
	hdr := []byte{
		0x45, 0, 0, 0, 0, 0, 0, 0, 255, 112, 0, 0,
		10, 99, 0, 10, // src
		224, 0, 0, 18, // dst
	}
	pkt := append(append([]byte{}, hdr...), vrrpMsg...)
	binary.BigEndian.PutUint16(pkt[2:4], uint16(len(pkt)))

	withOpts := append([]byte{0x46}, pkt[1:20]...)
	withOpts = append(withOpts, 0x94, 0x04, 0, 0) // router alert option
	withOpts = append(withOpts, vrrpMsg...)
	binary.BigEndian.PutUint16(withOpts[2:4], uint16(len(withOpts)))

	padded := append(append([]byte{}, pkt...), 0, 0, 0, 0) // link padding past total length

	tests := []struct {
		name    string
		b       []byte
		ok      bool
		payload []byte
	}{
		{"plain", pkt, true, vrrpMsg},
		{"options skipped", withOpts, true, vrrpMsg},
		{"padding trimmed", padded, true, vrrpMsg},
		{"empty", nil, false, nil},
		{"short header", pkt[:19], false, nil},
		{"not IPv4", append([]byte{0x65}, pkt[1:]...), false, nil},
		{"IHL below 5", append([]byte{0x44}, pkt[1:]...), false, nil},
		{"IHL past end", append([]byte{0x4f}, pkt[1:24]...), false, nil},
		{"total below IHL", func() []byte {
			b := append([]byte{}, pkt...)
			binary.BigEndian.PutUint16(b[2:4], 10)
			return b
		}(), false, nil},
		{"total past capture is clipped", func() []byte {
			b := append([]byte{}, pkt...)
			binary.BigEndian.PutUint16(b[2:4], 9000)
			return b
		}(), true, vrrpMsg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Packet
			ok := decodeIPv4(tt.b, &p)
			if ok != tt.ok {
				t.Fatalf("decodeIPv4 ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if string(p.Payload) != string(tt.payload) {
				t.Errorf("payload = % x, want % x", p.Payload, tt.payload)
			}
			if p.TTL != 255 || p.Src != netip.MustParseAddr("10.99.0.10") || p.Dst != netip.MustParseAddr("224.0.0.18") {
				t.Errorf("got TTL %d %v -> %v", p.TTL, p.Src, p.Dst)
			}
		})
	}
}

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestParseControl(t *testing.T) {
	pi6 := make([]byte, unix.SizeofInet6Pktinfo)
	dst := netip.MustParseAddr("ff02::12").As16()
	copy(pi6, dst[:])
	binary.NativeEndian.PutUint32(pi6[16:], 7)
	hop := binary.NativeEndian.AppendUint32(nil, 254)
	oob := append(cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, pi6), cmsg(unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, hop)...)
	var p Packet
	if err := parseControl(oob, &p); err != nil {
		t.Fatal(err)
	}
	if p.Dst != netip.MustParseAddr("ff02::12") || p.IfIndex != 7 || p.TTL != 254 {
		t.Errorf("IPv6 control: dst %v ifindex %d hop limit %d", p.Dst, p.IfIndex, p.TTL)
	}

	pi4 := make([]byte, unix.SizeofInet4Pktinfo)
	binary.NativeEndian.PutUint32(pi4, 3)
	p = Packet{}
	if err := parseControl(cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, pi4), &p); err != nil || p.IfIndex != 3 {
		t.Errorf("IPv4 control: ifindex %d, err %v", p.IfIndex, err)
	}

	// The kernel's arrival stamp, as SO_TIMESTAMPNS delivers it, beside the IPv4 one.
	ts := binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 1764000000), 123456789)
	p = Packet{}
	if err := parseControl(append(cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, pi4), cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts)...), &p); err != nil ||
		!p.Arrived.Equal(time.Unix(1764000000, 123456789)) || p.IfIndex != 3 {
		t.Errorf("timestamp control: arrived %v ifindex %d, err %v", p.Arrived, p.IfIndex, err)
	}
	// A short one is not read.
	p = Packet{}
	if err := parseControl(cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts[:8]), &p); err != nil || !p.Arrived.IsZero() {
		t.Errorf("short timestamp: arrived %v, err %v", p.Arrived, err)
	}

	// A length field pointing past the buffer is an error, not a panic.
	bad := cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, pi4)
	(*unix.Cmsghdr)(unsafe.Pointer(&bad[0])).SetLen(len(bad) + 100)
	if err := parseControl(bad, &Packet{}); !errors.Is(err, errControl) {
		t.Errorf("overlong cmsg: err = %v, want errControl", err)
	}
	// A truncated trailing header is ignored.
	if err := parseControl(append(cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, pi4), 1, 2, 3), &Packet{}); err != nil {
		t.Errorf("trailing bytes: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x45, 0, 0, 24, 0, 0, 0, 0, 255, 112, 0, 0, 10, 99, 0, 10, 224, 0, 0, 18, 1, 2, 3, 4}, []byte{})
	f.Fuzz(func(t *testing.T, b, oob []byte) {
		var p Packet
		if decodeIPv4(b, &p) && len(p.Payload) > len(b) {
			t.Fatalf("payload longer than packet")
		}
		// parseControl reads the header through unsafe; give it aligned memory as the
		// kernel does.
		aligned := make([]uint64, (len(oob)+7)/8)
		buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(aligned))), len(aligned)*8)[:len(oob)]
		copy(buf, oob)
		_ = parseControl(buf, &p)
	})
}

func TestOpenRejectsBadOptions(t *testing.T) {
	cases := []struct {
		fam Family
		opt Options
	}{
		{Family(5), Options{}},
		{IPv4, Options{Group: netip.MustParseAddr("ff02::12")}},
		{IPv4, Options{Group: netip.MustParseAddr("10.99.0.1")}},
		{IPv6, Options{Group: netip.MustParseAddr("224.0.0.18")}},
		{IPv6, Options{Source: netip.MustParseAddr("10.99.0.1")}},
	}
	for _, c := range cases {
		if _, err := Open("lo", c.fam, c.opt); !errors.Is(err, errFamily) {
			t.Errorf("Open(lo, %v, %+v) = %v, want errFamily", c.fam, c.opt, err)
		}
	}
}
