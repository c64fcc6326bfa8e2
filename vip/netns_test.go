package vip

import (
	"bufio"
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// ipAddr shows `ip addr show dev eth0` inside the host: the view an admin
// gets, with labels and flags.
func ipAddr(t *testing.T, h *netlab.Host) string {
	t.Helper()
	out, err := h.Command(context.Background(), "ip", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil {
		t.Fatalf("ip addr: %v: %s", err, out)
	}
	return string(out)
}

// ip runs `ip ARGS` inside the host, failing the test on an error.
func ip(t *testing.T, h *netlab.Host, args ...string) {
	t.Helper()
	if out, err := h.Command(t.Context(), "ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

func lineWith(out, needle string) string {
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, needle) {
			return l
		}
	}
	return ""
}

func newManager(t *testing.T, h *netlab.Host, dir string) *Manager {
	t.Helper()
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nh.Close)
	m, err := open(dir, nh)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

var (
	v4  = VIP{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0", Label: "eth0:vip"}
	v4h = VIP{Prefix: netip.MustParsePrefix("10.99.0.101/32"), Dev: "eth0"}
	v6  = VIP{Prefix: netip.MustParsePrefix("fd00:99::100/64"), Dev: "eth0"}
	v6h = VIP{Prefix: netip.MustParsePrefix("fd00:99::101/128"), Dev: "eth0"}
)

func TestAddRemoveIdempotent(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	all := []VIP{v4, v4h, v6, v6h}
	for range 2 {
		for _, v := range all {
			if err := m.Add(v); err != nil {
				t.Fatalf("Add(%s): %v", v, err)
			}
		}
	}
	for _, v := range all {
		if ok, err := a.HasAddr(v.Prefix); err != nil || !ok {
			t.Errorf("%s not on eth0 after Add (%v)", v, err)
		}
		if ok, err := present(m.nl, v); err != nil || !ok {
			t.Errorf("Present(%s) = %v, %v", v, ok, err)
		}
	}
	if got := len(m.recorded()); got != len(all) {
		t.Errorf("%d VIPs recorded, want %d", got, len(all))
	}
	out := ipAddr(t, a)
	// keepalived's form: the label, no broadcast, no DAD for IPv6, and a
	// /128 deprecated so it is never used as a source address.
	if l := lineWith(out, "10.99.0.100/24"); !strings.Contains(l, "eth0:vip") || strings.Contains(l, "brd") {
		t.Errorf("IPv4 VIP line %q: want label eth0:vip and no brd", l)
	}
	if l := lineWith(out, "fd00:99::100/64"); strings.Contains(l, "tentative") || !strings.Contains(l, "nodad") {
		t.Errorf("IPv6 VIP line %q: want nodad and not tentative", l)
	}
	if l := lineWith(out, "fd00:99::101/128"); !strings.Contains(l, "deprecated") {
		t.Errorf("IPv6 /128 VIP line %q: want deprecated", l)
	}
	// The VIP answers at once: the kernel lets us bind it (a tentative
	// address would fail with EADDRNOTAVAIL).
	if err := a.Do(func() error {
		c, err := bindUDP(v6.Prefix.Addr())
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Errorf("bind to the IPv6 VIP right after Add: %v", err)
	}

	for range 2 {
		for _, v := range all {
			if err := m.Remove(v); err != nil {
				t.Fatalf("Remove(%s): %v", v, err)
			}
		}
	}
	for _, v := range all {
		if ok, err := a.HasAddr(v.Prefix); err != nil || ok {
			t.Errorf("%s still on eth0 after Remove (%v)", v, err)
		}
	}
	if got := m.recorded(); len(got) != 0 {
		t.Errorf("record after removing everything: %v", got)
	}
	// The host's own addresses are untouched.
	if ok, _ := a.HasAddr(netip.PrefixFrom(a.Addr4, 24)); !ok {
		t.Error("host lost its own address")
	}
}

func TestAddUnknownInterfaceRecordsNothing(t *testing.T) {
	lab := netlabtest.New(t, "a")
	m := newManager(t, lab.Host("a"), t.TempDir())
	v := VIP{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "nosuch0"}
	if err := m.Add(v); err == nil || !strings.Contains(err.Error(), "nosuch0") {
		t.Errorf("Add on a missing interface: %v", err)
	}
	if got := m.recorded(); len(got) != 0 {
		t.Errorf("recorded %v", got)
	}
	// Removing from a missing interface: nothing to do, no error.
	if err := m.Remove(v); err != nil {
		t.Errorf("Remove on a missing interface: %v", err)
	}
}

func TestStateDirIsExclusive(t *testing.T) {
	lab := netlabtest.New(t, "a")
	dir := t.TempDir()
	m := newManager(t, lab.Host("a"), dir)
	if _, err := New(dir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Manager on one state dir: %v", err)
	}
	m.Close()
	m2, err := New(dir)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	m2.Close()
}

func TestRecordSurvivesAndRemoveStale(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	dir := t.TempDir()
	m := newManager(t, a, dir)
	for _, v := range []VIP{v4, v6, v4h} {
		if err := m.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()

	m2 := newManager(t, a, dir)
	if got := m2.recorded(); len(got) != 3 {
		t.Fatalf("a new Manager sees %v, want the 3 VIPs", got)
	}
	removed, err := m2.removeStale(func(v VIP) bool { return v == v4h })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("removed %v, want v4 and v6", removed)
	}
	for v, want := range map[VIP]bool{v4: false, v6: false, v4h: true} {
		if ok, _ := a.HasAddr(v.Prefix); ok != want {
			t.Errorf("%s on eth0 = %v, want %v", v, ok, want)
		}
	}
	if got := m2.recorded(); len(got) != 1 || got[0] != v4h {
		t.Errorf("record %v, want only %s", got, v4h)
	}
}

func TestCorruptRecordIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, recordFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("New with a corrupt record: %v", err)
	}
}

// TestRecoverAfterKill9 runs a real second process that adds VIPs inside
// the namespace and is killed with SIGKILL; the next Manager must take the
// addresses off.
func TestRecoverAfterKill9(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := a.Command(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "VIP_HELPER_DIR="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	// While the helper runs it holds the state directory.
	if _, err := New(dir); err == nil {
		t.Fatal("state dir not locked by the running helper")
	}
	// ip netns exec execs the helper, so cmd.Process is the helper itself.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("helper did not die by signal: %v", err)
	}
	for _, v := range []VIP{v4, v6} {
		if ok, _ := a.HasAddr(v.Prefix); !ok {
			t.Fatalf("helper's VIP %s not on eth0 after kill -9", v)
		}
	}

	m := newManager(t, a, dir)
	removed, err := m.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("Recover removed %v, want 2 VIPs", removed)
	}
	for _, v := range []VIP{v4, v6} {
		if ok, _ := a.HasAddr(v.Prefix); ok {
			t.Errorf("%s still on eth0 after Recover", v)
		}
	}
	if got := m.recorded(); len(got) != 0 {
		t.Errorf("record after Recover: %v", got)
	}
}

// TestMain turns the test binary into the victim of TestRecoverAfterKill9
// when VIP_HELPER_DIR is set: it adds VIPs, says "ready" and waits to be
// killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("VIP_HELPER_DIR"); dir != "" {
		os.Exit(helperAddAndWait(dir))
	}
	if dir := os.Getenv("VMAC_HELPER_DIR"); dir != "" {
		os.Exit(helperVMACAndWait(dir))
	}
	os.Exit(m.Run())
}

