package vrrpd_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

func ipIn(t *testing.T, h *netlab.Host, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", h.Netns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s %s: %v: %s", h.Netns, strings.Join(args, " "), err, out)
	}
}

// TestInterfaceFault: an instance whose interface has no IPv4 address yet, or goes down,
// is in FAULT (holding nothing) and recovers by itself when the interface is usable again.
func TestInterfaceFault(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	hosts := []*netlab.Host{h1, h2}
	v4only := dualConf(150)
	v4only = v4only[:strings.Index(v4only, "vrrp_instance VI_6")]
	ipIn(t, h1, "addr", "del", h1.Addr4.String()+"/24", "dev", h1.Link)

	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", v4only), "")
	startVrrpd(t, h2, writeConf(t, "h2.conf", strings.Replace(v4only, "priority 150", "priority 100", 1)), "")
	vrrpdtest.WaitFor(t, 2*time.Second, "h1 in FAULT without an IPv4 address", func() bool {
		return d1.instance(t, "VI_4").State == "FAULT"
	})
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	if !d1.Running() {
		t.Fatal("vrrpd died on an interface without IPv4 address")
	}

	// The address arrives: h1 joins and, at priority 150, takes over.
	ipIn(t, h1, "addr", "add", h1.Addr4.String()+"/24", "dev", h1.Link)
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)

	// The interface goes down: FAULT, the VIP goes, h2 takes over; back up, h1 again.
	ipIn(t, h1, "link", "set", h1.Link, "down")
	vrrpdtest.WaitFor(t, 2*time.Second, "h1 in FAULT with eth0 down", func() bool {
		return d1.instance(t, "VI_4").State == "FAULT"
	})
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	ipIn(t, h1, "link", "set", h1.Link, "up")
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
}
