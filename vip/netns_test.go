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
// (with fsync) included: the state change cost of a failover per VIP.
func BenchmarkAddRemove(b *testing.B) {
	lab := netlabtest.New(b, "a")
	nh, err := lab.Host("a").Netlink()
	if err != nil {
		b.Fatal(err)
	}
	defer nh.Close()
	m, err := open(b.TempDir(), nh)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
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
	lab := netlabtest.New(b, "a")
	nh, err := lab.Host("a").Netlink()
	if err != nil {
		b.Fatal(err)
	}
	defer nh.Close()
	m, err := open(b.TempDir(), nh)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
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
