package ipam

import (
	"errors"
	"math/big"
	"net/netip"
	"strings"
	"testing"
)

func mustParse(t *testing.T, incl, excl []string) *Pool {
	t.Helper()
	p, err := Parse(incl, excl)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", incl, excl, err)
	}
	return p
}

func TestParseRanges(t *testing.T) {
	tests := []struct {
		name       string
		incl, excl []string
		want       string // Pool.String()
	}{
		{"empty", nil, nil, ""},
		{"ipv4 cidr keeps network and broadcast", []string{"10.99.0.200/29"}, nil, "10.99.0.200-10.99.0.207"},
		{"host bits are masked", []string{"10.99.0.201/29"}, nil, "10.99.0.200-10.99.0.207"},
		{"single /32", []string{"10.99.0.9/32"}, nil, "10.99.0.9"},
		{"single address", []string{"10.99.0.9"}, nil, "10.99.0.9"},
		{"range", []string{"10.99.0.220-10.99.0.222"}, nil, "10.99.0.220-10.99.0.222"},
		{"range with spaces", []string{" 10.99.0.220 - 10.99.0.222 "}, nil, "10.99.0.220-10.99.0.222"},
		{"one-address range", []string{"10.99.0.5-10.99.0.5"}, nil, "10.99.0.5"},
		{"ipv6 cidr", []string{"fd00:99::200/125"}, nil, "fd00:99::200-fd00:99::207"},
		{"ipv6 range", []string{"fd00:99::1-fd00:99::3"}, nil, "fd00:99::1-fd00:99::3"},
		{"issue example", []string{"10.99.0.200/29", "10.99.0.220-10.99.0.222", "fd00:99::200/125"}, []string{"10.99.0.200"},
			"10.99.0.201-10.99.0.207,10.99.0.220-10.99.0.222,fd00:99::200-fd00:99::207"},
		{"overlap is union", []string{"10.99.0.0/29", "10.99.0.4-10.99.0.10"}, nil, "10.99.0.0-10.99.0.10"},
		{"adjacent entries merge", []string{"10.99.0.8/29", "10.99.0.0/29"}, nil, "10.99.0.0-10.99.0.15"},
		{"contained entry", []string{"10.99.0.0/24", "10.99.0.7"}, nil, "10.99.0.0-10.99.0.255"},
		{"exclude middle", []string{"10.99.0.0/29"}, []string{"10.99.0.3"}, "10.99.0.0-10.99.0.2,10.99.0.4-10.99.0.7"},
		{"exclude ends", []string{"10.99.0.0/29"}, []string{"10.99.0.0", "10.99.0.7"}, "10.99.0.1-10.99.0.6"},
		{"exclude cidr and range", []string{"10.99.0.0/28"}, []string{"10.99.0.4/30", "10.99.0.10-10.99.0.12"},
			"10.99.0.0-10.99.0.3,10.99.0.8-10.99.0.9,10.99.0.13-10.99.0.15"},
		{"exclude everything", []string{"10.99.0.0/30"}, []string{"10.99.0.0/29"}, ""},
		{"exclude spanning two entries", []string{"10.99.0.0-10.99.0.3", "10.99.0.6-10.99.0.9"}, []string{"10.99.0.2-10.99.0.7"},
			"10.99.0.0-10.99.0.1,10.99.0.8-10.99.0.9"},
		{"exclude outside is harmless", []string{"10.99.0.0/30"}, []string{"10.99.0.100", "fd00:99::1"}, "10.99.0.0-10.99.0.3"},
		{"overlapping exclusions", []string{"10.99.0.0/28"}, []string{"10.99.0.2-10.99.0.6", "10.99.0.4-10.99.0.9"},
			"10.99.0.0-10.99.0.1,10.99.0.10-10.99.0.15"},
		{"whole ipv4 space edge", []string{"255.255.255.254/31", "255.255.255.253"}, nil, "255.255.255.253-255.255.255.255"},
		{"ipv6 /64 minus first", []string{"fd00:99::/64"}, []string{"fd00:99::"}, "fd00:99::1-fd00:99::ffff:ffff:ffff:ffff"},
		{"zero-length prefix", []string{"0.0.0.0/0"}, []string{"0.0.0.1-255.255.255.255"}, "0.0.0.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.incl, tc.excl)
			if got := p.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name       string
		incl, excl []string
		field      string
		index      int
		msg        string
	}{
		{"garbage", []string{"10.99.0.0/29", "nonsense"}, nil, "addresses", 1, "not a CIDR, range or address"},
		{"bad cidr", []string{"10.99.0.0/33"}, nil, "addresses", 0, "not a CIDR"},
		{"empty entry", []string{" "}, nil, "addresses", 0, "empty entry"},
		{"start after end", []string{"10.99.0.9-10.99.0.1"}, nil, "addresses", 0, "after its end"},
		{"mixed families", []string{"10.99.0.1-fd00:99::1"}, nil, "addresses", 0, "mixes IPv4 and IPv6"},
		{"bad range start", []string{"x-10.99.0.1"}, nil, "addresses", 0, "range start"},
		{"bad range end", []string{"10.99.0.1-"}, nil, "addresses", 0, "range end"},
		{"zone", []string{"fe80::1%eth0"}, nil, "addresses", 0, "zone"},
		{"mapped", []string{"::ffff:10.99.0.1"}, nil, "addresses", 0, "IPv4-mapped"},
		{"mapped cidr", []string{"::ffff:10.99.0.0/120"}, nil, "addresses", 0, "IPv4-mapped"},
		{"bad exclusion", []string{"10.99.0.0/29"}, []string{"10.99.0.1", "10.99.0.300"}, "excludedAddresses", 1, "not a CIDR, range or address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.incl, tc.excl)
			if err == nil {
				t.Fatalf("no error; pool %q", p)
			}
			var ee *EntryError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v is not an *EntryError", err)
			}
			if ee.Field != tc.field || ee.Index != tc.index {
				t.Errorf("error names %s[%d], want %s[%d]", ee.Field, ee.Index, tc.field, tc.index)
			}
			list := tc.incl
			if tc.field == "excludedAddresses" {
				list = tc.excl
			}
			if ee.Entry != list[tc.index] {
				t.Errorf("error names entry %q, want %q", ee.Entry, list[tc.index])
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not say %q and %q", err, tc.field, tc.msg)
			}
		})
	}
}

