package daemon

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// addrMonitor records the address deletions of one network namespace, from netlink's
// address events (RTM_DELADDR), as they happen.
type addrMonitor struct {
	mu      sync.Mutex
	deleted []netip.Addr
	added   []netip.Addr
	addedAt map[netip.Addr]time.Time // when its first addition was read
}

// firstAdded is when a's first addition was read, zero if never.
func (m *addrMonitor) firstAdded(a netip.Addr) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addedAt[a]
}

func (m *addrMonitor) deletions(a netip.Addr) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(m.deleted), func(x netip.Addr) bool { return x != a }))
}

func (m *addrMonitor) sawAdded(a netip.Addr) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.added, a)
}

// parseAddrEvent reads one line of `ip -o monitor address`: "[Deleted ]IDX: DEV    inet
// ADDR/LEN ...".
func parseAddrEvent(line string) (deleted bool, a netip.Addr, ok bool) {
	line, deleted = strings.CutPrefix(line, "Deleted ")
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "inet" || f[i] == "inet6" {
			p, err := netip.ParsePrefix(f[i+1])
			return deleted, p.Addr(), err == nil
		}
	}
	return false, netip.Addr{}, false
}

// labDaemon is a daemon whose VIPs are a real vip.Manager's in the namespace of a lab
// host (the rest on the fakes), and that host.
func labDaemon(t *testing.T) (*netlab.Host, *Daemon) {
	t.Helper()
	h, d, _ := labDaemonHost(t)
	return h, d
}

// labDaemonHost is labDaemon with the fake host that carries its adverts.
func labDaemonHost(t *testing.T) (*netlab.Host, *Daemon, *fakeHost) {
	t.Helper()
	lab := netlabtest.New(t, "a")
	h := lab.Host("a")
	var m *vip.Manager
	if err := h.Do(func() (err error) {
		m, err = vip.New(t.TempDir()) // its netlink socket is the namespace's
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	fh := newFakeHost()
	d := newTestDaemonVIPs(t, fh, m)
	return h, d, fh
}

// watchAddrs starts an address monitor in h's namespace and returns it with settle,
// which returns once every address change made before it has been seen.
func watchAddrs(t *testing.T, h *netlab.Host) (*addrMonitor, func()) {
	t.Helper()
	// The monitor: iproute2's `ip -o monitor address` in the namespace, one line per
	// netlink address event (RTM_NEWADDR, or RTM_DELADDR as "Deleted ..."). (netlink's
	// AddrSubscribe ends at once here with EAGAIN from its non-blocking socket.)
	mon := &addrMonitor{addedAt: map[netip.Addr]time.Time{}}
	cmd := h.Command(t.Context(), "ip", "-o", "monitor", "address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			at := time.Now()
			deleted, a, ok := parseAddrEvent(sc.Text())
			if !ok {
				continue
			}
			mon.mu.Lock()
			if deleted {
				mon.deleted = append(mon.deleted, a)
			} else {
				mon.added = append(mon.added, a)
				if _, seen := mon.addedAt[a]; !seen {
					mon.addedAt[a] = at
				}
			}
			mon.mu.Unlock()
		}
	}()
	// settle puts a marker address on eth0 and waits for its event: the kernel delivers a
	// namespace's address events in order, so every change before it has been seen. The
	// marker goes on again until seen, as the first may come before the monitor listens.
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nh.Close)
	link, err := nh.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	markers := 0
	settle := func() {
		t.Helper()
		markers++
		marker := netip.AddrFrom4([4]byte{10, 99, 0, byte(200 + markers)})
		a := &netlink.Addr{IPNet: &net.IPNet{IP: marker.AsSlice(), Mask: net.CIDRMask(32, 32)}}
		poll.Until(t, 30*time.Second, func() error {
			if mon.sawAdded(marker) {
				return nil
			}
			nh.AddrDel(link, a) // absent the first time
			if err := nh.AddrAdd(link, a); err != nil {
				return err
			}
			return fmt.Errorf("no event for the marker %v yet", marker)
		})
	}
	settle() // the monitor listens
	return mon, settle
}

