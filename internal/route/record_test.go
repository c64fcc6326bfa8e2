package route

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/holdings"
)

// A record written before routes had nexthops still loads, as the routes it names.
func TestRecordWithoutNexthopsLoads(t *testing.T) {
	old := `{"version":1,"routes":[{"dst":"192.0.2.0/24","via":"10.99.0.1","dev":"eth0","protocol":18}],"rules":[]}`
	doc, err := parseRecord("routes.json", []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Routes) != 1 || doc.Routes[0] != gwRoute {
		t.Fatalf("read %v, want [%v]", doc.Routes, gwRoute)
	}
	if !doc.Routes[0].Nexthops.IsZero() {
		t.Errorf("nexthops %v from a record without any", doc.Routes[0].Nexthops.List())
	}
	// And written back it still has none: a new vrrpd's record reads in an old one.
	b, err := encodeRecord(doc.Routes, nil)
	if err != nil || strings.Contains(string(b), "nexthops") {
		t.Errorf("re-encoded %s, %v", b, err)
	}
}

// A multipath route round-trips through the record file with its nexthops, in order.
func TestRecordRoundTripsNexthops(t *testing.T) {
	dir := t.TempDir()
	m := &Manager{record: record(dir)}
	m.routes.Put(mpRoute, mpRoute)
	m.routes.Put(mp6Route, mp6Route)
	m.routes.Put(gwRoute, gwRoute)
	if err := m.write(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		t.Fatal(err)
	}
	// The record is indented; what it says, without the spaces:
	flat := strings.Join(strings.Fields(string(b)), "")
	for _, want := range []string{`"nexthops":[{"via":"10.99.0.1","dev":"eth0"},{"via":"10.99.0.2","dev":"eth0"}]`, `"weight":3`, `"onlink":true`} {
		if !strings.Contains(flat, want) {
			t.Errorf("record lacks %s:\n%s", want, b)
		}
	}
	doc, err := parseRecord(filepath.Join(dir, recordFile), b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(doc.Routes, mpRoute) || !slices.Contains(doc.Routes, mp6Route) || !slices.Contains(doc.Routes, gwRoute) || len(doc.Routes) != 3 {
		t.Fatalf("read back %v", doc.Routes)
	}
	got := doc.Routes[slices.Index(doc.Routes, mp6Route)].Nexthops.List()
	want := mp6Route.Nexthops.List()
	if !slices.Equal(got, want) || len(got) != 2 || got[0].Weight != 3 || !got[1].OnLink {
		t.Errorf("nexthops read back %v, want %v", got, want)
	}
}

// A record whose nexthops the kernel cannot mean is refused, as any invalid entry.
func TestRecordRefusesBadNexthops(t *testing.T) {
	for _, rec := range []string{
		`{"version":1,"routes":[{"dst":"192.0.2.0/24","protocol":18,"nexthops":[{"via":"fd00:99::1"}]}]}`,
		`{"version":1,"routes":[{"dst":"192.0.2.0/24","protocol":18,"nexthops":[{}]}]}`,
		`{"version":1,"routes":[{"dst":"192.0.2.0/24","via":"10.99.0.1","protocol":18,"nexthops":[{"via":"10.99.0.2"}]}]}`,
		`{"version":1,"routes":[{"dst":"192.0.2.0/24","protocol":18,"nexthops":[{"via":"10.99.0.2","weight":257}]}]}`,
		`{"version":1,"routes":[{"dst":"192.0.2.0/24","type":1,"protocol":18,"nexthops":[{"via":"10.99.0.2"}]}]}`,
		`{"version":1,"routes":[{"dst":"192.0.2.0/24","protocol":18,"nexthops":{"via":"10.99.0.2"}}]}`,
	} {
		if doc, err := parseRecord("routes.json", []byte(rec)); err == nil {
			t.Errorf("accepted %s as %v", rec, doc.Routes)
		}
	}
}

// Routes that differ only in their nexthops are different entries of the holdings book;
// the same nexthops built twice are one. Weight 1 is the kernel's default: no weight.
func TestNexthopsAreTheRoutesIdentity(t *testing.T) {
	a := mpRoute
	b := mpRoute
	b.Nexthops = NewNexthops(Nexthop{Via: netip.MustParseAddr("10.99.0.1"), Dev: "eth0"}, Nexthop{Via: netip.MustParseAddr("10.99.0.3"), Dev: "eth0"})
	c := mpRoute
	c.Nexthops = NewNexthops(Nexthop{Via: netip.MustParseAddr("10.99.0.1"), Dev: "eth0", Weight: 1}, Nexthop{Via: netip.MustParseAddr("10.99.0.2"), Dev: "eth0"})
	if a == b {
		t.Errorf("%v == %v", a, b)
	}
	if a != c {
		t.Errorf("%v != %v (weight 1 is no weight)", a, c)
	}
	var book holdings.Book[Route, Route]
	book.Put(a, a)
	if book.Has(b) || !book.Has(c) {
		t.Errorf("book: has %v %v, has %v %v", b, book.Has(b), c, book.Has(c))
	}
	if s := a.String(); !strings.Contains(s, "nexthop via 10.99.0.1 dev eth0 nexthop via 10.99.0.2 dev eth0") {
		t.Errorf("String() = %q", s)
	}
}
