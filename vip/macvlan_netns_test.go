package vip

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

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
	nh, err := a.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
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
	ctx := context.Background()
	if out, err := a.Command(ctx, "ip", "link", "add", "link", "eth0", "name", "vrrp.62", "address", "02:00:00:00:00:01", "type", "macvlan", "mode", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("stale macvlan: %v %s", err, out)
	}
	ll := netip.MustParseAddr("fe80::99:1")
	m := VMAC{Name: "vrrp.62", Parent: "eth0", MAC: VirtualMAC(true, 62), IPv6: true, LinkLocal: ll}
	v := NewVMACs(nil)
	if err := a.Do(func() error { _, err := v.Up(m); return err }); err != nil {
		t.Fatal(err)
	}
	nh, err := a.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
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

	if out, err := a.Command(ctx, "ip", "link", "add", "vrrp.63", "type", "veth", "peer", "name", "peer63").CombinedOutput(); err != nil {
		t.Fatalf("veth: %v %s", err, out)
	}
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