// TestReloadMovesVIPBetweenMastersWithoutDeleting: one reload moves an address from
// virtual router A to virtual router B, both master on this node (a shared router's
// member changing router, docs/design/router-sharing.md §4 case 1). The daemon runs on a
// real vip.Manager in a lab namespace, and the namespace's netlink address events show
// the address never leaves the interface: the reload's additions come before its
// releases. First with A kept (A listed first, so it is reconfigured first), then with A
// removed (removals go first). Last, a reload that drops the address for good shows the
// monitor does see a deletion.
func TestReloadMovesVIPBetweenMastersWithoutDeleting(t *testing.T) {
	h, d := labDaemon(t)
	x, y := netip.MustParsePrefix("10.99.0.100/24"), netip.MustParsePrefix("10.99.0.102/24")
	a := testInstance("A", 1, 100, x.String(), y.String())
	b := testInstance("B", 2, 100, "10.99.0.101/24")
	startDaemon(t, d, a, b)
	now := takeover(100)
	advance(d, now)
	for _, name := range []string{"A", "B"} {
		if s := snapOf(t, d, name); s.State != vrrp.StateMaster {
			t.Fatalf("%s is %v, want MASTER", name, s.State)
		}
	}
	for _, p := range []netip.Prefix{x, y} {
		if on, err := h.HasAddr(p); err != nil || !on {
			t.Fatalf("%v on eth0: %v, %v; want it held by A", p, on, err)
		}
	}
	mon, settle := watchAddrs(t, h)

	reload := func(step string, ics ...config.Instance) {
		t.Helper()
		now = now.Add(time.Second)
		advance(d, now)
		if err := d.reload(&config.Config{Instances: ics}, now); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		advance(d, now)
		settle()
	}
	held := func(step string, p netip.Prefix, want bool) {
		t.Helper()
		if on, err := h.HasAddr(p); err != nil || on != want {
			t.Errorf("%s: %v on eth0: %v, %v; want %v", step, p, on, err, want)
		}
	}

	// 1. X moves from A (kept, listed first) to B.
	a1 := testInstance("A", 1, 100, y.String())
	b1 := testInstance("B", 2, 100, "10.99.0.101/24", x.String())
	reload("X from A to B", a1, b1)
	if n := mon.deletions(x.Addr()); n != 0 {
		t.Errorf("X from A to B: %v deleted from eth0 %d time(s), want never", x, n)
	}
	held("X from A to B", x, true)

	// 2. A is removed, its last address Y moving to B.
	b2 := testInstance("B", 2, 100, "10.99.0.101/24", x.String(), y.String())
	reload("A removed, Y to B", b2)
	if n := mon.deletions(y.Addr()); n != 0 {
		t.Errorf("A removed, Y to B: %v deleted from eth0 %d time(s), want never", y, n)
	}
	held("A removed, Y to B", y, true)
	if s := snapOf(t, d, "B"); s.State != vrrp.StateMaster {
		t.Errorf("B is %v after the moves, want MASTER", s.State)
	}

	// 3. The bridge is gone: X dropped from B for good leaves the interface, and the
	// monitor sees it.
	before := mon.deletions(x.Addr())
	b3 := testInstance("B", 2, 100, "10.99.0.101/24", y.String())
	reload("X dropped", b3)
	if n := mon.deletions(x.Addr()) - before; n != 1 {
		t.Errorf("X dropped: %v deleted %d time(s), want once", x, n)
	}
	held("X dropped", x, false)
	held("X dropped", y, true)
}

// TestReloadBridgesOnlyBetweenMasters: the reload's bridge (bridgeMoves) keeps an address
// only for a master that takes it over. Moved to a backup here, the address goes with
// its old holder's release, as before, and nothing is left held by the bridge; an
// address one master keeps (moved to another master that lists it too) is not re-held.
func TestReloadBridgesOnlyBetweenMasters(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	x, y := "10.99.0.100/24", "10.99.0.102/24"
	a := testInstance("A", 1, 100, x, y)
	b := testInstance("B", 2, 100, "10.99.0.101/24")
	startDaemon(t, d, a, b)
	conn := d.byName["B"].conn
	now := t0
	for ; now.Before(t0.Add(5 * time.Second)); now = now.Add(time.Second) {
		advance(d, now)
		p := peerAdvert(t, 2, 150, "10.99.0.101/24") // another node masters B
		d.handlePacket(conn, &p, now)
	}
	if sa, sb := snapOf(t, d, "A"), snapOf(t, d, "B"); sa.State != vrrp.StateMaster || sb.State != vrrp.StateBackup {
		t.Fatalf("A %v, B %v; want MASTER, BACKUP", sa.State, sb.State)
	}
	calls := len(h.vipCalls)
	if err := d.reload(&config.Config{Instances: []config.Instance{
		testInstance("A", 1, 100, y), testInstance("B", 2, 100, "10.99.0.101/24", x),
	}}, now); err != nil {
		t.Fatal(err)
	}
	want := []string{"remove " + x + " dev eth0"}
	if !slices.Equal(h.vipCalls[calls:], want) {
		t.Errorf("moved to a backup: VIP calls %q, want %q", h.vipCalls[calls:], want)
	}
	if got := h.heldList(); !slices.Equal(got, []string{y + " dev eth0"}) {
		t.Errorf("held after the move to a backup: %q, want only %s", got, y)
	}
	for v, hs := range h.holders {
		if hs[bridgeHolder] {
			t.Errorf("%v still held by the bridge", v)
		}
	}
}

// TestReloadDoesNotBridgeAKeptAddress: an address that another master keeps listing
// stays on the interface through that master's hold; the reload takes no hold of its
// own on it (which would cost a netlink round trip per address).
func TestReloadDoesNotBridgeAKeptAddress(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	x := "10.99.0.100/24"
	startDaemon(t, d, testInstance("A", 1, 100, x, "10.99.0.102/24"), testInstance("C", 3, 100, x))
	now := takeover(100)
	advance(d, now)
	if sa, sc := snapOf(t, d, "A"), snapOf(t, d, "C"); sa.State != vrrp.StateMaster || sc.State != vrrp.StateMaster {
		t.Fatalf("A %v, C %v; want both MASTER", sa.State, sc.State)
	}
	calls := len(h.vipCalls)
	if err := d.reload(&config.Config{Instances: []config.Instance{
		testInstance("A", 1, 100, "10.99.0.102/24"), testInstance("C", 3, 100, x),
	}}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	want := []string{"remove " + x + " dev eth0"} // A lets go; C still holds it
	if !slices.Equal(h.vipCalls[calls:], want) {
		t.Errorf("VIP calls %q, want %q", h.vipCalls[calls:], want)
	}
	if !h.held[vip.VIP{Prefix: netip.MustParsePrefix(x), Dev: "eth0"}] {
		t.Errorf("%s not held after A let go, want it held by C", x)
	}
}