func TestContains(t *testing.T) {
	p := mustParse(t, []string{"10.99.0.200/29", "10.99.0.220-10.99.0.222", "fd00:99::/64"}, []string{"10.99.0.200", "10.99.0.204", "fd00:99::5"})
	yes := []string{"10.99.0.201", "10.99.0.203", "10.99.0.205", "10.99.0.207", "10.99.0.220", "10.99.0.222",
		"fd00:99::", "fd00:99::4", "fd00:99::6", "fd00:99::ffff:ffff:ffff:ffff"}
	no := []string{"10.99.0.200", "10.99.0.204", "10.99.0.199", "10.99.0.208", "10.99.0.219", "10.99.0.223", "10.99.1.201",
		"0.0.0.0", "255.255.255.255", "fd00:99::5", "fd00:98:ffff:ffff:ffff:ffff:ffff:ffff", "fd00:99:0:1::",
		"::ffff:10.99.0.201", "fd00:99::1%eth0"}
	for _, s := range yes {
		if !p.Contains(netip.MustParseAddr(s)) {
			t.Errorf("Contains(%s) = false, want true", s)
		}
	}
	for _, s := range no {
		if p.Contains(netip.MustParseAddr(s)) {
			t.Errorf("Contains(%s) = true, want false", s)
		}
	}
	if p.Contains(netip.Addr{}) {
		t.Error("Contains(zero Addr) = true")
	}
	var nilPool *Pool
	if nilPool.Contains(netip.MustParseAddr("10.99.0.1")) || nilPool.Has(IPv4) {
		t.Error("nil pool contains something")
	}
}

