package fuzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/pcapfile"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// captureSeed is one distinct advertisement of the keepalived captures.
type captureSeed struct {
	msg      []byte
	src, dst netip.Addr
}

// captureSeeds reads every VRRP message of the keepalived captures in testdata/keepalived,
// without duplicates (keepalived repeats the same bytes every interval).
func captureSeeds(f *testing.F) []captureSeed {
	f.Helper()
	files, err := fixture.KeepalivedCaptures()
	if err != nil || len(files) == 0 {
		f.Fatalf("no captures in testdata/keepalived: %v", err)
	}
	seen := map[string]bool{}
	var seeds []captureSeed
	for _, file := range files {
		pkts, err := pcapfile.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range pkts {
			ip, ok := pcapfile.ParseIP(p.LinkType, p.Data)
			if !ok || ip.Protocol != vrrp.IPProtocol {
				continue
			}
			key := string(ip.Payload) + ip.Src.String() + ip.Dst.String()
			if seen[key] {
				continue
			}
			seen[key] = true
			seeds = append(seeds, captureSeed{msg: ip.Payload, src: ip.Src, dst: ip.Dst})
		}
	}
	if len(seeds) == 0 {
		f.Fatal("no advertisements in the captures")
	}
	return seeds
}

var decodingErrors = []error{
	vrrp.ErrPacketLength, vrrp.ErrAddressCount, vrrp.ErrVersion, vrrp.ErrInvalidType,
	vrrp.ErrChecksum, vrrp.ErrAdvertIntervalZero, vrrp.ErrNoAddresses,
}