func helperAddAndWait(dir string) int {
	mgr, err := New(dir) // inside the namespace: ip netns exec started us
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	for _, v := range []VIP{v4, v6} {
		if err := mgr.Add(v); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			return 1
		}
	}
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
	return 3 // not killed
}

// BenchmarkAddRemove measures one VIP's add and remove, record writes
// included: the state change cost of a failover per VIP.
func BenchmarkAddRemove(b *testing.B) {
	m := labManager(b)
	for b.Loop() {
		if err := m.Add(v4); err != nil {
			b.Fatal(err)
		}
		if err := m.Remove(v4); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBatchAddRemove(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	m := newManager(t, a, t.TempDir())
	// One bad VIP: nothing happens at all.
	bad := VIP{Prefix: netip.MustParsePrefix("10.99.0.102/24"), Dev: "eth0", Label: "wrong"}
	if err := m.Add(v4, bad, v6); err == nil {
		t.Fatal("batch with an invalid VIP accepted")
	}
	if ok, _ := a.HasAddr(v4.Prefix); ok || len(m.recorded()) != 0 {
		t.Fatal("a rejected batch changed something")
	}
	// Likewise a missing interface anywhere in the batch.
	if err := m.Add(v4, VIP{Prefix: v6.Prefix, Dev: "nosuch0"}); err == nil {
		t.Fatal("batch with a missing interface accepted")
	}
	if ok, _ := a.HasAddr(v4.Prefix); ok || len(m.recorded()) != 0 {
		t.Fatal("a batch with a missing interface changed something")
	}
	if err := m.Add(v4, v6, v4h, v6h); err != nil {
		t.Fatal(err)
	}
	for _, v := range []VIP{v4, v6, v4h, v6h} {
		if ok, _ := a.HasAddr(v.Prefix); !ok {
			t.Errorf("%s missing after batch Add", v)
		}
	}
	if err := m.Remove(v4, v6h); err != nil {
		t.Fatal(err)
	}
	rec := m.recorded()
	if len(rec) != 2 {
		t.Fatalf("record after removing 2 of 4: %v", rec)
	}
	for v, want := range map[VIP]bool{v4: false, v6: true, v4h: true, v6h: false} {
		if ok, _ := a.HasAddr(v.Prefix); ok != want {
			t.Errorf("%s present = %v, want %v", v, ok, want)
		}
	}
	// The record on disk agrees with memory.
	disk, err := readRecord(m.dir)
	if err != nil || len(disk) != 2 {
		t.Errorf("record on disk %v, %v", disk, err)
	}
}

// BenchmarkAddRemoveBatch4 is a failover of an instance with four VIPs.
func BenchmarkAddRemoveBatch4(b *testing.B) {
	m := labManager(b)
	all := []VIP{v4, v4h, v6, v6h}
	for b.Loop() {
		if err := m.Add(all...); err != nil {
			b.Fatal(err)
		}
		if err := m.Remove(all...); err != nil {
			b.Fatal(err)
		}
	}
}

// labManager is a Manager of a new lab host's addresses, closed with the lab when the
// test or benchmark ends.
func labManager(tb testing.TB) *Manager {
	tb.Helper()
	lab := netlabtest.New(tb, "a")
	nh, err := lab.Host("a").Netlink()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nh.Close() })
	m, err := open(tb.TempDir(), nh)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

func sysctlIn(t *testing.T, h *netlab.Host, family, iface, key string) string {
	t.Helper()
	var v string
	if err := h.Do(func() (err error) { v, err = readSysctl(family, iface, key); return err }); err != nil {
		t.Fatalf("sysctl %s %s: %v", iface, key, err)
	}
	return v
}

// TestVMACNetns: Up makes a private-mode macvlan with the virtual MAC on the parent,
// with keepalived's sysctls, up; a VIP on it is answered with the virtual MAC (the
// neighbour's ARP entry shows it); Remove deletes it and puts the parent's ARP
// settings back.
func TestVMACNetns(t *testing.T) {
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	m := VMAC{Name: "vrrp.51", Parent: "eth0", MAC: VirtualMAC(false, 51)}
	ignore0, filter0 := sysctlIn(t, a, "ipv4", "eth0", "arp_ignore"), sysctlIn(t, a, "ipv4", "eth0", "arp_filter")
	v := NewVMACs(nil)
	for range 2 { // the second Up finds the first one's macvlan and keeps it
		if err := a.Do(func() error { _, err := v.Up(m); return err }); err != nil {
			t.Fatal(err)
		}
	}
	nh := hostNetlink(t, a)
	link, err := nh.LinkByName("vrrp.51")
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := nh.LinkByName("eth0")
	mv, ok := link.(*netlink.Macvlan)
	switch {
	case !ok:
		t.Fatalf("vrrp.51 is a %s", link.Type())
	case mv.Mode != netlink.MACVLAN_MODE_PRIVATE:
		t.Errorf("mode %v, want private", mv.Mode)
	case mv.HardwareAddr.String() != "00:00:5e:00:01:33":
		t.Errorf("MAC %s", mv.HardwareAddr)
	case mv.ParentIndex != parent.Attrs().Index:
		t.Errorf("parent %d, want eth0 %d", mv.ParentIndex, parent.Attrs().Index)
	case mv.Flags&(1<<0) == 0:
		t.Errorf("not up: %v", mv.Flags)
	}
	for _, c := range [][4]string{
		{"ipv4", "vrrp.51", "arp_ignore", "1"}, {"ipv4", "vrrp.51", "accept_local", "1"},
		{"ipv4", "vrrp.51", "rp_filter", "0"}, {"ipv4", "vrrp.51", "promote_secondaries", "1"},
		{"ipv6", "vrrp.51", "disable_ipv6", "1"},
		{"ipv4", "eth0", "arp_ignore", "1"}, {"ipv4", "eth0", "arp_filter", "1"},
	} {
		if got := sysctlIn(t, a, c[0], c[1], c[2]); got != c[3] {
			t.Errorf("%s %s %s = %s, want %s", c[0], c[1], c[2], got, c[3])
		}
	}

	// A VIP on the macvlan is reached at the virtual MAC.
	vipAddr := netip.MustParsePrefix("10.99.0.100/24")
	mgr := newManager(t, a, t.TempDir())
	if err := mgr.Add(VIP{Prefix: vipAddr, Dev: "vrrp.51"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// a learns b's MAC first from its own address: otherwise a's ARP request for b,
	// sent from eth0 with the VIP as sender (arp_announce 0, keepalived leaves it),
	// would point b's entry for the VIP at eth0's MAC.
	if out, err := a.Command(ctx, "ping", "-c", "1", "-W", "2", b.Addr4.String()).CombinedOutput(); err != nil {
		t.Fatalf("ping b: %v: %s", err, out)
	}
	if out, err := b.Command(ctx, "ping", "-c", "1", "-W", "2", "10.99.0.100").CombinedOutput(); err != nil {
		t.Fatalf("ping VIP on the vmac: %v: %s", err, out)
	}
	if mac, st, err := b.Neighbor(vipAddr.Addr()); err != nil || mac.String() != "00:00:5e:00:01:33" {
		t.Errorf("b's neighbour entry for the VIP: %s %s %v, want the virtual MAC", mac, st, err)
	}

	if err := a.Do(func() error { return v.Remove(m) }); err != nil {
		t.Fatal(err)
	}
	if _, err := nh.LinkByName("vrrp.51"); err == nil {
		t.Error("vrrp.51 still there after Remove")
	}
	if ok, _ := a.HasAddr(vipAddr); ok {
		t.Error("VIP left on eth0")
	}
	if got := sysctlIn(t, a, "ipv4", "eth0", "arp_ignore"); got != ignore0 {
		t.Errorf("eth0 arp_ignore %s after Remove, was %s", got, ignore0)
	}
	if got := sysctlIn(t, a, "ipv4", "eth0", "arp_filter"); got != filter0 {
		t.Errorf("eth0 arp_filter %s after Remove, was %s", got, filter0)
	}
	// Removing again is not an error.
	if err := a.Do(func() error { return v.Remove(m) }); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// TestVMACNetnsIPv6AndStale: an IPv6 macvlan gets no automatic link-local address but
// the one given; a stale macvlan with the wrong MAC is replaced; a non-macvlan of the
// name is refused and left alone.
func TestVMACNetnsIPv6AndStale(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	ip(t, a, "link", "add", "link", "eth0", "name", "vrrp.62", "address", "02:00:00:00:00:01", "type", "macvlan", "mode", "bridge") // a stale one
	ll := netip.MustParseAddr("fe80::99:1")
	m := VMAC{Name: "vrrp.62", Parent: "eth0", MAC: VirtualMAC(true, 62), IPv6: true, LinkLocal: ll}
	v := NewVMACs(nil)
	if err := a.Do(func() error { _, err := v.Up(m); return err }); err != nil {
		t.Fatal(err)
	}
	nh := hostNetlink(t, a)
	link, err := nh.LinkByName("vrrp.62")
	if err != nil {
		t.Fatal(err)
	}
	if mv, ok := link.(*netlink.Macvlan); !ok || mv.Mode != netlink.MACVLAN_MODE_PRIVATE || mv.HardwareAddr.String() != "00:00:5e:00:02:3e" {
		t.Errorf("stale macvlan not replaced: %+v", link)
	}
	time.Sleep(200 * time.Millisecond) // an automatic address would appear as the link comes up
	addrs, err := a.AddrsOn("vrrp.62")
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 1 || addrs[0] != netip.PrefixFrom(ll, 64) {
		t.Errorf("addresses on vrrp.62: %v, want only %s/64", addrs, ll)
	}
	if err := a.Do(func() error { return v.Remove(m) }); err != nil {
		t.Fatal(err)
	}

	ip(t, a, "link", "add", "vrrp.63", "type", "veth", "peer", "name", "peer63")
	other := VMAC{Name: "vrrp.63", Parent: "eth0", MAC: VirtualMAC(false, 63)}
	err = a.Do(func() error { _, err := v.Up(other); return err })
	if err == nil || !strings.Contains(err.Error(), "conflicts") {
		t.Errorf("Up over a veth interface: %v", err)
	}
	if err := a.Do(func() error { return v.Remove(other) }); err == nil {
		t.Error("Remove deleted a veth interface")
	}
	if _, err := nh.LinkByName("vrrp.63"); err != nil {
		t.Errorf("veth interface gone: %v", err)
	}
}

// hostNetlink is a netlink handle in the lab host's namespace, closed when the test ends.
func hostNetlink(t *testing.T, h *netlab.Host) *netlink.Handle {
	t.Helper()
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nh.Close() })
	return nh
}