func TestSize(t *testing.T) {
	p := mustParse(t, []string{"10.99.0.200/29", "10.99.0.220-10.99.0.222", "fd00:99::/64"}, []string{"10.99.0.200"})
	if got := p.Size(IPv4); got.Cmp(big.NewInt(7+3)) != 0 {
		t.Errorf("Size(IPv4) = %v, want 10", got)
	}
	want := new(big.Int).Lsh(big.NewInt(1), 64)
	if got := p.Size(IPv6); got.Cmp(want) != 0 {
		t.Errorf("Size(IPv6) = %v, want 2^64", got)
	}
	if got := p.Size("IPv5"); got.Sign() != 0 {
		t.Errorf("Size(IPv5) = %v, want 0", got)
	}
	all := mustParse(t, []string{"::/0"}, nil)
	if got := all.Size(IPv6); got.Cmp(new(big.Int).Lsh(big.NewInt(1), 128)) != 0 {
		t.Errorf("Size(::/0) = %v, want 2^128", got)
	}
}

// usedSet is the caller's view of what is allocated, counting the questions
// Allocate asks so tests can prove it does not enumerate the pool.
type usedSet struct {
	m     map[netip.Addr]bool
	asked int
}

func (u *usedSet) inUse(a netip.Addr) bool { u.asked++; return u.m[a] }

func TestAllocateOrderAndExhaustion(t *testing.T) {
	p := mustParse(t, []string{"10.99.0.220-10.99.0.222", "10.99.0.200/29", "fd00:99::200/125"}, []string{"10.99.0.200", "10.99.0.203"})
	want := []string{"10.99.0.201", "10.99.0.202", "10.99.0.204", "10.99.0.205", "10.99.0.206", "10.99.0.207",
		"10.99.0.220", "10.99.0.221", "10.99.0.222"}
	used := &usedSet{m: map[netip.Addr]bool{}}
	for i, w := range want {
		a, ok := p.Allocate(IPv4, used.inUse)
		if !ok || a.String() != w {
			t.Fatalf("allocation %d = %v %v, want %s", i, a, ok, w)
		}
		if !p.Contains(a) {
			t.Fatalf("allocated %s is not in the pool", a)
		}
		used.m[a] = true
	}
	if a, ok := p.Allocate(IPv4, used.inUse); ok {
		t.Fatalf("exhausted pool allocated %s", a)
	}
	// Releasing one address makes exactly that one the next allocation.
	delete(used.m, netip.MustParseAddr("10.99.0.205"))
	if a, _ := p.Allocate(IPv4, used.inUse); a.String() != "10.99.0.205" {
		t.Fatalf("after release got %s, want 10.99.0.205", a)
	}
	// The other family is independent.
	if a, ok := p.Allocate(IPv6, used.inUse); !ok || a.String() != "fd00:99::200" {
		t.Fatalf("IPv6 allocation = %v %v", a, ok)
	}
	if a, ok := p.Allocate(IPv6, nil); !ok || a.String() != "fd00:99::200" {
		t.Fatalf("nil inUse allocation = %v %v", a, ok)
	}
	if _, ok := p.Allocate("IPv7", nil); ok {
		t.Fatal("unknown family allocated")
	}
	if _, ok := new(Pool).Allocate(IPv4, nil); ok {
		t.Fatal("empty pool allocated")
	}
}

func TestAllocateDeterministic(t *testing.T) {
	p := mustParse(t, []string{"10.99.0.0/24"}, nil)
	inUse := func(a netip.Addr) bool { return a.As4()[3]%3 != 2 } // every third is free
	a1, _ := p.Allocate(IPv4, inUse)
	a2, _ := p.Allocate(IPv4, inUse)
	if a1 != a2 || a1.String() != "10.99.0.2" {
		t.Fatalf("got %s then %s, want 10.99.0.2 twice", a1, a2)
	}
}

