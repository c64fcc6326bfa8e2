package garp

import (
	"bytes"
	"encoding/hex"
	"net"
	"net/netip"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/pcapfile"
)

// The capture of keepalived 2.2.7 becoming master (testdata/keepalived/garp-na-h1.conf:
// vrrp_garp_master_repeat 2, vrrp_garp_master_delay 1) on an interface with
// this MAC, for VIPs 10.99.0.150 and fd00:99::150.
var (
	capturedMAC = net.HardwareAddr{0x06, 0x74, 0xb9, 0x59, 0xbc, 0x68}
	capturedV4  = netip.MustParseAddr("10.99.0.150")
	capturedV6  = netip.MustParseAddr("fd00:99::150")
)

// capturedFrames returns keepalived's GARP and NA frames from the capture.
func capturedFrames(t *testing.T) (garps, nas [][]byte) {
	t.Helper()
	pkts, err := pcapfile.ReadFile(fixture.Keepalived("keepalived-garp-na.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if p.LinkType != pcapfile.LinkTypeEthernet || len(p.Data) < 14 {
			continue
		}
		switch {
		case p.Data[12] == 0x08 && p.Data[13] == 0x06:
			garps = append(garps, p.Data)
		case p.Data[12] == 0x86 && p.Data[13] == 0xdd && len(p.Data) > 54 && p.Data[20] == 58 && p.Data[54] == 136:
			nas = append(nas, p.Data)
		}
	}
	if len(garps) != 4 || len(nas) != 4 {
		t.Fatalf("capture holds %d GARPs and %d NAs, want 4 and 4 (2 bursts of 2)", len(garps), len(nas))
	}
	return garps, nas
}

func TestFramesMatchKeepalived(t *testing.T) {
	garps, nas := capturedFrames(t)
	g, err := garpFrame(capturedMAC, capturedV4)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range garps {
		if !bytes.Equal(g, want) {
			t.Errorf("GARP differs from keepalived's frame %d:\n got  %s\n want %s", i, hex.EncodeToString(g), hex.EncodeToString(want))
		}
	}
	na, err := naFrame(capturedMAC, capturedV6, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range nas {
		if !bytes.Equal(na, want) {
			t.Errorf("NA differs from keepalived's frame %d:\n got  %s\n want %s", i, hex.EncodeToString(na), hex.EncodeToString(want))
		}
	}
}

func TestNARouterFlag(t *testing.T) {
	na, err := naFrame(capturedMAC, capturedV6, true)
	if err != nil {
		t.Fatal(err)
	}
	// ICMPv6 starts at 14+40; flags byte at +4: R|S|O = 0x80|0x40|0x20.
	if got := na[54+4]; got != 0xa0 {
		t.Errorf("flags 0x%02x, want Router+Override 0xa0", got)
	}
	plain, _ := naFrame(capturedMAC, capturedV6, false)
	if bytes.Equal(na[54+2:54+4], plain[54+2:54+4]) {
		t.Error("checksum did not change with the Router flag")
	}
}

func TestFrameErrors(t *testing.T) {
	if _, err := garpFrame(capturedMAC, capturedV6); err == nil {
		t.Error("GARP for an IPv6 address accepted")
	}
	if _, err := naFrame(capturedMAC, capturedV4, false); err == nil {
		t.Error("NA for an IPv4 address accepted")
	}
	if _, err := naFrame(capturedMAC, netip.MustParseAddr("::ffff:10.99.0.1"), false); err == nil {
		t.Error("NA for an IPv4-mapped address accepted")
	}
	for _, mac := range []net.HardwareAddr{nil, {1, 2, 3}, make(net.HardwareAddr, 20)} {
		if _, err := garpFrame(mac, capturedV4); err != errNotEthernet {
			t.Errorf("GARP with MAC %v: %v", mac, err)
		}
		if _, err := naFrame(mac, capturedV6, false); err != errNotEthernet {
			t.Errorf("NA with MAC %v: %v", mac, err)
		}
	}
}

func FuzzFrames(f *testing.F) {
	f.Add([]byte{6, 0x74, 0xb9, 0x59, 0xbc, 0x68}, []byte{10, 99, 0, 150})
	f.Add([]byte{6, 0x74, 0xb9, 0x59, 0xbc, 0x68}, capturedV6.AsSlice())
	f.Fuzz(func(t *testing.T, mac, ip []byte) {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		// Must never panic; must be well formed when it succeeds.
		if b, err := garpFrame(mac, a); err == nil && len(b) != 42 {
			t.Fatalf("GARP of %d bytes", len(b))
		}
		if b, err := naFrame(mac, a, false); err == nil && len(b) != 86 {
			t.Fatalf("NA of %d bytes", len(b))
		}
	})
}
