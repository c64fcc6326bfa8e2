package vip

import (
	"bufio"
	"context"
	"errors"
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

// The VMAC crash record (issue 27, item 5): a parent's arp_ignore and arp_filter are the
// node's settings, and a vrrpd killed while its macvlans sit on the parent must not leave
// them changed for good.

// setSysctlIn writes an ipv4 conf sysctl of iface inside the host.
func setSysctlIn(t *testing.T, h *netlab.Host, iface, key, value string) {
	t.Helper()
	if err := h.Do(func() error { return writeSysctl("ipv4", iface, key, value) }); err != nil {
		t.Fatal(err)
	}
}

// wantParent checks eth0's arp_ignore and arp_filter.
func wantParent(t *testing.T, h *netlab.Host, when, ignore, filter string) {
	t.Helper()
	if got := sysctlIn(t, h, "ipv4", "eth0", "arp_ignore"); got != ignore {
		t.Errorf("%s: eth0 arp_ignore %s, want %s", when, got, ignore)
	}
	if got := sysctlIn(t, h, "ipv4", "eth0", "arp_filter"); got != filter {
		t.Errorf("%s: eth0 arp_filter %s, want %s", when, got, filter)
	}
}

var helperVMACs = []VMAC{
	{Name: "vrrp.51", Parent: "eth0", MAC: VirtualMAC(false, 51)},
	{Name: "vrrp.52", Parent: "eth0", MAC: VirtualMAC(false, 52)},
}

// TestVMACRecoverAfterKill9: the parent's sysctls are set to values that are not the
// kernel's defaults; a real second process (what vrrpd does at start: lock the state
// directory, recover, then Up) makes two macvlans on it and is killed with SIGKILL,
// leaving the parent changed and the macvlans there. The next run's Recover removes the
// macvlans and puts the parent's original values back, and leaves no record; a clean
// Remove does the same without a crash, and after it a Recover finds nothing to do.
func TestVMACRecoverAfterKill9(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	setSysctlIn(t, a, "eth0", "arp_ignore", "2")
	setSysctlIn(t, a, "eth0", "arp_filter", "0")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := a.Command(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "VMAC_HELPER_DIR="+dir)
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
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("helper did not die by signal: %v", err)
	}
	nh := hostNetlink(t, a)
	for _, m := range helperVMACs {
		if _, err := nh.LinkByName(m.Name); err != nil {
			t.Fatalf("helper's %s not there after kill -9: %v", m.Name, err)
		}
	}
	wantParent(t, a, "after kill -9", "1", "1")
	if _, err := os.Stat(filepath.Join(dir, vmacRecordFile)); err != nil {
		t.Fatalf("no VMAC record after kill -9: %v", err)
	}

	// The next run locks the state directory (vip.New), then recovers before anything
	// starts.
	newManager(t, a, dir)
	v, err := NewRecordedVMACs(nh, dir)
	if err != nil {
		t.Fatal(err)
	}
	var rec Recovered
	if err := a.Do(func() (err error) { rec, err = v.Recover(); return err }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.MACVLANs, ","); got != "vrrp.51,vrrp.52" {
		t.Errorf("Recover removed %q, want vrrp.51,vrrp.52", got)
	}
	if len(rec.Sysctls) != 2 {
		t.Errorf("Recover restored %v, want eth0's two settings", rec.Sysctls)
	}
	for _, m := range helperVMACs {
		if _, err := nh.LinkByName(m.Name); err == nil {
			t.Errorf("%s still there after Recover", m.Name)
		}
	}
	wantParent(t, a, "after Recover", "2", "0")
	if _, err := os.Stat(filepath.Join(dir, vmacRecordFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VMAC record left after Recover: %v", err)
	}

	// This run makes one, stops cleanly, and the record is empty again.
	if err := a.Do(func() error { _, err := v.Up(helperVMACs[0]); return err }); err != nil {
		t.Fatal(err)
	}
	wantParent(t, a, "after Up", "1", "1")
	if err := a.Do(func() error { return v.Remove(helperVMACs[0]) }); err != nil {
		t.Fatal(err)
	}
	wantParent(t, a, "after a clean Remove", "2", "0")
	if _, err := os.Stat(filepath.Join(dir, vmacRecordFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VMAC record left after a clean Remove: %v", err)
	}
	v2, err := NewRecordedVMACs(nh, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Do(func() (err error) { rec, err = v2.Recover(); return err }); err != nil || len(rec.MACVLANs)+len(rec.Sysctls) != 0 {
		t.Errorf("Recover after a clean stop: %+v, %v", rec, err)
	}
}

// TestVMACRecoverLeavesOthersAlone: a recorded macvlan name that is now someone else's
// interface (another type, or a macvlan with another MAC) is not removed.
func TestVMACRecoverLeavesOthersAlone(t *testing.T) {
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	dir := t.TempDir()
	rec := &vmacRecord{MACVLANs: map[string]recordedVMAC{
		"vrrp.61": {Parent: "eth0", MAC: VirtualMAC(false, 61).String()},
		"vrrp.62": {Parent: "eth0", MAC: VirtualMAC(false, 62).String()},
	}}
	if err := rec.write(dir); err != nil {
		t.Fatal(err)
	}
	ip(t, a, "link", "add", "vrrp.61", "type", "veth", "peer", "name", "peer61")
	ip(t, a, "link", "add", "link", "eth0", "name", "vrrp.62", "address", "02:00:00:00:00:62", "type", "macvlan", "mode", "private")
	nh := hostNetlink(t, a)
	v, err := NewRecordedVMACs(nh, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Do(func() error { _, err := v.Recover(); return err }); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vrrp.61", "vrrp.62"} {
		if _, err := nh.LinkByName(name); err != nil {
			t.Errorf("%s, not ours, removed: %v", name, err)
		}
	}
}

// TestVMACRecordCorrupt: a record that does not parse is an error at start, as the VIPs'
// is, rather than a record silently forgotten (whose parents would keep their changes).
func TestVMACRecordCorrupt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, vmacRecordFile), []byte("{nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRecordedVMACs(nil, dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("NewRecordedVMACs with a corrupt record: %v", err)
	}
}

// helperVMACAndWait is the victim of TestVMACRecoverAfterKill9, inside the lab's
// namespace (ip netns exec started it): vrrpd's start-up (the state directory locked,
// recovery) and two macvlans, then "ready", then it waits to be killed.
func helperVMACAndWait(dir string) int {
	fail := func(err error) int { os.Stderr.WriteString(err.Error() + "\n"); return 1 }
	mgr, err := New(dir)
	if err != nil {
		return fail(err)
	}
	defer mgr.Close()
	v, err := NewRecordedVMACs(&netlink.Handle{}, dir)
	if err != nil {
		return fail(err)
	}
	if _, err := v.Recover(); err != nil {
		return fail(err)
	}
	for _, m := range helperVMACs {
		if _, err := v.Up(m); err != nil {
			return fail(err)
		}
	}
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
	return 3 // not killed
}
