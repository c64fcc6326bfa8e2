package vip

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"
)

// FuzzRecord: the VIP record (vips.json in the state directory) is read at every start,
// whatever a crash, a full disk or a hand left in it. parseRecord never panics; what it
// accepts is valid VIPs only (what Recover will remove); and the record round-trips:
// encodeRecord of what was read reads back to the same VIPs, and encoding those again
// gives the same bytes. (TestRecordRoundTrip covers the file itself.)
func FuzzRecord(f *testing.F) {
	// Records as writeRecord writes them, from the VIPs the tests use.
	for _, vs := range [][]VIP{
		nil,
		{{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0", Label: "eth0:1"}},
		{{Prefix: netip.MustParsePrefix("fd00:99::100/64"), Dev: "eth0"}, {Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0"},
			{Prefix: netip.MustParsePrefix("10.99.0.101/32"), Dev: "vrrp.51"}},
	} {
		b, err := encodeRecord(vs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2]) // torn
	}
	f.Add([]byte(""))
	f.Add([]byte(`{"version":2,"vips":[]}`))
	f.Add([]byte(`{"version":1,"vips":[{"prefix":"::ffff:10.0.0.1/128","dev":"eth0"}]}`))
	f.Add([]byte(`{"version":1,"vips":[{"prefix":"fe80::1%eth0/64","dev":"eth0"}]}`))
	f.Add([]byte(`{"version":1,"vips":[{"prefix":"10.0.0.1/24","dev":"eth0","label":"eth1:x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseRecord("vips.json", data)
		if err != nil {
			if got != nil {
				t.Fatalf("error %v with VIPs %v", err, got)
			}
			return
		}
		for _, v := range got {
			if err := v.validate(); err != nil {
				t.Fatalf("accepted an invalid VIP %+v: %v", v, err)
			}
		}
		first, err := encodeRecord(got)
		if err != nil {
			t.Fatalf("encodeRecord of what was read (%v): %v", got, err)
		}
		again, err := parseRecord("vips.json", first)
		if err != nil {
			t.Fatalf("reading back %v: %v", got, err)
		}
		if !sameVIPs(again, got) {
			t.Fatalf("read back %v, want %v", again, got)
		}
		if second, _ := encodeRecord(again); !bytes.Equal(first, second) {
			t.Fatalf("a second write differs:\n%s\n%s", first, second)
		}
	})
}

// sameVIPs compares two lists as multisets.
func sameVIPs(a, b []VIP) bool {
	keys := func(vs []VIP) []string {
		k := make([]string, 0, len(vs))
		for _, v := range vs {
			k = append(k, v.String())
		}
		slices.Sort(k)
		return k
	}
	return slices.Equal(keys(a), keys(b))
}
