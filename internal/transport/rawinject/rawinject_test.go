package rawinject

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

func TestMarshalIPv4(t *testing.T) {
	p := IPv4{
		Src: netip.MustParseAddr("10.99.0.10"), Dst: netip.MustParseAddr("224.0.0.18"),
		TTL: 254, ID: 0x1234, Options: []byte{0x94, 0x04, 0x00}, Payload: []byte{1, 2, 3},
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 24+3 || b[0] != 0x46 {
		t.Fatalf("length %d, first byte %#x; want 27 and 0x46 (options padded to 4)", len(b), b[0])
	}
	if got := binary.BigEndian.Uint16(b[2:4]); got != 27 {
		t.Errorf("total length %d", got)
	}
	if b[8] != 254 || b[9] != 112 {
		t.Errorf("TTL %d protocol %d, want 254 112", b[8], b[9])
	}
	// A header with a correct checksum sums to zero.
	if s := headerChecksum(b[:24]); s != 0 {
		t.Errorf("header checksum does not verify (residue %#x)", s)
	}
	if string(b[24:]) != "\x01\x02\x03" || b[23] != 0 {
		t.Errorf("payload or padding wrong: % x", b)
	}

	def, _ := IPv4{Src: p.Src, Dst: p.Dst}.Marshal()
	if def[8] != 255 || def[9] != 112 {
		t.Errorf("defaults: TTL %d protocol %d, want 255 112", def[8], def[9])
	}

	for _, bad := range []IPv4{
		{Src: netip.MustParseAddr("fe80::1"), Dst: p.Dst},
		{Src: p.Src, Dst: p.Dst, Options: make([]byte, 41)},
		{Src: p.Src, Dst: p.Dst, Payload: make([]byte, 65535)},
	} {
		if _, err := bad.Marshal(); err == nil {
			t.Errorf("Marshal(%v -> %v, %d option bytes, %d payload bytes) succeeded", bad.Src, bad.Dst, len(bad.Options), len(bad.Payload))
		}
	}
}

func TestSendRejectsBadInput(t *testing.T) {
	if err := SendIPv4Bytes("lo", make([]byte, 10)); err == nil {
		t.Error("SendIPv4Bytes accepted a 10-byte packet")
	}
	if err := SendIPv6("lo", IPv6{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("ff02::12")}); err == nil {
		t.Error("SendIPv6 accepted an IPv4 source")
	}
	if err := SendIPv6("lo", IPv6{Src: netip.MustParseAddr("fe80::1"), Dst: netip.MustParseAddr("ff02::12"), HopLimit: 256}); err == nil {
		t.Error("SendIPv6 accepted hop limit 256")
	}
}
