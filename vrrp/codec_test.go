package vrrp_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

var (
	h1  = netip.MustParseAddr("10.99.0.11")
	h2  = netip.MustParseAddr("10.99.0.12")
	m4  = vrrp.MulticastIPv4
	ll1 = netip.MustParseAddr("fe80::11")
	m6  = vrrp.MulticastIPv6
)

// refChecksum is the Internet checksum written out the slow, obvious way (RFC 1071), as an
// independent reference for the package's.
func refChecksum(parts ...[]byte) uint16 {
	var all []byte
	for _, p := range parts {
		all = append(all, p...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var sum uint32
	for i := 0; i < len(all); i += 2 {
		sum += uint32(all[i])<<8 | uint32(all[i+1])
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
	}
	return ^uint16(sum)
}

// pseudo4 and pseudo6 are the pseudo-headers of RFC 5798 §5.2.8 for a message of n bytes.
func pseudo4(src, dst netip.Addr, n int) []byte {
	s, d := src.As4(), dst.As4()
	return append(append(s[:], d[:]...), 0, vrrp.IPProtocol, byte(n>>8), byte(n))
}

func pseudo6(src, dst netip.Addr, n int) []byte {
	s, d := src.As16(), dst.As16()
	return append(append(s[:], d[:]...), byte(n>>24), byte(n>>16), byte(n>>8), byte(n), 0, 0, 0, vrrp.IPProtocol)
}

// withChecksum returns msg with its checksum field set over the given pseudo-header (nil:
// the message alone).
func withChecksum(msg, pseudo []byte) []byte {
	b := slices.Clone(msg)
	b[6], b[7] = 0, 0
	binary.BigEndian.PutUint16(b[6:], refChecksum(pseudo, b))
	return b
}

// Hand-built messages: version/type, VRID, priority, count, then per version.
func v3ipv4(src, dst netip.Addr) []byte {
	msg := []byte{0x31, 51, 150, 2, 0x00, 0x05, 0, 0, 10, 99, 0, 100, 10, 99, 0, 101}
	return withChecksum(msg, pseudo4(src, dst, len(msg)))
}

func v3ipv6(src, dst netip.Addr) []byte {
	msg := []byte{0x31, 52, 100, 1, 0x00, 0x0a, 0, 0, 0xfd, 0, 0, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}
	return withChecksum(msg, pseudo6(src, dst, len(msg)))
}

func v2ipv4() []byte {
	msg := []byte{0x21, 51, 100, 1, 1, 1, 0, 0, 10, 99, 0, 100, 's', 'e', 'c', 'r', 'e', 't', '1', 0}
	return withChecksum(msg, nil)
}

// edit returns a copy of b changed by f, with the checksum recomputed over pseudo unless
// keepSum is set.
func edit(b []byte, pseudo func(n int) []byte, f func([]byte) []byte) []byte {
	out := f(slices.Clone(b))
	if pseudo == nil {
		return withChecksum(out, nil)
	}
	return withChecksum(out, pseudo(len(out)))
}

func p4(src, dst netip.Addr) func(int) []byte {
	return func(n int) []byte { return pseudo4(src, dst, n) }
}

func p6(src, dst netip.Addr) func(int) []byte {
	return func(n int) []byte { return pseudo6(src, dst, n) }
}

func TestUnmarshalHandBuilt(t *testing.T) {
	var a vrrp.Advertisement
	if err := a.Unmarshal(v3ipv4(h2, m4), h2, m4); err != nil {
		t.Fatal(err)
	}
	want := vrrp.Advertisement{
		Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: 51, Priority: 150,
		MaxAdvertInterval: 5, Checksum: a.Checksum,
		Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100"), netip.MustParseAddr("10.99.0.101")},
	}
	if !equalAdverts(&a, &want) || a.Interval() != 50*time.Millisecond {
		t.Errorf("v3 IPv4: got %+v, want %+v", a, want)
	}

	if err := a.Unmarshal(v3ipv6(ll1, m6), ll1, m6); err != nil {
		t.Fatal(err)
	}
	if a.VRID != 52 || a.Priority != 100 || a.Interval() != 100*time.Millisecond ||
		!slices.Equal(a.Addresses, []netip.Addr{netip.MustParseAddr("fd00:99::100")}) {
		t.Errorf("v3 IPv6: got %+v", a)
	}

	if err := a.Unmarshal(v2ipv4(), h1, m4); err != nil {
		t.Fatal(err)
	}
	pass, _ := vrrp.SimplePassword("secret1")
	if a.Version != vrrp.Version2 || a.AuthType != vrrp.AuthSimple || a.AuthData != pass ||
		a.Interval() != time.Second || a.MaxAdvertInterval != 0 || len(a.Addresses) != 1 {
		t.Errorf("v2: got %+v", a)
	}
}

func equalAdverts(a, b *vrrp.Advertisement) bool {
	return a.Version == b.Version && a.Type == b.Type && a.VRID == b.VRID && a.Priority == b.Priority &&
		a.MaxAdvertInterval == b.MaxAdvertInterval && a.AdvertIntervalSeconds == b.AdvertIntervalSeconds &&
		a.AuthType == b.AuthType && a.AuthData == b.AuthData && a.Checksum == b.Checksum &&
		a.ChecksumForm == b.ChecksumForm && slices.Equal(a.Addresses, b.Addresses)
}

// Every error kind, from hand-built bytes with otherwise valid checksums, so each case
// fails for the one reason it names.
func TestUnmarshalErrors(t *testing.T) {
	v4 := v3ipv4(h2, m4)
	v6 := v3ipv6(ll1, m6)
	v2 := v2ipv4()
	p4m, p6m := p4(h2, m4), p6(ll1, m6)
	tests := []struct {
		name     string
		msg      []byte
		src, dst netip.Addr
		want     error
	}{
		{"empty", nil, h2, m4, vrrp.ErrPacketLength},
		{"7 bytes", v4[:7], h2, m4, vrrp.ErrPacketLength},
		{"v2 without auth data", v2[:12], h1, m4, vrrp.ErrPacketLength},
		{"count larger than addresses", edit(v4, p4m, func(b []byte) []byte { b[3] = 3; return b }), h2, m4, vrrp.ErrAddressCount},
		{"count smaller than addresses", edit(v4, p4m, func(b []byte) []byte { b[3] = 1; return b }), h2, m4, vrrp.ErrAddressCount},
		{"count zero with an address", edit(v6, p6m, func(b []byte) []byte { b[3] = 0; return b }), ll1, m6, vrrp.ErrAddressCount},
		{"trailing byte", edit(v4, p4m, func(b []byte) []byte { return append(b, 0) }), h2, m4, vrrp.ErrAddressCount},
		{"trailing address", edit(v4, p4m, func(b []byte) []byte { return append(b, 10, 99, 0, 102) }), h2, m4, vrrp.ErrAddressCount},
		{"IPv4 addresses over IPv6", edit(v4, p6m, func(b []byte) []byte { return b }), ll1, m6, vrrp.ErrAddressCount},
		{"v2 missing auth data", edit(v2, nil, func(b []byte) []byte { return b[:len(b)-1] }), h1, m4, vrrp.ErrAddressCount},
		{"version 0", edit(v4, p4m, func(b []byte) []byte { b[0] = 0x01; return b }), h2, m4, vrrp.ErrVersion},
		{"version 1", edit(v4, p4m, func(b []byte) []byte { b[0] = 0x11; return b }), h2, m4, vrrp.ErrVersion},
		{"version 4", edit(v4, p4m, func(b []byte) []byte { b[0] = 0x41; return b }), h2, m4, vrrp.ErrVersion},
		{"version 15", edit(v4, p4m, func(b []byte) []byte { b[0] = 0xf1; return b }), h2, m4, vrrp.ErrVersion},
		{"v2 over IPv6", edit(v6, p6m, func(b []byte) []byte { b[0] = 0x21; return append(b, make([]byte, 8)...) }), ll1, m6, vrrp.ErrVersion},
		{"type 0", edit(v4, p4m, func(b []byte) []byte { b[0] = 0x30; return b }), h2, m4, vrrp.ErrInvalidType},
		{"type 2", edit(v6, p6m, func(b []byte) []byte { b[0] = 0x32; return b }), ll1, m6, vrrp.ErrInvalidType},
		{"v2 type 15", edit(v2, nil, func(b []byte) []byte { b[0] = 0x2f; return b }), h1, m4, vrrp.ErrInvalidType},
		{"v3 IPv4 bad checksum", func() []byte { b := slices.Clone(v4); b[7]++; return b }(), h2, m4, vrrp.ErrChecksum},
		{"v3 IPv4 other source", v4, h1, m4, vrrp.ErrChecksum},
		{"v3 IPv4 other destination", v3ipv4(h2, h1), h2, netip.MustParseAddr("10.99.0.13"), vrrp.ErrChecksum},
		{"v3 IPv6 bad checksum", func() []byte { b := slices.Clone(v6); b[6] ^= 0x80; return b }(), ll1, m6, vrrp.ErrChecksum},
		{"v3 IPv6 other source", v6, netip.MustParseAddr("fe80::12"), m6, vrrp.ErrChecksum},
		{"v3 IPv6 without pseudo-header", withChecksum(v6, nil), ll1, m6, vrrp.ErrChecksum},
		{"v2 bad checksum", func() []byte { b := slices.Clone(v2); b[len(b)-1] = '!'; return b }(), h1, m4, vrrp.ErrChecksum},
		{"v2 with a pseudo-header checksum", withChecksum(v2, pseudo4(h1, m4, len(v2))), h1, m4, vrrp.ErrChecksum},
		{"v3 interval zero", edit(v4, p4m, func(b []byte) []byte { b[4], b[5] = 0, 0; return b }), h2, m4, vrrp.ErrAdvertIntervalZero},
		{"v3 interval zero, reserved bits set", edit(v6, p6m, func(b []byte) []byte { b[4], b[5] = 0xf0, 0; return b }), ll1, m6, vrrp.ErrAdvertIntervalZero},
		// keepalived's order: the length is checked before the version, the type before
		// the checksum.
		{"v2 over IPv6 of the wrong length", edit(v6, p6m, func(b []byte) []byte { b[0] = 0x21; return b }), ll1, m6, vrrp.ErrAddressCount},
		{"bad type and bad checksum", func() []byte { b := slices.Clone(v4); b[0] = 0x35; return b }(), h2, m4, vrrp.ErrInvalidType},
		{"bad checksum and interval zero", func() []byte { b := slices.Clone(v4); b[5] = 0; return b }(), h2, m4, vrrp.ErrChecksum},
		{"source and destination of different families", v4, h2, m6, vrrp.ErrAddressFamily},
		{"no source", v4, netip.Addr{}, m4, vrrp.ErrAddressFamily},
	}
	counted := map[error]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a vrrp.Advertisement
			err := a.Unmarshal(tt.msg, tt.src, tt.dst)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Unmarshal = %v, want %v", err, tt.want)
			}
			counted[tt.want] = true
		})
	}
	for _, e := range []error{vrrp.ErrPacketLength, vrrp.ErrAddressCount, vrrp.ErrVersion, vrrp.ErrInvalidType, vrrp.ErrChecksum, vrrp.ErrAdvertIntervalZero, vrrp.ErrAddressFamily} {
		if !counted[e] {
			t.Errorf("no case for %v", e)
		}
	}
}