// checkDecode is the property both decode targets check: Unmarshal never panics, fails only
// with one of its documented errors, and whatever it accepts re-encodes to the same bytes.
//
// Three things in an accepted message are not carried by Advertisement and so cannot come
// back byte for byte: the reserved bits in front of the v3 interval (ignored on receive),
// a v3 IPv4 checksum in a form other than the pseudo-header one the encoder always writes,
// and a checksum written as 0xffff where 0x0000 is computed (one's complement's other
// zero). For those the re-encoding must differ from the input in exactly those fields, and
// decode to the same advertisement in the canonical form.
func checkDecode(t *testing.T, msg []byte, src, dst netip.Addr) {
	var a vrrp.Advertisement
	if err := a.Unmarshal(msg, src, dst); err != nil {
		for _, e := range decodingErrors {
			if errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("Unmarshal returned an undocumented error: %v", err)
	}
	if len(a.Addresses) != int(msg[3]) {
		t.Fatalf("%d addresses decoded, count says %d", len(a.Addresses), msg[3])
	}
	wire := a.Checksum
	out, err := a.AppendMarshal(nil, src, dst)

	// Decoding accepts a v2 advertisement whose auth type or interval the instance rejects
	// later (CheckAuth, the interval comparison); the encoder refuses to send those.
	if a.Version == vrrp.Version2 && (a.AuthType > vrrp.AuthSimple || a.AdvertIntervalSeconds == 0) {
		if err == nil {
			t.Fatalf("AppendMarshal accepted v2 auth type %d interval %d", a.AuthType, a.AdvertIntervalSeconds)
		}
		return
	}
	if err != nil {
		t.Fatalf("AppendMarshal of a decoded advertisement: %v", err)
	}
	if len(out) != len(msg) || a.Len() != len(msg) {
		t.Fatalf("re-encoded %d bytes (Len %d), input %d", len(out), a.Len(), len(msg))
	}

	reserved := a.Version == vrrp.Version3 && msg[4]&0xf0 != 0
	negativeZero := wire == 0xffff && a.Checksum == 0
	if a.ChecksumForm == vrrp.ChecksumPseudoHeader && !reserved && !negativeZero {
		if !bytes.Equal(out, msg) {
			t.Fatalf("re-encoded\n %x\ninput\n %x", out, msg)
		}
		return
	}
	masked := func(b []byte) []byte {
		b = bytes.Clone(b)
		if a.Version == vrrp.Version3 {
			b[4] &= 0x0f
		}
		b[6], b[7] = 0, 0
		return b
	}
	if !bytes.Equal(masked(out), masked(msg)) {
		t.Fatalf("non-canonical input (form %v, reserved bits %v, checksum %#04x) re-encoded beyond the checksum and reserved bits:\n %x\ninput\n %x",
			a.ChecksumForm, reserved, wire, out, msg)
	}
	if !reserved && a.ChecksumForm == vrrp.ChecksumPseudoHeader && binary.BigEndian.Uint16(out[6:]) != 0 {
		t.Fatalf("checksum 0xffff re-encoded as %#04x, want 0x0000", binary.BigEndian.Uint16(out[6:]))
	}
	var b vrrp.Advertisement
	if err := b.Unmarshal(out, src, dst); err != nil {
		t.Fatalf("re-encoded message does not decode: %v", err)
	}
	if b.ChecksumForm != vrrp.ChecksumPseudoHeader || !sameFields(&a, &b) {
		t.Fatalf("re-encoded message decodes to %+v, want %+v", b, a)
	}
}

// sameFields compares what an advertisement says, leaving out how its checksum was made.
func sameFields(a, b *vrrp.Advertisement) bool {
	if a.Version != b.Version || a.Type != b.Type || a.VRID != b.VRID || a.Priority != b.Priority ||
		a.MaxAdvertInterval != b.MaxAdvertInterval || a.AdvertIntervalSeconds != b.AdvertIntervalSeconds ||
		a.AuthType != b.AuthType || a.AuthData != b.AuthData || len(a.Addresses) != len(b.Addresses) {
		return false
	}
	for i := range a.Addresses {
		if a.Addresses[i] != b.Addresses[i] {
			return false
		}
	}
	return true
}

// refSum is the one's complement sum (RFC 1071), folded, of the parts.
func refSum(parts ...[]byte) uint16 {
	var sum uint32
	for _, p := range parts {
		for i := 0; i < len(p); i += 2 {
			w := uint32(p[i]) << 8
			if i+1 < len(p) {
				w |= uint32(p[i+1])
			}
			sum += w
			for sum > 0xffff {
				sum = sum&0xffff + sum>>16
			}
		}
	}
	return uint16(sum)
}

// fixChecksum rewrites the checksum of msg (a copy) so that random mutations get past the
// checksum and reach the rest of the decoder: mode 1 over the pseudo-header (the RFC form
// for v3; v2 ignores it and fails, which is fine), mode 2 over the message alone (v2, and
// the v3 IPv4 form without pseudo-header). Any other mode leaves msg alone.
func fixChecksum(msg []byte, src, dst netip.Addr, mode uint8) []byte {
	if len(msg) < 8 || mode == 0 || mode > 2 {
		return msg
	}
	msg = bytes.Clone(msg)
	msg[6], msg[7] = 0, 0
	var pseudo []byte
	if mode == 1 {
		n := len(msg)
		if src.Is4() {
			pseudo = append(append(src.AsSlice(), dst.AsSlice()...), 0, vrrp.IPProtocol, byte(n>>8), byte(n))
		} else {
			pseudo = append(append(src.AsSlice(), dst.AsSlice()...), byte(n>>24), byte(n>>16), byte(n>>8), byte(n), 0, 0, 0, vrrp.IPProtocol)
		}
	}
	binary.BigEndian.PutUint16(msg[6:], ^refSum(pseudo, msg))
	return msg
}

func addr4(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

func addr6(b []byte) netip.Addr {
	var a [16]byte
	copy(a[:], b)
	return netip.AddrFrom16(a)
}

// FuzzDecodeIPv4 decodes arbitrary messages (v2, v3 and anything else) over IPv4. fix
// optionally repairs the checksum first (see fixChecksum), so that mutated messages are not
// all stopped by it.
func FuzzDecodeIPv4(f *testing.F) {
	for _, s := range captureSeeds(f) {
		if s.src.Is4() {
			src, dst := binary.BigEndian.Uint32(s.src.AsSlice()), binary.BigEndian.Uint32(s.dst.AsSlice())
			f.Add(s.msg, src, dst, uint8(0))
			f.Add(s.msg, src, dst, uint8(1)) // v3 unchanged, v2 broken
			f.Add(s.msg, src, dst, uint8(2)) // v2 unchanged, v3 in the plain form
		}
	}
	// Hand-made seeds for what the captures lack: the other v3 IPv4 checksum forms and v2
	// without authentication.
	h1, h2 := netip.MustParseAddr("10.99.0.11"), netip.MustParseAddr("10.99.0.12")
	u := vrrp.Advertisement{Version: vrrp.Version3, VRID: 51, Priority: 100, MaxAdvertInterval: 100,
		Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100")}}
	mcastForm, _ := u.AppendMarshal(nil, h1, vrrp.MulticastIPv4)
	f.Add(mcastForm, binary.BigEndian.Uint32(h1.AsSlice()), binary.BigEndian.Uint32(h2.AsSlice()), uint8(0))
	plain := fixChecksum(mcastForm, h1, h2, 2)
	f.Add(plain, binary.BigEndian.Uint32(h1.AsSlice()), binary.BigEndian.Uint32(h2.AsSlice()), uint8(0))
	v2 := vrrp.Advertisement{Version: vrrp.Version2, VRID: 7, Priority: 255, AdvertIntervalSeconds: 3,
		Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100"), netip.MustParseAddr("10.99.0.101")}}
	v2msg, _ := v2.AppendMarshal(nil, h1, vrrp.MulticastIPv4)
	f.Add(v2msg, binary.BigEndian.Uint32(h1.AsSlice()), binary.BigEndian.Uint32(vrrp.MulticastIPv4.AsSlice()), uint8(0))

	f.Fuzz(func(t *testing.T, msg []byte, src, dst uint32, fix uint8) {
		s, d := addr4(src), addr4(dst)
		checkDecode(t, fixChecksum(msg, s, d, fix), s, d)
	})
}

// FuzzDecodeIPv6 decodes arbitrary messages over IPv6 (where only v3 is valid). The
// addresses take the first 16 bytes of src and dst, zero-padded; fix is as for IPv4.
func FuzzDecodeIPv6(f *testing.F) {
	for _, s := range captureSeeds(f) {
		if s.src.Is6() {
			f.Add(s.msg, s.src.AsSlice(), s.dst.AsSlice(), uint8(0))
			f.Add(s.msg, s.src.AsSlice(), s.dst.AsSlice(), uint8(1))
		}
	}
	f.Fuzz(func(t *testing.T, msg, src, dst []byte, fix uint8) {
		s, d := addr6(src), addr6(dst)
		checkDecode(t, fixChecksum(msg, s, d, fix), s, d)
	})
}

// FuzzEncode builds advertisements from arbitrary fields: whatever the encoder accepts
// decodes back to the same fields in the canonical checksum form, at the length Len says.
func FuzzEncode(f *testing.F) {
	for _, s := range captureSeeds(f) {
		var a vrrp.Advertisement
		if err := a.Unmarshal(s.msg, s.src, s.dst); err != nil {
			f.Fatal(err)
		}
		var addrs []byte
		for _, x := range a.Addresses {
			addrs = append(addrs, x.AsSlice()...)
		}
		f.Add(uint8(a.Version), a.VRID, a.Priority, a.MaxAdvertInterval, a.AdvertIntervalSeconds,
			uint8(a.AuthType), a.AuthData[:], addrs, s.src.Is6(), s.src.AsSlice(), s.dst.AsSlice())
	}
	f.Fuzz(func(t *testing.T, version, vrid, prio uint8, interval uint16, seconds, authType uint8,
		authData, addrs []byte, ipv6 bool, src, dst []byte) {
		a := vrrp.Advertisement{
			Version: vrrp.Version(version), VRID: vrid, Priority: prio,
			MaxAdvertInterval: interval, AdvertIntervalSeconds: seconds, AuthType: vrrp.AuthType(authType),
		}
		copy(a.AuthData[:], authData)
		addrLen := 4
		if ipv6 {
			addrLen = 16
		}
		for len(addrs) >= addrLen {
			if ipv6 {
				a.Addresses = append(a.Addresses, addr6(addrs[:16]))
			} else {
				a.Addresses = append(a.Addresses, netip.AddrFrom4([4]byte(addrs[:4])))
			}
			addrs = addrs[addrLen:]
		}
		s, d := addr6(src), addr6(dst)
		if !ipv6 {
			s, d = netip.AddrFrom4([4]byte(s.AsSlice()[:4])), netip.AddrFrom4([4]byte(d.AsSlice()[:4]))
		}
		prefix := []byte{0xde, 0xad}
		out, err := a.AppendMarshal(prefix, s, d)
		if err != nil {
			if !bytes.Equal(out, prefix) {
				t.Fatalf("AppendMarshal changed the buffer on error %v", err)
			}
			return
		}
		if len(out)-len(prefix) != a.Len() {
			t.Fatalf("encoded %d bytes, Len says %d", len(out)-len(prefix), a.Len())
		}
		var b vrrp.Advertisement
		if err := b.Unmarshal(out[len(prefix):], s, d); err != nil {
			t.Fatalf("encoded %+v does not decode: %v", a, err)
		}
		// The fields of the other version are not on the wire.
		a.Type = vrrp.TypeAdvertisement
		if a.Version == vrrp.Version3 {
			a.AdvertIntervalSeconds, a.AuthType, a.AuthData = 0, vrrp.AuthNone, [8]byte{}
		} else {
			a.MaxAdvertInterval = 0
		}
		if b.ChecksumForm != vrrp.ChecksumPseudoHeader || b.Checksum != a.Checksum || !sameFields(&a, &b) {
			t.Fatalf("encoded %+v decodes to %+v", a, b)
		}
	})
}
