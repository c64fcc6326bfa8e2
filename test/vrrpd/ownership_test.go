package vrrpd_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// v3Conf is a VRRPv3 keepalived.conf of the given instances.
func v3Conf(instances ...string) string {
	return "global_defs {\n  vrrp_version 3\n}\n" + strings.Join(instances, "")
}

// hasExact reports whether h's eth0 holds exactly prefix p (address and length).
func hasExact(t testing.TB, h *netlab.Host, p netip.Prefix) bool {
	t.Helper()
	ps, err := h.AddrsOn(h.Link)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(ps, p)
}

// TestPreexistingAddressSurvives: an address on the interface before vrrpd (the node's
// own /32, a VIP another keepalived or kube-vip holds) that vrrpd is also configured with
// is served but never taken: the instance going BACKUP and vrrpd stopping leave it there,
// while the VIP vrrpd added itself goes.
func TestPreexistingAddressSurvives(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	pre := netip.MustParsePrefix("10.99.0.100/32")
	added := netip.MustParsePrefix("10.99.0.101/32")
	ipIn(t, h1, "addr", "add", pre.String(), "dev", h1.Link)
	conf := func(prio int) string {
		return v3Conf(vrrpInstance("VI_4", 51, prio, "0.1", "", pre.String(), added.String()))
	}
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", conf(150)), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 master with its VIP", func() bool {
		return d1.instance(t, "VI_4").State == "MASTER" && hasExact(t, h1, added)
	})
	vrrpdtest.WaitFor(t, time.Second, "vrrpd_vip_preexisting_total 1 (counters are published within 500 ms)", func() bool {
		return metric(d1.scrape(t), "vrrpd_vip_preexisting_total", `name="VI_4"`) == 1
	})
	if !strings.Contains(d1.Output(), "was not added by vrrpd") {
		t.Error("no log line about the preexisting address")
	}

	// h2 outranks it: h1 goes BACKUP and drops what it added, not what it found.
	startVrrpd(t, h2, writeConf(t, "h2.conf", conf(200)), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 backup without its VIP", func() bool {
		return d1.instance(t, "VI_4").State == "BACKUP" && !hasExact(t, h1, added)
	})
	if !hasExact(t, h1, pre) {
		t.Fatalf("the preexisting %s left h1 when VI_4 went BACKUP", pre)
	}
	d1.MustStop(t)
	if !hasExact(t, h1, pre) {
		t.Fatalf("the preexisting %s left h1 when vrrpd stopped", pre)
	}
}

// TestSharedVIPSurvivesOneInstance: two virtual routers with one VIP hold it together; one
// going BACKUP leaves it on the host for the other, the last one going takes it.
func TestSharedVIPSurvivesOneInstance(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	shared := netip.MustParsePrefix("10.99.0.100/32")
	pair := func(prioA, prioB int) string {
		s := v3Conf(vrrpInstance("VI_A", 51, prioA, "0.1", "", shared.String()))
		if prioB > 0 {
			s += vrrpInstance("VI_B", 53, prioB, "0.1", "", shared.String())
		}
		return s
	}
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", pair(150, 150)), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 master of both", func() bool {
		return d1.instance(t, "VI_A").State == "MASTER" && d1.instance(t, "VI_B").State == "MASTER"
	})
	conf2 := writeConf(t, "h2.conf", pair(200, 0))
	d2 := startVrrpd(t, h2, conf2, "")
	vrrpdtest.WaitFor(t, 3*time.Second, "VI_A BACKUP on h1", func() bool { return d1.instance(t, "VI_A").State == "BACKUP" })
	time.Sleep(300 * time.Millisecond)
	if !hasExact(t, h1, shared) || d1.instance(t, "VI_B").State != "MASTER" {
		t.Fatalf("VI_A going BACKUP took %s from VI_B (VI_B %s)", shared, d1.instance(t, "VI_B").State)
	}
	if err := os.WriteFile(conf2, []byte(pair(200, 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	d2.MustSignal(t, syscall.SIGHUP)
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 without the VIP once both are BACKUP", func() bool {
		return d1.instance(t, "VI_B").State == "BACKUP" && !hasExact(t, h1, shared)
	})
}