// The reserved bits in front of the v3 interval are ignored on receive (RFC 5798 §5.2.7).
func TestUnmarshalIgnoresReservedBits(t *testing.T) {
	b := edit(v3ipv4(h2, m4), p4(h2, m4), func(b []byte) []byte { b[4] |= 0xf0; return b })
	var a vrrp.Advertisement
	if err := a.Unmarshal(b, h2, m4); err != nil {
		t.Fatal(err)
	}
	if a.MaxAdvertInterval != 5 {
		t.Errorf("interval %d, want 5", a.MaxAdvertInterval)
	}
}

// VRRPv3 over IPv4 is accepted with the checksum in each form senders use, and the form is
// reported; the message re-encodes in the pseudo-header form only.
func TestChecksumFormsV3IPv4(t *testing.T) {
	base := v3ipv4(h2, m4)
	tests := []struct {
		name     string
		msg      []byte
		src, dst netip.Addr
		want     vrrp.ChecksumForm
	}{
		{"multicast, pseudo-header", base, h2, m4, vrrp.ChecksumPseudoHeader},
		{"multicast, no pseudo-header", withChecksum(base, nil), h2, m4, vrrp.ChecksumNoPseudoHeader},
		{"unicast, pseudo-header", v3ipv4(h2, h1), h2, h1, vrrp.ChecksumPseudoHeader},
		{"unicast, no pseudo-header", withChecksum(base, nil), h2, h1, vrrp.ChecksumNoPseudoHeader},
		{"unicast, keepalived < 1.3.5 multicast pseudo-header", base, h2, h1, vrrp.ChecksumMulticastPseudoHeader},
		{"4-in-6 header addresses", base, netip.AddrFrom16(h2.As16()), netip.AddrFrom16(m4.As16()), vrrp.ChecksumPseudoHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a vrrp.Advertisement
			if err := a.Unmarshal(tt.msg, tt.src, tt.dst); err != nil {
				t.Fatal(err)
			}
			if a.ChecksumForm != tt.want || a.Checksum != binary.BigEndian.Uint16(tt.msg[6:]) {
				t.Errorf("form %v checksum %#04x, want %v %#04x", a.ChecksumForm, a.Checksum, tt.want, binary.BigEndian.Uint16(tt.msg[6:]))
			}
			out, err := a.AppendMarshal(nil, tt.src, tt.dst)
			if err != nil {
				t.Fatal(err)
			}
			if want := withChecksum(tt.msg, pseudo4(tt.src.Unmap(), tt.dst.Unmap(), len(tt.msg))); !slices.Equal(out, want) {
				t.Errorf("re-encoded %x, want %x", out, want)
			}
		})
	}
}

