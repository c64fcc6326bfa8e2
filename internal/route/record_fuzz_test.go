package route

import (
	"bytes"
	"maps"
	"net/netip"
	"slices"
	"testing"
)

// FuzzRecord: the route record (routes.json in the state directory) is read at every
// start, whatever a crash or a hand left in it. parseRecord never panics; what it accepts
// is routes and rules that Validate (what Recover will hand the kernel); and the record
// round-trips: encodeRecord of what was read reads back to the same entries, and
// encoding those again gives the same bytes (one set of entries is one file).
func FuzzRecord(f *testing.F) {
	// Records as the Manager writes them, from the entries of the namespace tests.
	v6Rule := Rule{IPv6: true, To: netip.MustParsePrefix("fd00:99::/64"), Type: TypeUnreachable, Protocol: Protocol, Invert: true, IIF: "eth0"}
	srcRoute := Route{Dst: netip.MustParsePrefix("192.168.109.0/24"), Src: netip.MustParseAddr("10.0.0.100"), Via: netip.MustParseAddr("10.0.0.254"),
		Dev: "eth0", Metric: 5, Scope: 253, OnLink: true, Protocol: Protocol}
	for _, e := range []struct {
		routes []Route
		rules  []Rule
	}{
		{},
		{[]Route{gwRoute}, nil},
		{[]Route{gwRoute, tblRoute, v6Route, bhRoute, srcRoute}, []Rule{fromRule, markRule, v6Rule}},
		{[]Route{mpRoute, mp6Route}, nil},
	} {
		b, err := encodeSets(setOf(e.routes), setOf(e.rules))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2]) // torn
	}
	// Two entries that print alike (table 0 is main): still one order.
	f.Add([]byte(`{"version":1,"routes":[{"dst":"10.0.0.0/8","dev":"eth0","protocol":18},{"dst":"10.0.0.0/8","dev":"eth0","table":254,"protocol":18}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"routes":[{}],"rules":[{}]}`))
	f.Add([]byte(`{"version":1,"routes":[{"dst":"10.0.0.1/8","dev":"eth0","protocol":18}]}`))
	f.Add([]byte(`{"version":1,"routes":[{"dst":"10.0.0.0/8","via":"fe80::1%eth0","protocol":18}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseRecord("routes.json", data)
		if err != nil {
			return
		}
		for _, r := range doc.Routes {
			if err := r.Validate(); err != nil {
				t.Fatalf("accepted an invalid route %s: %v", r, err)
			}
		}
		for _, r := range doc.Rules {
			if err := r.Validate(); err != nil {
				t.Fatalf("accepted an invalid rule %s: %v", r, err)
			}
		}
		routes, rules := setOf(doc.Routes), setOf(doc.Rules)
		first, err := encodeSets(routes, rules)
		if err != nil {
			t.Fatalf("encodeRecord of what was read: %v", err)
		}
		again, err := parseRecord("routes.json", first)
		if err != nil {
			t.Fatalf("reading back:\n%s\n%v", first, err)
		}
		if !sameSet(setOf(again.Routes), routes) || !sameSet(setOf(again.Rules), rules) {
			t.Fatalf("read back %+v, want %+v", again, doc)
		}
		for range 3 { // map order differs from one encoding to the next
			if second, _ := encodeSets(setOf(again.Routes), setOf(again.Rules)); !bytes.Equal(first, second) {
				t.Fatalf("one set, two files:\n%s\n%s", first, second)
			}
		}
	})
}

// encodeSets is encodeRecord of the entries of two sets, in map order.
func encodeSets(routes map[Route]bool, rules map[Rule]bool) ([]byte, error) {
	return encodeRecord(slices.Collect(maps.Keys(routes)), slices.Collect(maps.Keys(rules)))
}

func setOf[K comparable](ks []K) map[K]bool {
	m := map[K]bool{}
	for _, k := range ks {
		m[k] = true
	}
	return m
}

func sameSet[K comparable](a, b map[K]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