// TestFlushedVIPComesBack: a VIP taken off the master's interface by someone else is back
// within one advertisement interval, the instance still MASTER throughout.
func TestFlushedVIPComesBack(t *testing.T) {
	_, _, h1, _ := newLab(t)
	v := netip.MustParsePrefix("10.99.0.100/32")
	const interval = time.Second
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", v3Conf(vrrpInstance("VI_4", 51, 150, "1", "", v.String()))), "")
	vrrpdtest.WaitFor(t, 5*time.Second, "h1 master", func() bool {
		return d1.instance(t, "VI_4").State == "MASTER" && hasExact(t, h1, v)
	})
	before := d1.instance(t, "VI_4").Transitions
	obs := observe(t, h1) // address events, on the kernel's side of vrrpd
	for i := range 3 {
		flushed := time.Now()
		// One RTM_DELADDR, as ip addr flush or NetworkManager sends. (Not ip addr flush
		// itself: it repeats its rounds while a matching address is there, and so
		// takes the VIP off again each time vrrpd has put it back.)
		ipIn(t, h1, "addr", "del", v.String(), "dev", h1.Link)
		vrrpdtest.WaitFor(t, 3*interval, "the VIP back", func() bool { return hasExact(t, h1, v) })
		at, ok := obs.addedAt(v.Addr(), flushed)
		if !ok {
			t.Fatalf("flush %d: no address event for the VIP coming back", i+1)
		}
		back := at.Sub(flushed)
		t.Logf("flush %d: back after %v", i+1, back)
		if back > interval {
			t.Errorf("flush %d: VIP back after %v, more than one advertisement interval (%v)", i+1, back, interval)
		}
	}
	in := d1.instance(t, "VI_4")
	if in.State != "MASTER" || in.Transitions != before {
		t.Errorf("VI_4 %s after %d transitions (%d before the flushes), want MASTER throughout", in.State, in.Transitions, before)
	}
	if n := strings.Count(d1.Output(), "VIP was taken off the interface while master; adding it back"); n != 3 {
		t.Errorf("%d re-adds logged, want 3 (one per flush)", n)
	}
	vrrpdtest.WaitFor(t, time.Second, "vrrpd_vip_readded_total 3", func() bool {
		return metric(d1.scrape(t), "vrrpd_vip_readded_total", `name="VI_4"`) == 3
	})
}

// TestGARPRepeatBounded: garp_master_repeat 2^31-1 is refused with file:line (vrrpd check
// and a starting daemon alike); at the limit, 255 rounds of 50 VIPs with no pacing, the
// new master's advertisements stay on time on the wire while the announcements go out.
func TestGARPRepeatBounded(t *testing.T) {
	_, client, h1, _ := newLab(t)
	huge := writeConf(t, "huge.conf", v3Conf(vrrpInstance("VI_4", 51, 150, "0.1", "garp_master_repeat 2147483647\n", vip4.String())))
	out, err := exec.Command(vrrpdBinary(t), "check", "--config", huge).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "huge.conf:") || !strings.Contains(string(out), `garp_master_repeat "2147483647" is not a number between 0 and 255`) {
		t.Fatalf("vrrpd check accepted garp_master_repeat 2^31-1 or did not name file:line: %v\n%s", err, out)
	}

	var vips []string
	for i := range 50 {
		vips = append(vips, fmt.Sprintf("10.99.0.%d/32", 100+i))
	}
	obs := observe(t, client)
	conf := v3Conf(vrrpInstance("VI_4", 51, 150, "0.1", "garp_master_repeat 255\ngarp_master_delay 1\n", vips...))
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", conf), "")
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 master", func() bool { return d1.instance(t, "VI_4").State == "MASTER" })
	since := time.Now()
	time.Sleep(2500 * time.Millisecond) // both bursts: 2 x 255 rounds x 50 GARPs
	iv := 100 * time.Millisecond
	mdi := vrrp.MasterDownInterval(150, iv)
	gap := obs.maxGap(h1.Addr4, 51, since.Add(-200*time.Millisecond), time.Now())
	n := obs.countFrom(h1.Addr4, 51, since)
	t.Logf("adverts during the bursts: %d, largest gap %v", n, gap)
	if gap >= mdi || n < 15 {
		t.Errorf("adverts %d in 2.5 s, largest gap %v (a backup takes over after %v)\n%s", n, gap, mdi, obs.timeline(h1.Addr4, 51, since, time.Now()))
	}
}

