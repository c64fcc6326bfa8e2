package vrrpd_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestElectionFailoverAndGracefulStop is vrrpd's core promise on real sockets: two vrrpd
// elect one master; cutting the master's link hands over within Master_Down_Interval +
// 20 ms; the client's neighbour entries follow the VIPs by themselves (GARP, NA); the old
// master preempts back when its link returns; a graceful stop hands over within
// Skew_Time + 20 ms.
func TestElectionFailoverAndGracefulStop(t *testing.T) {
	_, client, h1, h2 := newLab(t)
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", dualConf(150)), "")
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", dualConf(100)), "")
	hosts := []*netlab.Host{h1, h2}

	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	waitSoleHolder(t, 3*time.Second, 0, vip6, h1, hosts...)
	if st := d1.instance(t, "VI_4"); st.State != "MASTER" {
		t.Fatalf("h1 VI_4 is %s, want MASTER", st.State)
	}
	if st := d2.instance(t, "VI_4"); st.State != "BACKUP" || st.Master != h1.Addr4.String() {
		t.Fatalf("h2 VI_4 is %s following %q, want BACKUP following %s", st.State, st.Master, h1.Addr4)
	}

	// `vrrpd status` shows the running daemon's view.
	out, err := h1.Command(t.Context(), vrrpdBinary(t), "status", "--metrics-address", vrrpdtest.MetricsAddress).CombinedOutput()
	if err != nil {
		t.Fatalf("vrrpd status: %v\n%s", err, out)
	}
	for _, want := range []string{"VI_4", "VI_6", "MASTER", "10.99.0.100/24", "fd00:99::100/64"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("vrrpd status output lacks %q:\n%s", want, out)
		}
	}

	// The client talks to the VIPs, so it has neighbour entries pointing at h1.
	for _, args := range [][]string{{"-c1", "-W1", vip4.Addr().String()}, {"-6", "-c1", "-W1", vip6.Addr().String()}} {
		if out, err := client.Command(t.Context(), "ping", args...).CombinedOutput(); err != nil {
			t.Fatalf("client ping %v: %v\n%s", args, err, out)
		}
	}
	waitNeighbor(t, client, vip4.Addr(), h1)
	waitNeighbor(t, client, vip6.Addr(), h1)

	// Link cut: h2 takes over after Master_Down_Interval.
	obs := observe(t, h2)
	time.Sleep(300 * time.Millisecond) // let the observer see a few of h1's adverts
	cutAt := time.Now()
	cut(t, h1)
	vrrpdtest.WaitFor(t, 3*time.Second, "h2 holding the VIP after the cut", func() bool { return hasAddr(t, h2, vip4) })
	added, ok := obs.addedAt(vip4.Addr(), cutAt.Add(-time.Second))
	if !ok {
		t.Fatal("observer missed the VIP being added on h2")
	}
	last, ok := obs.lastAdvert(h1.Addr4, 51, -1, added)
	if !ok {
		t.Fatal("observer saw no advert from h1")
	}
	mdi := vrrp.MasterDownInterval(100, 100*time.Millisecond)
	failover := added.Sub(last.at)
	t.Logf("link cut: failover %v after h1's last advert (Master_Down_Interval %v)", failover, mdi)
	if failover > mdi+20*time.Millisecond || failover < mdi-10*time.Millisecond {
		t.Errorf("failover took %v, want Master_Down_Interval %v (+20ms)", failover, mdi)
	}
	vrrpdtest.WaitFor(t, 3*time.Second, "h2 holding the IPv6 VIP", func() bool { return hasAddr(t, h2, vip6) })
	// h1 lost carrier: FAULT, and its VIPs are gone.
	vrrpdtest.WaitFor(t, 3*time.Second, "h1 in FAULT without VIPs", func() bool {
		return d1.instance(t, "VI_4").State == "FAULT" && !hasAddr(t, h1, vip4) && !hasAddr(t, h1, vip6)
	})
	// The client's entries moved to h2's MAC without the client sending anything.
	waitNeighbor(t, client, vip4.Addr(), h2)
	waitNeighbor(t, client, vip6.Addr(), h2)

	// The link comes back: h1 (priority 150) preempts.
	restore(t, h1)
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	waitSoleHolder(t, 5*time.Second, 0, vip6, h1, hosts...)
	waitNeighbor(t, client, vip4.Addr(), h1)
	waitNeighbor(t, client, vip6.Addr(), h1)

	// Graceful stop: priority 0, h2 takes over after Skew_Time.
	time.Sleep(200 * time.Millisecond)
	stopAt := time.Now()
	d1.MustStop(t)
	vrrpdtest.WaitFor(t, 3*time.Second, "h2 holding the VIP after h1 stopped", func() bool { return hasAddr(t, h2, vip4) })
	added, ok = obs.addedAt(vip4.Addr(), stopAt)
	if !ok {
		t.Fatal("observer missed the VIP being added on h2")
	}
	resign, ok := obs.lastAdvert(h1.Addr4, 51, 0, added)
	if !ok || resign.at.Before(stopAt) {
		t.Fatal("observer saw no priority-0 advert from h1 on SIGTERM")
	}
	skew := vrrp.SkewTime(100, 100*time.Millisecond)
	handover := added.Sub(resign.at)
	t.Logf("graceful stop: handover %v after h1's priority-0 advert (Skew_Time %v)", handover, skew)
	if handover > skew+20*time.Millisecond {
		t.Errorf("handover took %v, want Skew_Time %v (+20ms)", handover, skew)
	}
	if hasAddr(t, h1, vip4) || hasAddr(t, h1, vip6) {
		t.Error("h1 still holds a VIP after a graceful stop")
	}
	waitSoleHolder(t, 3*time.Second, 0, vip6, h2, hosts...)
}

// waitNeighbor waits until h's neighbour entry for ip points at owner's MAC.
func waitNeighbor(t *testing.T, h *netlab.Host, ip netip.Addr, owner *netlab.Host) {
	t.Helper()
	vrrpdtest.WaitFor(t, 3*time.Second, fmt.Sprintf("%s's neighbour entry for %v to point at %s (%v)", h.Name, ip, owner.Name, owner.MAC), func() bool {
		mac, _, err := h.Neighbor(ip)
		if err != nil {
			t.Fatal(err)
		}
		return mac.String() == owner.MAC.String()
	})
}
