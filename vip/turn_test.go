package vip

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// onDisk is the record file's VIPs, sorted as written.
func onDisk(t testing.TB, m *Manager) []VIP {
	t.Helper()
	rec, err := readRecord(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestTurn: within a turn, Reserve writes the takeovers' VIPs at once and Hold adds them
// without writing; a removal only leaves the record in memory (the file keeps listing the
// gone VIP, which is safe) until EndTurn, which also drops what was reserved and never
// held. A foreign address is never reserved, and Hold still reports it.
func TestTurn(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	foreign := VIP{Prefix: netip.MustParsePrefix("10.99.0.150/32"), Dev: "eth0"}
	ip(t, a, "addr", "add", foreign.Prefix.String(), "dev", "eth0")
	if err := m.EndTurn(); err == nil {
		t.Error("EndTurn without BeginTurn: no error")
	}
	if err := m.Reserve(v4); err != nil || len(onDisk(t, m)) != 0 {
		t.Fatalf("Reserve outside a turn recorded %v (err %v)", onDisk(t, m), err)
	}

	m.BeginTurn()
	if err := m.Reserve(v4, v6, foreign); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, m); !slices.Equal(got, []VIP{v4, v6}) {
		t.Fatalf("after Reserve the file lists %v, want %v and %v (not the foreign one)", got, v4, v6)
	}
	for _, v := range []VIP{v4, v6} {
		if ok, _ := a.HasAddr(v.Prefix); ok {
			t.Errorf("Reserve put %s on the interface", v)
		}
	}
	if f, err := m.Hold("VI_1", v4, foreign); err != nil || len(f) != 1 || f[0] != foreign {
		t.Fatalf("Hold: foreign %v, err %v; want the foreign one reported", f, err)
	}
	if ok, _ := a.HasAddr(v4.Prefix); !ok {
		t.Fatal("v4 not added")
	}
	if err := m.Release("VI_1", v4); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.HasAddr(v4.Prefix); ok {
		t.Fatal("v4 not removed")
	}
	if got := onDisk(t, m); !slices.Equal(got, []VIP{v4, v6}) {
		t.Errorf("inside the turn the file lists %v, want it unwritten since Reserve", got)
	}
	m.BeginTurn() // nested: the inner end writes nothing
	if err := m.EndTurn(); err != nil || len(onDisk(t, m)) != 2 {
		t.Errorf("inner EndTurn wrote %v (err %v)", onDisk(t, m), err)
	}
	if err := m.EndTurn(); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, m); len(got) != 0 {
		t.Errorf("after the turn the file lists %v, want nothing: v4 released, v6 never held", got)
	}
	if ok, _ := a.HasAddr(foreign.Prefix); !ok {
		t.Error("the foreign address was touched")
	}

	// A reserved VIP someone else adds before the Hold is theirs, as outside a turn.
	m.BeginTurn()
	if err := m.Reserve(v4h); err != nil {
		t.Fatal(err)
	}
	ip(t, a, "addr", "add", v4h.Prefix.String(), "dev", "eth0")
	if f, err := m.Hold("VI_2", v4h); err != nil || len(f) != 1 {
		t.Errorf("Hold of a raced reserved VIP: foreign %v, err %v; want it foreign", f, err)
	}
	if err := m.EndTurn(); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, m); len(got) != 0 {
		t.Errorf("the raced VIP is recorded: %v", got)
	}
}

// TestReservedReleasedThenHeld (issue 31's switch lab): in one turn, a VIP reserved for two
// takeovers is released by the one that stepped down before adding it, then held by the
// other. It must be on the interface and recorded, so that its holder's release removes
// it; before, the release dropped the record and left the reservation, the Hold trusted
// the reservation and added the address unrecorded, and nobody removed it again (a later
// Hold found it "foreign", and two hosts held it for good).
func TestReservedReleasedThenHeld(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	m.BeginTurn()
	if err := m.Reserve(v4); err != nil {
		t.Fatal(err)
	}
	if err := m.Release("router", v4); err != nil { // stepped down before its add
		t.Fatal(err)
	}
	if f, err := m.Hold("service", v4); err != nil || len(f) != 0 {
		t.Fatalf("Hold: foreign %v, err %v", f, err)
	}
	if err := m.EndTurn(); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, m); !slices.Equal(got, []VIP{v4}) {
		t.Errorf("after the turn the record lists %v, want %v", got, v4)
	}
	if err := m.Release("service", v4); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.HasAddr(v4.Prefix); ok {
		t.Error("the holder's release left the address on the interface: it was never recorded as ours")
	}
	// And a reservation released before anyone adds it touches nothing that is there.
	m.BeginTurn()
	if err := m.Reserve(v4h); err != nil {
		t.Fatal(err)
	}
	ip(t, a, "addr", "add", v4h.Prefix.String(), "dev", "eth0") // someone else, meanwhile
	if err := m.Release("router", v4h); err != nil {
		t.Fatal(err)
	}
	if err := m.EndTurn(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.HasAddr(v4h.Prefix); !ok {
		t.Error("releasing a reservation removed an address someone else added")
	}
}

// BenchmarkMassTakeover is a mass takeover and the step-down after it: 255 virtual
// routers adding, then removing, one VIP each, one Hold or Release each, outside a turn
// (a record write each, of a record that grows to 255 VIPs) and in one turn with Reserve
// (one write before the adds, one at the end).
func BenchmarkMassTakeover(b *testing.B) {
	for _, turn := range []bool{false, true} {
		b.Run(map[bool]string{false: "write-each", true: "one-turn"}[turn], func(b *testing.B) {
			m := labManager(b)
			vs := make([]VIP, 255)
			for i := range vs {
				vs[i] = VIP{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, 1, byte(i)}), 32), Dev: "eth0"}
			}
			for b.Loop() {
				if turn {
					m.BeginTurn()
					if err := m.Reserve(vs...); err != nil {
						b.Fatal(err)
					}
				}
				for i, v := range vs {
					if _, err := m.Hold(fmt.Sprint("VI_", i), v); err != nil {
						b.Fatal(err)
					}
				}
				if turn {
					if err := m.EndTurn(); err != nil {
						b.Fatal(err)
					}
					m.BeginTurn()
				}
				for i, v := range vs {
					if err := m.Release(fmt.Sprint("VI_", i), v); err != nil {
						b.Fatal(err)
					}
				}
				if turn {
					if err := m.EndTurn(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