func TestAllocateBigIPv6PoolDoesNotEnumerate(t *testing.T) {
	p := mustParse(t, []string{"fd00:99::/64"}, []string{"fd00:99::/120", "fd00:99::1:0/112"})
	used := &usedSet{m: map[netip.Addr]bool{}}
	for i := 0; i < 1000; i++ {
		a, ok := p.Allocate(IPv6, used.inUse)
		if !ok {
			t.Fatalf("allocation %d failed", i)
		}
		used.m[a] = true
	}
	// The first 1000 free addresses skip the excluded /120 without asking
	// about it: they are fd00:99::100 .. fd00:99::4e7.
	last := netip.MustParseAddr("fd00:99::4e7")
	if !used.m[last] || used.m[netip.MustParseAddr("fd00:99::ff")] {
		t.Fatalf("unexpected allocations; last wanted %s", last)
	}
	// Each allocation asks only about the in-use addresses below the answer:
	// 0+1+...+999 questions plus one per allocation.
	if want := 1000*999/2 + 1000; used.asked != want {
		t.Fatalf("asked %d questions, want %d", used.asked, want)
	}
	// Allocation ending in the excluded /112 jumps past it.
	q := mustParse(t, []string{"fd00:99::ffff-fd00:99::2:0"}, []string{"fd00:99::1:0/112"})
	u := &usedSet{m: map[netip.Addr]bool{netip.MustParseAddr("fd00:99::ffff"): true}}
	if a, _ := q.Allocate(IPv6, u.inUse); a.String() != "fd00:99::2:0" || u.asked != 2 {
		t.Fatalf("got %s after %d questions, want fd00:99::2:0 after 2", a, u.asked)
	}
}