// TestReplacedDaemonRemovesOnlyItsVIPs: two vrrpd on one node, one per group, each with
// its own state directory (the DaemonSet's hostPath /run/vrrpd/<group>). One is killed
// (SIGKILL) as master; its replacement, given the same state directory, removes exactly
// the VIPs the first added before it joins: not the other group's, and not an address
// that was on the interface before either.
func TestReplacedDaemonRemovesOnlyItsVIPs(t *testing.T) {
	_, _, h1, _ := newLab(t)
	pre := netip.MustParsePrefix("10.99.0.120/32")
	ipIn(t, h1, "addr", "add", pre.String(), "dev", h1.Link)
	ownA := []netip.Prefix{netip.MustParsePrefix("10.99.0.101/32"), netip.MustParsePrefix("fd00:99::101/128")}
	ownB := netip.MustParsePrefix("10.99.0.102/32")
	confA := writeConf(t, "a.conf", v3Conf(vrrpInstance("VI_A", 51, 150, "1", "", ownA[0].String(), pre.String()),
		vrrpInstance("VI_A6", 51, 150, "1", "", ownA[1].String())))
	dirA := vrrpdtest.NewStateDir(t)
	a := startVrrpd(t, h1, confA, dirA)
	// The other group's daemon: its own state directory and HTTP port.
	b := vrrpdtest.Start(t, h1, "vrrpd-b@h1", nil, vrrpdBinary(t), "--config",
		writeConf(t, "b.conf", v3Conf(vrrpInstance("VI_B", 52, 150, "1", "", ownB.String()))),
		"--state-dir", vrrpdtest.NewStateDir(t), "--metrics-address", "127.0.0.1:9651")
	vrrpdtest.WaitFor(t, 6*time.Second, "both masters with their VIPs", func() bool {
		return hasExact(t, h1, ownA[0]) && hasExact(t, h1, ownA[1]) && hasExact(t, h1, ownB)
	})

	a.Kill()
	if !hasExact(t, h1, ownA[0]) {
		t.Fatal("kill -9 should have left the VIPs behind; the test proves nothing")
	}
	// The replacement: same state directory, and (a pod with a newer status) no longer
	// configured with VI_A at all, so whatever goes is the record's doing.
	other := writeConf(t, "a2.conf", v3Conf(vrrpInstance("VI_C", 54, 150, "1", "", "10.99.0.130/32")))
	a2 := startVrrpd(t, h1, other, dirA)
	vrrpdtest.WaitFor(t, 3*time.Second, "the killed daemon's VIPs removed", func() bool {
		return !hasExact(t, h1, ownA[0]) && !hasExact(t, h1, ownA[1])
	})
	if !hasExact(t, h1, pre) || !hasExact(t, h1, ownB) {
		t.Errorf("the replacement removed more than its predecessor added: preexisting %v, other group's %v",
			hasExact(t, h1, pre), hasExact(t, h1, ownB))
	}
	if n := strings.Count(a2.Output(), "removed stale VIP left by a previous run"); n != 2 {
		t.Errorf("replacement reports %d stale VIPs removed, want 2:\n%s", n, a2.Output())
	}
	if !b.Running() {
		t.Error("the other group's vrrpd died")
	}
}
