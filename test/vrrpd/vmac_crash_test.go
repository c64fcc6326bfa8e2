package vrrpd_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// parentARP reads h's eth0 arp_ignore and arp_filter, as "ignore/filter".
func parentARP(t *testing.T, h *netlab.Host) string {
	t.Helper()
	var vals []string
	if err := h.Do(func() error {
		for _, k := range []string{"arp_ignore", "arp_filter"} {
			b, err := os.ReadFile(filepath.Join("/proc/sys/net/ipv4/conf/eth0", k))
			if err != nil {
				return err
			}
			vals = append(vals, strings.TrimSpace(string(b)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(vals, "/")
}

// TestKill9RestoresVMACParent (issue 27, item 5): use_vmac makes vrrpd set its
// interface's arp_ignore and arp_filter, the node's settings. The originals (2/0 here,
// not the kernel's defaults) are recorded in the state directory before the change: a
// vrrpd killed with SIGKILL leaves the change and its vrrp.51 behind, the next vrrpd on
// that state directory puts them back before it starts (and makes its own macvlan again,
// recording the same originals), and after a second kill -9 a vrrpd without use_vmac
// leaves the interface as it was before the first: 2/0, no macvlan. A clean stop
// restores them too.
func TestKill9RestoresVMACParent(t *testing.T) {
	_, _, h1, _ := newLab(t)
	if err := h1.Do(func() error {
		return errors.Join(
			os.WriteFile("/proc/sys/net/ipv4/conf/eth0/arp_ignore", []byte("2"), 0o644),
			os.WriteFile("/proc/sys/net/ipv4/conf/eth0/arp_filter", []byte("0"), 0o644))
	}); err != nil {
		t.Fatal(err)
	}
	state := vrrpdtest.NewStateDir(t)
	vmacConf := writeConf(t, "vmac.conf", vmacConf("h1", 200, "MASTER", vip4))
	plainConf := writeConf(t, "plain.conf", "global_defs {\n  vrrp_version 3\n}\n"+vrrpInstance("VI_1", 51, 200, "1", "", vip4.String()))
	vmacUp := func(what string) {
		t.Helper()
		vrrpdtest.WaitFor(t, 10*time.Second, what, func() bool {
			_, ready, holds := vmacState(t, h1, vip4)
			return ready && holds
		})
		if got := parentARP(t, h1); got != "1/1" {
			t.Fatalf("%s: eth0 arp_ignore/arp_filter %s, want 1/1 while a macvlan sits on it", what, got)
		}
	}
	logged := func(v *vrrpd, line string) {
		t.Helper()
		vrrpdtest.WaitFor(t, 5*time.Second, "the log line "+line, func() bool { return strings.Contains(v.Output(), line) })
	}
	kill := func(v *vrrpd) {
		t.Helper()
		v.Kill()
		_ = v.Wait(5 * time.Second)
		if exists, _, _ := vmacState(t, h1, vip4); !exists || parentARP(t, h1) != "1/1" {
			t.Fatalf("after kill -9: vrrp.51 there %v, eth0 %s: the crash should leave both (test premise)", exists, parentARP(t, h1))
		}
	}

	v := startVrrpd(t, h1, vmacConf, state)
	vmacUp("the first vrrpd master on vrrp.51")
	kill(v)

	v = startVrrpd(t, h1, vmacConf, state)
	vmacUp("the second vrrpd master on its own vrrp.51")
	logged(v, "restored interface setting changed by a previous run")
	kill(v)

	v = startVrrpd(t, h1, plainConf, state)
	vrrpdtest.WaitFor(t, 10*time.Second, "the third vrrpd master, no macvlan, eth0 as before", func() bool {
		exists, _, _ := vmacState(t, h1, vip4)
		st, err := v.status()
		return err == nil && len(st.Instances) == 1 && st.Instances[0].State == "MASTER" && !exists && parentARP(t, h1) == "2/0"
	})
	logged(v, "removed stale VMAC interface left by a previous run")
	v.MustStop(t)

	// A clean stop restores them without a record left over.
	v = startVrrpd(t, h1, vmacConf, state)
	vmacUp("a fourth vrrpd master on vrrp.51")
	v.MustStop(t)
	if exists, _, _ := vmacState(t, h1, vip4); exists || parentARP(t, h1) != "2/0" {
		t.Errorf("after a clean stop: vrrp.51 there %v, eth0 %s, want gone and 2/0", exists, parentARP(t, h1))
	}
	if _, err := os.Stat(filepath.Join(state, "vmacs.json")); !os.IsNotExist(err) {
		t.Errorf("VMAC record left after a clean stop: %v", err)
	}
}
