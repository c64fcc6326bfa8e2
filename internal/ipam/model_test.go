package ipam

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestPoolMatchesSetModel builds random pools over 10.99.0.0/26 from random
// CIDRs, ranges and single addresses, and compares Contains, Size and the
// allocation order against a plain set of the 64 addresses.
func TestPoolMatchesSetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 99, 0, byte(i)}) }
	entry := func(set *[64]bool, val bool) string {
		switch rng.IntN(3) {
		case 0:
			bits := 26 + rng.IntN(7)
			size := 1 << (32 - bits)
			start := rng.IntN(64) &^ (size - 1)
			for i := start; i < start+size; i++ {
				set[i] = val
			}
			// Sometimes write host bits, which must be masked.
			return fmt.Sprintf("%s/%d", addr(start+rng.IntN(size)), bits)
		case 1:
			a, b := rng.IntN(64), rng.IntN(64)
			if a > b {
				a, b = b, a
			}
			for i := a; i <= b; i++ {
				set[i] = val
			}
			return fmt.Sprintf("%s-%s", addr(a), addr(b))
		default:
			a := rng.IntN(64)
			set[a] = val
			return addr(a).String()
		}
	}
	for iter := 0; iter < 2000; iter++ {
		var in, ex [64]bool
		var incl, excl []string
		for n := rng.IntN(5); n > 0; n-- {
			incl = append(incl, entry(&in, true))
		}
		for n := rng.IntN(4); n > 0; n-- {
			excl = append(excl, entry(&ex, true))
		}
		p := mustParse(t, incl, excl)
		var free []int
		for i := 0; i < 64; i++ {
			want := in[i] && !ex[i]
			if got := p.Contains(addr(i)); got != want {
				t.Fatalf("pool %q minus %q: Contains(%s) = %v, want %v (parsed %s)", incl, excl, addr(i), got, want, p)
			}
			if want {
				free = append(free, i)
			}
		}
		if got := p.Size(IPv4).Int64(); got != int64(len(free)) {
			t.Fatalf("pool %q minus %q: Size = %d, want %d", incl, excl, got, len(free))
		}
		used := map[netip.Addr]bool{}
		for _, i := range free {
			a, ok := p.Allocate(IPv4, func(a netip.Addr) bool { return used[a] })
			if !ok || a != addr(i) {
				t.Fatalf("pool %q minus %q: allocated %v %v, want %s", incl, excl, a, ok, addr(i))
			}
			used[a] = true
		}
		if a, ok := p.Allocate(IPv4, func(a netip.Addr) bool { return used[a] }); ok {
			t.Fatalf("pool %q minus %q: allocated %s past exhaustion", incl, excl, a)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	incl := []string{"10.99.0.200/29", "10.99.0.220-10.99.0.222", "fd00:99::/64", "10.99.0.0/24"}
	excl := []string{"10.99.0.200", "fd00:99::/120", "10.99.0.10-10.99.0.20"}
	for b.Loop() {
		if _, err := Parse(incl, excl); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllocateIPv6With1000InUse allocates the 1001st address of a /64
// with 1000 addresses in use: the cost of the walk past them.
func BenchmarkAllocateIPv6With1000InUse(b *testing.B) {
	p, _ := Parse([]string{"fd00:99::/64"}, nil)
	used := map[netip.Addr]bool{}
	for i := 0; i < 1000; i++ {
		a, _ := p.Allocate(IPv6, func(a netip.Addr) bool { return used[a] })
		used[a] = true
	}
	inUse := func(a netip.Addr) bool { return used[a] }
	for b.Loop() {
		if _, ok := p.Allocate(IPv6, inUse); !ok {
			b.Fatal("exhausted")
		}
	}
}

func BenchmarkContains(b *testing.B) {
	var incl []string
	for i := 0; i < 256; i += 2 {
		incl = append(incl, fmt.Sprintf("10.99.%d.0/24", i))
	}
	p, _ := Parse(incl, nil)
	a := netip.MustParseAddr("10.99.201.7")
	for b.Loop() {
		if p.Contains(a) {
			b.Fatal("odd /24 contained")
		}
	}
}