// One's complement has two zeros: a sender may write 0xffff where 0x0000 is computed, and
// keepalived (which checks that the sum over everything is zero) accepts it.
func TestChecksumNegativeZero(t *testing.T) {
	// Find a v2 message whose checksum computes to zero by choosing the last 16-bit word
	// of the auth data: sweeping a whole word reaches every one's complement sum.
	for last := range 1 << 16 {
		b := v2ipv4()
		binary.BigEndian.PutUint16(b[len(b)-2:], uint16(last))
		b = withChecksum(b, nil)
		if binary.BigEndian.Uint16(b[6:]) != 0 {
			continue
		}
		var a vrrp.Advertisement
		if err := a.Unmarshal(b, h1, m4); err != nil {
			t.Fatalf("checksum 0x0000: %v", err)
		}
		b[6], b[7] = 0xff, 0xff
		if err := a.Unmarshal(b, h1, m4); err != nil {
			t.Fatalf("checksum 0xffff for a computed 0x0000: %v", err)
		}
		return
	}
	t.Fatal("no auth word makes the checksum zero")
}

// Truncating a valid message anywhere, or growing it, is a length error, never a panic
// nor a success.
func TestTruncationAtEveryLength(t *testing.T) {
	for _, c := range []struct {
		name     string
		msg      []byte
		src, dst netip.Addr
	}{
		{"v2", v2ipv4(), h1, m4},
		{"v3 IPv4", v3ipv4(h2, m4), h2, m4},
		{"v3 IPv6", v3ipv6(ll1, m6), ll1, m6},
	} {
		var a vrrp.Advertisement
		if err := a.Unmarshal(c.msg, c.src, c.dst); err != nil {
			t.Fatalf("%s: the whole message: %v", c.name, err)
		}
		for n := range len(c.msg) {
			err := a.Unmarshal(c.msg[:n], c.src, c.dst)
			if !errors.Is(err, vrrp.ErrPacketLength) && !errors.Is(err, vrrp.ErrAddressCount) {
				t.Errorf("%s cut to %d bytes: %v, want a length error", c.name, n, err)
			}
		}
		for extra := 1; extra <= 16; extra++ {
			long := append(slices.Clone(c.msg), make([]byte, extra)...)
			if err := a.Unmarshal(long, c.src, c.dst); !errors.Is(err, vrrp.ErrAddressCount) {
				t.Errorf("%s with %d trailing bytes: %v, want ErrAddressCount", c.name, extra, err)
			}
		}
	}
}

