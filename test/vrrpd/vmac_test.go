package vrrpd_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// vmacConf is a keepalived.conf (read by keepalived and by vrrpd alike) for one VRRPv3
// IPv4 instance with keepalived's use_vmac: the VIP lives on the macvlan vrrp.51 with the
// virtual router MAC 00:00:5e:00:01:33.
func vmacConf(router string, prio int, state string) string {
	return fmt.Sprintf(`global_defs { router_id %s
}
vrrp_instance VI_1 {
  state %s
  interface eth0
  use_vmac
  virtual_router_id 51
  priority %d
  advert_int 1
  version 3
  virtual_ipaddress {
    10.99.0.100/24
  }
}
`, router, state, prio)
}

const vmacMAC = "00:00:5e:00:01:33"

// vmacState is what a host shows of vrrp.51: whether it exists at all, whether it is
// ready (an up private macvlan with the virtual MAC; a daemon creating it shows it down
// for a moment) and whether it holds the VIP.
func vmacState(t *testing.T, h *netlab.Host, vip netip.Prefix) (exists, ready, holds bool) {
	t.Helper()
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	link, err := nh.LinkByName("vrrp.51")
	if err != nil {
		return false, false, false
	}
	mv, ok := link.(*netlink.Macvlan)
	if !ok || mv.Mode != netlink.MACVLAN_MODE_PRIVATE || mv.HardwareAddr.String() != vmacMAC || mv.Flags&net.FlagUp == 0 {
		return true, false, false
	}
	addrs, err := h.AddrsOn("vrrp.51")
	if err != nil {
		return true, true, false
	}
	return true, true, slices.ContainsFunc(addrs, func(p netip.Prefix) bool { return p.Addr() == vip.Addr() })
}

// clientSeesVMAC pings the VIP from the client and checks its ARP entry for it points at
// the virtual router MAC.
func clientSeesVMAC(t *testing.T, client *netlab.Host, vip netip.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := client.Command(ctx, "ping", "-c", "1", "-W", "2", vip.String()).CombinedOutput(); err != nil {
		t.Fatalf("client cannot reach the VIP: %v: %s", err, out)
	}
	mac, st, err := client.Neighbor(vip)
	if err != nil || mac.String() != vmacMAC {
		t.Fatalf("client's neighbour entry for %s: %s %s %v, want %s", vip, mac, st, err, vmacMAC)
	}
}

// TestVMACAgainstKeepalived runs a use_vmac instance on keepalived and on vrrpd: the first
// started (priority 200) is master with the VIP on its vrrp.51, the other is backup with
// its own vrrp.51 up and empty (keepalived keeps the macvlan in every state). The client
// reaches the VIP at the virtual MAC. When the master stops, the backup takes over; the
// client reaches the VIP at the same MAC (the new master's GARPs from vrrp.51 move it on
// the bridge), and the stopped router's macvlan is gone. Both orders.
func TestVMACAgainstKeepalived(t *testing.T) {
	vip := netip.MustParsePrefix("10.99.0.100/24")
	for _, vrrpdFirst := range []bool{false, true} {
		name := "keepalived-master-then-vrrpd"
		if vrrpdFirst {
			name = "vrrpd-master-then-keepalived"
		}
		t.Run(name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("namespace test: skipped with -short (make unit)")
			}
			_, client, h1, h2 := newLab(t)
			// The routers learn the client's MAC on eth0 from its own address first: else
			// a router answering the client's ping over eth0 would ARP for it with the VIP
			// as sender (arp_announce 0, which keepalived leaves alone) and point the
			// client's entry for the VIP at eth0's MAC, under keepalived as under vrrpd.
			for _, h := range []*netlab.Host{h1, h2} {
				if out, err := client.Command(context.Background(), "ping", "-c", "1", "-W", "2", h.Addr4.String()).CombinedOutput(); err != nil {
					t.Fatalf("client ping %s: %v %s", h.Name, err, out)
				}
			}
			stopFirst := func() {}
			var v *vrrpd
			if vrrpdFirst {
				v = startVrrpd(t, h1, writeConf(t, "h1.conf", vmacConf("h1", 200, "MASTER")), "")
				stopFirst = func() { v.MustStop(t) }
			} else {
				k := startKeepalived(t, h1, writeConf(t, "h1.conf", vmacConf("h1", 200, "MASTER")))
				stopFirst = func() { k.MustStop(t) }
			}
			vrrpdtest.WaitFor(t, 10*time.Second, "h1 master with the VIP on vrrp.51", func() bool {
				_, ready, holds := vmacState(t, h1, vip)
				return ready && holds
			})
			if vrrpdFirst {
				startKeepalived(t, h2, writeConf(t, "h2.conf", vmacConf("h2", 100, "BACKUP")))
			} else {
				v = startVrrpd(t, h2, writeConf(t, "h2.conf", vmacConf("h2", 100, "BACKUP")), "")
				vrrpdtest.WaitFor(t, 5*time.Second, "vrrpd following h1", func() bool {
					in := v.instance(t, "VI_1")
					return in.State == "BACKUP" && in.Master == h1.Addr4.String()
				})
			}
			vrrpdtest.WaitFor(t, 5*time.Second, "h2's vrrp.51 up in BACKUP", func() bool {
				_, ready, _ := vmacState(t, h2, vip)
				return ready
			})
			time.Sleep(3 * time.Second) // several adverts: h2 must stay backup
			if _, ready, holds := vmacState(t, h2, vip); !ready || holds {
				t.Fatalf("the backup's vrrp.51: ready %v, holds the VIP %v; want up and empty", ready, holds)
			}
			if hasAddr(t, h1, vip) || hasAddr(t, h2, vip) {
				t.Fatal("a VIP on eth0: it belongs on vrrp.51")
			}
			clientSeesVMAC(t, client, vip.Addr())

			stopFirst()
			vrrpdtest.WaitFor(t, 10*time.Second, "h2 master with the VIP on vrrp.51", func() bool {
				_, ready, holds := vmacState(t, h2, vip)
				return ready && holds
			})
			if exists, _, _ := vmacState(t, h1, vip); exists {
				t.Error("h1's vrrp.51 left behind after it stopped")
			}
			if !vrrpdFirst {
				if in := v.instance(t, "VI_1"); in.State != "MASTER" {
					t.Errorf("vrrpd %s, want MASTER", in.State)
				}
			}
			clientSeesVMAC(t, client, vip.Addr())
		})
	}
}