func TestAllocateAtTopOfAddressSpace(t *testing.T) {
	p := mustParse(t, []string{"255.255.255.254/31", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127"}, nil)
	for _, f := range []Family{IPv4, IPv6} {
		used := map[netip.Addr]bool{}
		for i := 0; i < 2; i++ {
			a, ok := p.Allocate(f, func(a netip.Addr) bool { return used[a] })
			if !ok {
				t.Fatalf("%s allocation %d failed", f, i)
			}
			used[a] = true
		}
		if a, ok := p.Allocate(f, func(a netip.Addr) bool { return used[a] }); ok {
			t.Fatalf("%s: exhausted pool at the top of the space allocated %s", f, a)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"10.99.0.200/29", "10.99.0.220-10.99.0.222", "fd00:99::200/125", "10.99.0.1",
		"::/0", "0.0.0.0/0", "1-2", "10.99.0.9-10.99.0.1", "fe80::1%eth0/64", "::ffff:1.2.3.4-::ffff:1.2.3.5", " - ", "/"} {
		f.Add(s, "10.99.0.201")
		f.Add("10.99.0.0/24", s)
	}
	f.Fuzz(func(t *testing.T, incl, excl string) {
		p, err := Parse(strings.Split(incl, ","), strings.Split(excl, ","))
		if err != nil {
			if !strings.Contains(err.Error(), "Addresses[") && !strings.Contains(err.Error(), "addresses[") {
				t.Fatalf("error %q does not name the entry", err)
			}
			return
		}
		for _, fam := range []Family{IPv4, IPv6} {
			rs := p.ranges[map[Family]int{IPv4: 0, IPv6: 1}[fam]]
			for i, r := range rs {
				if FamilyOf(r.first) != fam || FamilyOf(r.last) != fam || r.last.Less(r.first) {
					t.Fatalf("bad range %v in %s", r, p)
				}
				if i > 0 && !rs[i-1].last.Next().Less(r.first) {
					t.Fatalf("ranges %v and %v overlap or touch", rs[i-1], r)
				}
				if !p.Contains(r.first) || !p.Contains(r.last) {
					t.Fatalf("pool %s does not contain its own range ends %v", p, r)
				}
			}
			if a, ok := p.Allocate(fam, nil); ok != p.Has(fam) || (ok && (!p.Contains(a) || a != rs[0].first)) {
				t.Fatalf("Allocate(%s) = %v %v on %s", fam, a, ok, p)
			}
			_ = p.Size(fam)
		}
	})
}

// TestEdges: a CIDR entry's network and broadcast (IPv4) or subnet-router
// anycast (IPv6) address is an edge; ranges, single addresses, /31, /32,
// /127 and /128 have none, and edges stay in the pool's ranges.
func TestEdges(t *testing.T) {
	p, err := Parse([]string{"10.99.0.200/29", "10.99.0.220-10.99.0.222", "10.99.0.230/31", "10.99.0.240/32", "fd00:99::200/125", "fd00:99::300/127", " 10.99.1.9/24 "}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"10.99.0.200": true, "10.99.0.207": true, "10.99.0.201": false, "10.99.0.206": false,
		"10.99.0.220": false, "10.99.0.222": false, "10.99.0.230": false, "10.99.0.231": false,
		"10.99.0.240": false, "fd00:99::200": true, "fd00:99::207": false, "fd00:99::300": false,
		"10.99.1.0": true, "10.99.1.255": true, "10.99.1.9": false, "10.99.0.0": false,
	} {
		a := netip.MustParseAddr(s)
		if got := p.IsEdge(a); got != want {
			t.Errorf("IsEdge(%s) = %v, want %v", s, got, want)
		}
		if want && !p.Contains(a) {
			t.Errorf("edge %s left the pool's ranges", s)
		}
	}
	var nilPool *Pool
	if nilPool.IsEdge(netip.MustParseAddr("10.99.0.200")) {
		t.Error("nil pool has edges")
	}
}

func TestHostProblem(t *testing.T) {
	for s, bad := range map[string]bool{
		"10.99.0.5": false, "fd00:99::5": false, "192.0.2.1": false, "2001:db8::1": false,
		"224.0.0.5": true, "239.1.2.3": true, "ff02::12": true, "127.0.0.1": true, "::1": true,
		"169.254.1.1": true, "fe80::1": true, "0.0.0.0": true, "::": true, "255.255.255.255": true,
		"0.1.2.3": true, "240.0.0.1": true, "::ffff:10.99.0.5": true, "fe80::1%eth0": true,
	} {
		if got := HostProblem(netip.MustParseAddr(s)); (got != "") != bad {
			t.Errorf("HostProblem(%s) = %q, want bad=%v", s, got, bad)
		}
	}
	if HostProblem(netip.Addr{}) == "" {
		t.Error("zero Addr passes")
	}
}

// TestAllocatable counts what Allocate can hand out: CIDR entries lose their edges
// (unless excluded already), ranges and single addresses keep every address.
func TestAllocatable(t *testing.T) {
	for _, tc := range []struct {
		addrs, excl []string
		f           Family
		want        int64
	}{
		{[]string{"10.99.0.200/29"}, nil, IPv4, 6},
		{[]string{"10.99.0.200/29"}, []string{"10.99.0.200"}, IPv4, 6},
		{[]string{"10.99.0.200/29"}, []string{"10.99.0.201"}, IPv4, 5},
		{[]string{"10.99.0.220-10.99.0.222", "10.99.0.230/31", "10.99.0.240/32"}, nil, IPv4, 6},
		{[]string{"fd00:99::200/125", "10.99.0.200/29"}, nil, IPv6, 7},
		{[]string{"fd00:99::200/125"}, nil, IPv4, 0},
	} {
		p, err := Parse(tc.addrs, tc.excl)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Allocatable(tc.f); got.Int64() != tc.want {
			t.Errorf("%v minus %v: Allocatable(%s) = %v, want %d", tc.addrs, tc.excl, tc.f, got, tc.want)
		}
	}
	var nilPool *Pool
	if nilPool.Allocatable(IPv4).Sign() != 0 {
		t.Error("nil pool has addresses")
	}
}
