package vip

import (
	"net/netip"
	"testing"
)

func TestValidate(t *testing.T) {
	good := []VIP{
		{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("10.99.0.100/32"), Dev: "eth0", Label: "eth0:vip"},
		{Prefix: netip.MustParsePrefix("fd00:99::100/64"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("fe80::1/64"), Dev: "eth0"},
	}
	for _, v := range good {
		if err := v.validate(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	bad := []VIP{
		{},
		{Prefix: netip.MustParsePrefix("10.99.0.100/24")},
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("224.0.0.18/32"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("::1/128"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("::ffff:10.99.0.1/128"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "a-very-long-interface"},
		{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0", Label: "eth1:1"},
		{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0", Label: "eth0:0123456789ab"},
		{Prefix: netip.MustParsePrefix("fd00:99::100/64"), Dev: "eth0", Label: "eth0:1"},
	}
	for _, v := range bad {
		if err := v.validate(); err == nil {
			t.Errorf("%s: accepted", v)
		}
	}
}

func TestString(t *testing.T) {
	v := VIP{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0", Label: "eth0:1"}
	if got, want := v.String(), "10.99.0.100/24 dev eth0 label eth0:1"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if got, err := readRecord(dir); err != nil || got != nil {
		t.Fatalf("empty dir: %v, %v", got, err)
	}
	in := []VIP{
		{Prefix: netip.MustParsePrefix("fd00:99::100/64"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0", Label: "eth0:1"},
	}
	if err := writeRecord(dir, in); err != nil {
		t.Fatal(err)
	}
	got, err := readRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != in[1] || got[1] != in[0] {
		t.Errorf("read back %v, want %v sorted", got, in)
	}
}
