package pcapfile

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
)

// The pcapng capture was taken by dumpcap with nanosecond timestamps; the classic copies
// were written from it by tcpdump (-w, and -w with --time-stamp-precision=nano).
var ngFile = fixture.Keepalived("keepalived-v2-ipv4-auth.pcap")

const (
	microFile = "testdata/keepalived-v2-ipv4-auth-classic.pcap"
	nanoFile  = "testdata/keepalived-v2-ipv4-auth-classic-nano.pcap"
)

// The timestamps tcpdump -tttt --time-stamp-precision=nano prints for ngFile.
var wantTimes = []string{
	"2026-11-22T01:57:01.983755693Z",
	"2026-11-22T01:57:02.999878987Z",
	"2026-11-22T01:57:03.481356191Z",
	"2026-11-22T01:57:04.091911787Z",
	"2026-11-22T01:57:04.987524050Z",
}

func TestReadPcapng(t *testing.T) {
	pkts, err := ReadFile(ngFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != len(wantTimes) {
		t.Fatalf("read %d packets, want %d", len(pkts), len(wantTimes))
	}
	for i, p := range pkts {
		want, err := time.Parse(time.RFC3339Nano, wantTimes[i])
		if err != nil {
			t.Fatal(err)
		}
		if !p.Timestamp.Equal(want) {
			t.Errorf("packet %d: timestamp %v, want %v", i, p.Timestamp, want)
		}
		if p.LinkType != LinkTypeEthernet || len(p.Data) != 54 || p.OriginalLength != 54 {
			t.Errorf("packet %d: link type %d, %d of %d bytes; want Ethernet, 54 of 54", i, p.LinkType, len(p.Data), p.OriginalLength)
		}
	}
}

// The classic files hold the same frames, with timestamps cut to their precision.
func TestReadClassicMatchesPcapng(t *testing.T) {
	ng, err := ReadFile(ngFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file string
		prec time.Duration
	}{{microFile, time.Microsecond}, {nanoFile, time.Nanosecond}} {
		pkts, err := ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if len(pkts) != len(ng) {
			t.Fatalf("%s: %d packets, want %d", c.file, len(pkts), len(ng))
		}
		for i := range pkts {
			if !bytes.Equal(pkts[i].Data, ng[i].Data) || pkts[i].LinkType != ng[i].LinkType {
				t.Errorf("%s packet %d differs from the pcapng one", c.file, i)
			}
			if want := ng[i].Timestamp.Truncate(c.prec); !pkts[i].Timestamp.Equal(want) {
				t.Errorf("%s packet %d: timestamp %v, want %v", c.file, i, pkts[i].Timestamp, want)
			}
		}
	}
}

func TestParseIP(t *testing.T) {
	pkts, err := ReadFile(ngFile)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ParseIP(pkts[0].LinkType, pkts[0].Data)
	if !ok {
		t.Fatal("ParseIP failed on a VRRP frame")
	}
	want := IPPacket{
		Src: netip.MustParseAddr("10.99.0.12"), Dst: netip.MustParseAddr("224.0.0.18"),
		Protocol: 112, TTL: 255,
	}
	if p.Src != want.Src || p.Dst != want.Dst || p.Protocol != want.Protocol || p.TTL != want.TTL || len(p.Payload) != 20 {
		t.Errorf("ParseIP = %+v, want %+v with a 20-byte payload", p, want)
	}
	// Raw IP is the same packet without its Ethernet header.
	raw, ok := ParseIP(LinkTypeRaw, pkts[0].Data[14:])
	if !ok || !bytes.Equal(raw.Payload, p.Payload) {
		t.Errorf("ParseIP on raw IP = %+v, %v", raw, ok)
	}
	// Every truncation of the frame is refused, never a panic.
	for n := range len(pkts[0].Data) {
		if _, ok := ParseIP(LinkTypeEthernet, pkts[0].Data[:n]); ok {
			t.Errorf("ParseIP accepted the frame cut to %d bytes", n)
		}
	}
}

// Damaged files are errors wrapping ErrFormat, never panics or huge allocations.
func TestDamagedFiles(t *testing.T) {
	for _, name := range []string{ngFile, microFile} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(b) {
			r, err := NewReader(bytes.NewReader(b[:n]))
			for err == nil {
				_, err = r.Next()
			}
			// Cutting at a record boundary is a clean, shorter file; anywhere else is damage.
			if err != io.EOF && !errors.Is(err, ErrFormat) {
				t.Fatalf("%s cut to %d bytes: error %v does not wrap ErrFormat", name, n, err)
			}
		}
	}
	if _, err := NewReader(bytes.NewReader([]byte("not a capture file"))); !errors.Is(err, ErrFormat) {
		t.Errorf("NewReader on text: %v, want ErrFormat", err)
	}
}