// CheckAuth follows keepalived 2.2.7: invalid type, then type mismatch, then password.
func TestCheckAuth(t *testing.T) {
	secret, _ := vrrp.SimplePassword("secret1")
	other, _ := vrrp.SimplePassword("secret2")
	tests := []struct {
		name     string
		version  vrrp.Version
		got      vrrp.AuthType
		data     [8]byte
		wantType vrrp.AuthType
		pass     [8]byte
		want     error
	}{
		{"none expected none", vrrp.Version2, vrrp.AuthNone, [8]byte{}, vrrp.AuthNone, [8]byte{}, nil},
		{"none ignores auth data", vrrp.Version2, vrrp.AuthNone, other, vrrp.AuthNone, [8]byte{}, nil},
		{"simple, right password", vrrp.Version2, vrrp.AuthSimple, secret, vrrp.AuthSimple, secret, nil},
		{"simple, wrong password", vrrp.Version2, vrrp.AuthSimple, other, vrrp.AuthSimple, secret, vrrp.ErrAuthFailure},
		{"simple expected none", vrrp.Version2, vrrp.AuthSimple, secret, vrrp.AuthNone, [8]byte{}, vrrp.ErrAuthTypeMismatch},
		{"none expected simple", vrrp.Version2, vrrp.AuthNone, [8]byte{}, vrrp.AuthSimple, secret, vrrp.ErrAuthTypeMismatch},
		{"AH is a mismatch, not invalid", vrrp.Version2, vrrp.AuthIPAH, secret, vrrp.AuthSimple, secret, vrrp.ErrAuthTypeMismatch},
		{"type 3 is invalid", vrrp.Version2, 3, secret, vrrp.AuthSimple, secret, vrrp.ErrInvalidAuthType},
		{"type 255 is invalid even when expected", vrrp.Version2, 255, secret, 255, secret, vrrp.ErrInvalidAuthType},
		{"v3 has no authentication", vrrp.Version3, 0, [8]byte{}, vrrp.AuthSimple, secret, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := vrrp.Advertisement{Version: tt.version, AuthType: tt.got, AuthData: tt.data}
			if err := a.CheckAuth(tt.wantType, tt.pass); err != tt.want {
				t.Errorf("CheckAuth = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSimplePassword(t *testing.T) {
	p, cut := vrrp.SimplePassword("secret1")
	if p != [8]byte{'s', 'e', 'c', 'r', 'e', 't', '1', 0} || cut {
		t.Errorf("secret1: %q %v", p, cut)
	}
	p, cut = vrrp.SimplePassword("averylongpassword")
	if p != [8]byte{'a', 'v', 'e', 'r', 'y', 'l', 'o', 'n'} || !cut {
		t.Errorf("long: %q %v", p, cut)
	}
}

// The encoder builds what the hand-built reference says, with the checksum computed over
// the real unicast destination.
func TestAppendMarshal(t *testing.T) {
	a := vrrp.Advertisement{
		Version: vrrp.Version3, VRID: 51, Priority: 150, MaxAdvertInterval: 5,
		Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100"), netip.MustParseAddr("10.99.0.101")},
	}
	prefix := []byte("IP header")
	for _, dst := range []netip.Addr{m4, h1} {
		out, err := a.AppendMarshal(slices.Clone(prefix), h2, dst)
		if err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(prefix), v3ipv4(h2, dst)...)
		if !slices.Equal(out, want) || a.Checksum != binary.BigEndian.Uint16(want[len(prefix)+6:]) {
			t.Errorf("to %v: %x, want %x", dst, out, want)
		}
		if a.Len() != len(want)-len(prefix) {
			t.Errorf("Len = %d, want %d", a.Len(), len(want)-len(prefix))
		}
	}

	pass, _ := vrrp.SimplePassword("secret1")
	v2 := vrrp.Advertisement{Version: vrrp.Version2, VRID: 51, Priority: 100, AdvertIntervalSeconds: 1,
		AuthType: vrrp.AuthSimple, AuthData: pass, Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100")}}
	if out, err := v2.AppendMarshal(nil, h1, m4); err != nil || !slices.Equal(out, v2ipv4()) || v2.Len() != len(out) {
		t.Errorf("v2: %x %v, want %x", out, err, v2ipv4())
	}

	v6 := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: 52, Priority: 100,
		MaxAdvertInterval: 10, Addresses: []netip.Addr{netip.MustParseAddr("fd00:99::100")}}
	if out, err := v6.AppendMarshal(nil, netip.MustParseAddr("fe80::11%eth0"), m6); err != nil || !slices.Equal(out, v3ipv6(ll1, m6)) || v6.Len() != len(out) {
		t.Errorf("v3 IPv6: %x %v, want %x", out, err, v3ipv6(ll1, m6))
	}
}

// Each checksum form a v3 IPv4 router can be configured to send is written as its
// definition says and decodes as that form: the pseudo-header one (RFC 5798 as keepalived
// reads it, the default) and the message-only one (RFC 9568 §5.2.8, v3_checksum_as_v2).
// v2 and IPv6 have one form and ignore the choice; the legacy multicast form is refused.
func TestAppendMarshalForm(t *testing.T) {
	a := vrrp.Advertisement{
		Version: vrrp.Version3, VRID: 51, Priority: 150, MaxAdvertInterval: 5,
		Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100"), netip.MustParseAddr("10.99.0.101")},
	}
	for _, dst := range []netip.Addr{m4, h1} {
		for _, tt := range []struct {
			form vrrp.ChecksumForm
			want []byte
		}{
			{vrrp.ChecksumPseudoHeader, v3ipv4(h2, dst)},
			{vrrp.ChecksumNoPseudoHeader, withChecksum(v3ipv4(h2, dst), nil)},
		} {
			out, err := a.AppendMarshalForm(nil, h2, dst, tt.form)
			if err != nil || !slices.Equal(out, tt.want) {
				t.Errorf("%v to %v: %x %v, want %x", tt.form, dst, out, err, tt.want)
				continue
			}
			var b vrrp.Advertisement
			if err := b.Unmarshal(out, h2, dst); err != nil || b.ChecksumForm != tt.form {
				t.Errorf("%v to %v: decodes as %v (%v)", tt.form, dst, b.ChecksumForm, err)
			}
		}
	}
	if pseudo, _ := a.AppendMarshal(nil, h2, m4); slices.Equal(pseudo, withChecksum(pseudo, nil)) {
		t.Fatal("the test message has the same checksum in both forms; it cannot tell them apart")
	}
	if out, err := a.AppendMarshalForm([]byte("kept"), h2, m4, vrrp.ChecksumMulticastPseudoHeader); err == nil || string(out) != "kept" {
		t.Errorf("multicast pseudo-header form: %x %v, want a refusal leaving the buffer", out, err)
	}

	pass, _ := vrrp.SimplePassword("secret1")
	v2 := vrrp.Advertisement{Version: vrrp.Version2, VRID: 51, Priority: 100, AdvertIntervalSeconds: 1,
		AuthType: vrrp.AuthSimple, AuthData: pass, Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100")}}
	if out, err := v2.AppendMarshalForm(nil, h1, m4, vrrp.ChecksumNoPseudoHeader); err != nil || !slices.Equal(out, v2ipv4()) {
		t.Errorf("v2: %x %v, want %x", out, err, v2ipv4())
	}
	v6 := vrrp.Advertisement{Version: vrrp.Version3, VRID: 52, Priority: 100,
		MaxAdvertInterval: 10, Addresses: []netip.Addr{netip.MustParseAddr("fd00:99::100")}}
	if out, err := v6.AppendMarshalForm(nil, ll1, m6, vrrp.ChecksumNoPseudoHeader); err != nil || !slices.Equal(out, v3ipv6(ll1, m6)) {
		t.Errorf("v3 IPv6 keeps its pseudo-header: %x %v, want %x", out, err, v3ipv6(ll1, m6))
	}
}

func TestAppendMarshalErrors(t *testing.T) {
	addr4 := []netip.Addr{netip.MustParseAddr("10.99.0.100")}
	addr6 := []netip.Addr{netip.MustParseAddr("fd00:99::100")}
	tooMany := make([]netip.Addr, 256)
	for i := range tooMany {
		tooMany[i] = netip.AddrFrom4([4]byte{10, 99, 1, byte(i)})
	}
	tests := []struct {
		name     string
		a        vrrp.Advertisement
		src, dst netip.Addr
		want     error // nil: any error will do, there is no sentinel for it
	}{
		{"version 0", vrrp.Advertisement{MaxAdvertInterval: 100, Addresses: addr4}, h1, m4, vrrp.ErrVersion},
		{"version 4", vrrp.Advertisement{Version: 4, MaxAdvertInterval: 100, Addresses: addr4}, h1, m4, vrrp.ErrVersion},
		{"v2 over IPv6", vrrp.Advertisement{Version: 2, AdvertIntervalSeconds: 1, Addresses: addr6}, ll1, m6, vrrp.ErrVersion},
		{"IPv6 address from IPv4", vrrp.Advertisement{Version: 3, MaxAdvertInterval: 100, Addresses: addr6}, h1, m4, vrrp.ErrAddressFamily},
		{"IPv4 address from IPv6", vrrp.Advertisement{Version: 3, MaxAdvertInterval: 100, Addresses: addr4}, ll1, m6, vrrp.ErrAddressFamily},
		{"mixed header families", vrrp.Advertisement{Version: 3, MaxAdvertInterval: 100, Addresses: addr4}, h1, m6, vrrp.ErrAddressFamily},
		{"invalid address", vrrp.Advertisement{Version: 3, MaxAdvertInterval: 100, Addresses: []netip.Addr{{}}}, h1, m4, vrrp.ErrAddressFamily},
		{"no destination", vrrp.Advertisement{Version: 3, MaxAdvertInterval: 100, Addresses: addr4}, h1, netip.Addr{}, vrrp.ErrAddressFamily},
		{"256 addresses", vrrp.Advertisement{Version: 3, MaxAdvertInterval: 100, Addresses: tooMany}, h1, m4, nil},
		{"type 2", vrrp.Advertisement{Version: 3, Type: 2, MaxAdvertInterval: 100, Addresses: addr4}, h1, m4, vrrp.ErrInvalidType},
		{"v3 interval 0", vrrp.Advertisement{Version: 3, Addresses: addr4}, h1, m4, nil},
		{"v3 interval 4096", vrrp.Advertisement{Version: 3, MaxAdvertInterval: 4096, Addresses: addr4}, h1, m4, nil},
		{"v2 interval 0", vrrp.Advertisement{Version: 2, Addresses: addr4}, h1, m4, nil},
		{"v2 AH", vrrp.Advertisement{Version: 2, AdvertIntervalSeconds: 1, AuthType: vrrp.AuthIPAH, Addresses: addr4}, h1, m4, vrrp.ErrInvalidAuthType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := []byte{1, 2, 3}
			out, err := tt.a.AppendMarshal(buf, tt.src, tt.dst)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("AppendMarshal = %v, want %v", err, tt.want)
			}
			if !slices.Equal(out, buf) {
				t.Errorf("the buffer changed on error: %x", out)
			}
		})
	}
}

func TestInterval(t *testing.T) {
	tests := []struct {
		version vrrp.Version
		d       time.Duration
		ok      bool
	}{
		{vrrp.Version3, 10 * time.Millisecond, true},
		{vrrp.Version3, 50 * time.Millisecond, true},
		{vrrp.Version3, time.Second, true},
		{vrrp.Version3, 40950 * time.Millisecond, true},
		{vrrp.Version3, 40960 * time.Millisecond, false},
		{vrrp.Version3, 55 * time.Millisecond, false},
		{vrrp.Version3, 0, false},
		{vrrp.Version3, -time.Second, false},
		{vrrp.Version2, time.Second, true},
		{vrrp.Version2, 255 * time.Second, true},
		{vrrp.Version2, 256 * time.Second, false},
		{vrrp.Version2, 1500 * time.Millisecond, false},
		{vrrp.Version2, 0, false},
		{0, time.Second, false},
	}
	for _, tt := range tests {
		a := vrrp.Advertisement{Version: tt.version}
		err := a.SetInterval(tt.d)
		if (err == nil) != tt.ok {
			t.Errorf("v%d SetInterval(%v) = %v, want ok=%v", tt.version, tt.d, err, tt.ok)
			continue
		}
		if tt.ok && a.Interval() != tt.d {
			t.Errorf("v%d SetInterval(%v) then Interval() = %v", tt.version, tt.d, a.Interval())
		}
	}
	if (&vrrp.Advertisement{}).Interval() != 0 {
		t.Error("Interval of an advertisement without a version is not zero")
	}
}

func TestParseHeader(t *testing.T) {
	v, vrid, ok := vrrp.ParseHeader(v3ipv4(h2, m4))
	if v != vrrp.Version3 || vrid != 51 || !ok {
		t.Errorf("v3: %d %d %v", v, vrid, ok)
	}
	v, vrid, ok = vrrp.ParseHeader(v2ipv4())
	if v != vrrp.Version2 || vrid != 51 || !ok {
		t.Errorf("v2: %d %d %v", v, vrid, ok)
	}
	// A version this package does not speak is still routed, so its instance counts it.
	if v, vrid, ok = vrrp.ParseHeader([]byte{0x71, 9, 0, 0, 0, 0, 0, 0}); v != 7 || vrid != 9 || !ok {
		t.Errorf("version 7: %d %d %v", v, vrid, ok)
	}
	if _, _, ok = vrrp.ParseHeader(v2ipv4()[:7]); ok {
		t.Error("7 bytes parsed")
	}
}

// Each decoding error feeds exactly one counter, the one documented.
func TestCountError(t *testing.T) {
	tests := []struct {
		err     error
		counter func(*vrrp.Counters) uint64
	}{
		{vrrp.ErrPacketLength, func(c *vrrp.Counters) uint64 { return c.PacketLenErr }},
		{vrrp.ErrAddressCount, func(c *vrrp.Counters) uint64 { return c.PacketLenErr }},
		{vrrp.ErrInvalidType, func(c *vrrp.Counters) uint64 { return c.InvalidTypeRcvd }},
		{vrrp.ErrVersion, func(c *vrrp.Counters) uint64 { return c.VersionErr }},
		{vrrp.ErrChecksum, func(c *vrrp.Counters) uint64 { return c.ChecksumErr }},
		{vrrp.ErrAdvertIntervalZero, func(c *vrrp.Counters) uint64 { return c.AdvertIntervalErr }},
		{vrrp.ErrAuthTypeMismatch, func(c *vrrp.Counters) uint64 { return c.AuthTypeMismatch }},
		{vrrp.ErrInvalidAuthType, func(c *vrrp.Counters) uint64 { return c.InvalidAuthType }},
		{vrrp.ErrAuthFailure, func(c *vrrp.Counters) uint64 { return c.AuthFailure }},
		{vrrp.ErrTTL, func(c *vrrp.Counters) uint64 { return c.IPTTLErr }},
	}
	for _, tt := range tests {
		var c vrrp.Counters
		if !c.CountError(tt.err) || tt.counter(&c) != 1 || sumCounters(c) != 1 {
			t.Errorf("%v: counters %+v", tt.err, c)
		}
	}
	var c vrrp.Counters
	if c.CountError(vrrp.ErrAddressFamily) || sumCounters(c) != 0 {
		t.Errorf("ErrAddressFamily was counted: %+v", c)
	}
}

func sumCounters(c vrrp.Counters) uint64 {
	return c.AdvertRcvd + c.AdvertSent + c.BecomeMaster + c.ReleaseMaster + c.PacketLenErr +
		c.AdvertIntervalErr + c.IPTTLErr + c.InvalidTypeRcvd + c.AddrListErr + c.InvalidAuthType +
		c.AuthTypeMismatch + c.AuthFailure + c.PriZeroRcvd + c.PriZeroSent + c.ChecksumErr + c.VersionErr
}

// A receive loop that keeps one Advertisement decodes without allocating, and encoding into
// a buffer with room does not allocate either.
func TestCodecDoesNotAllocate(t *testing.T) {
	msg := v3ipv4(h2, m4)
	var a vrrp.Advertisement
	if err := a.Unmarshal(msg, h2, m4); err != nil { // grows Addresses once
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = a.Unmarshal(msg, h2, m4) }); n != 0 {
		t.Errorf("Unmarshal: %v allocations", n)
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf, _ = a.AppendMarshal(buf[:0], h2, m4) }); n != 0 {
		t.Errorf("AppendMarshal: %v allocations", n)
	}
	msg6 := v3ipv6(ll1, m6)
	if n := testing.AllocsPerRun(100, func() { _ = a.Unmarshal(msg6, ll1, m6) }); n != 0 {
		t.Errorf("Unmarshal IPv6: %v allocations", n)
	}
}

func BenchmarkUnmarshalV3IPv4(b *testing.B) {
	msg := v3ipv4(h2, m4)
	var a vrrp.Advertisement
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := a.Unmarshal(msg, h2, m4); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalV3IPv4(b *testing.B) {
	a := vrrp.Advertisement{
		Version: vrrp.Version3, VRID: 51, Priority: 150, MaxAdvertInterval: 5,
		Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.100"), netip.MustParseAddr("10.99.0.101")},
	}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	b.SetBytes(int64(a.Len()))
	for b.Loop() {
		var err error
		if buf, err = a.AppendMarshal(buf[:0], h2, m4); err != nil {
			b.Fatal(err)
		}
	}
}
