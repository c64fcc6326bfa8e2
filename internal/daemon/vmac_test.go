package daemon

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// fakeVMACs records the macvlans the daemon makes and removes.
type fakeVMACs struct {
	fail    error // what Up answers, when set
	up      map[string]vip.VMAC
	created []string
	removed []string
}

func (f *fakeVMACs) Up(m vip.VMAC) (int, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	f.up[m.Name] = m
	f.created = append(f.created, m.Name)
	return len(f.created), nil
}

func (f *fakeVMACs) Remove(m vip.VMAC) error {
	delete(f.up, m.Name)
	f.removed = append(f.removed, m.Name)
	return nil
}

// TestVMACInstance: a use_vmac instance gets its macvlan (vrrp.VRID, the virtual MAC, on
// its interface) before it starts, keeps it while BACKUP, sends its adverts from the
// macvlan with the parent's address as source, puts its VIPs and announcements on the
// macvlan as MASTER, and removes the macvlan when it stops. vmac_xmit_base keeps the
// socket on the parent.
func TestVMACInstance(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	f := &fakeVMACs{up: map[string]vip.VMAC{}}
	d.vmacs = f
	ic := testInstance("VI_1", 51, 100, "10.99.0.100/24")
	ic.VMAC = config.VMAC{Enabled: true}
	xb := testInstance("VI_2", 52, 50, "10.99.0.101/24")
	xb.VMAC = config.VMAC{Enabled: true, XmitBase: true}
	startDaemon(t, d, ic, xb)

	m, ok := f.up["vrrp.51"]
	if !ok || m.Parent != "eth0" || m.MAC.String() != "00:00:5e:00:01:33" || m.IPv6 {
		t.Fatalf("macvlans %+v, want vrrp.51 on eth0 with 00:00:5e:00:01:33", f.up)
	}
	if _, ok := f.up["vrrp.52"]; !ok {
		t.Fatalf("no vrrp.52 for the vmac_xmit_base instance: %+v", f.up)
	}
	if len(h.socks) != 2 || h.socks[0].ifname != "vrrp.51" || h.socks[0].opt.SourceInterface != "eth0" ||
		h.socks[1].ifname != "eth0" || h.socks[1].opt.SourceInterface != "" {
		t.Fatalf("sockets: %s (source from %q), %s", h.socks[0].ifname, h.socks[0].opt.SourceInterface, h.socks[1].ifname)
	}
	at := takeover(100)
	advance(d, at)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster {
		t.Fatalf("VI_1 %v, want MASTER", s.State)
	}
	if len(h.sent) == 0 || h.sent[0].src != eth0src {
		t.Errorf("adverts %+v, want from eth0's address %s", h.sent, eth0src)
	}
	if want := []string{"10.99.0.100/24 dev vrrp.51"}; !slices.Equal(h.heldList(), want) {
		t.Errorf("VIPs %v, want %v", h.heldList(), want)
	}
	if len(h.announced) == 0 || h.announced[0].dev != "vrrp.51" {
		t.Errorf("announcements %+v, want on vrrp.51 (its MAC is the virtual MAC)", h.announced)
	}
	if len(f.removed) != 0 {
		t.Errorf("macvlans removed while running: %v", f.removed)
	}
	d.shutdown(at.Add(time.Second))
	slices.Sort(f.removed)
	if !slices.Equal(f.removed, []string{"vrrp.51", "vrrp.52"}) || len(f.up) != 0 {
		t.Errorf("removed %v on shutdown, left %v", f.removed, f.up)
	}
}

// TestVMACNames: keepalived's naming across instances, and VIPs of the parent moving
// onto the macvlan while VIPs on other devices stay.
func TestVMACNames(t *testing.T) {
	a := testInstance("A", 7, 100, "10.99.0.100/24")
	a.VMAC = config.VMAC{Enabled: true}
	b := testInstance("B", 7, 100, "fd00:99::100/64")
	b.Family = config.IPv6
	b.VMAC = config.VMAC{Enabled: true}
	c := testInstance("C", 8, 100, "10.99.0.101/24")
	c.VMAC = config.VMAC{Enabled: true, Interface: "mine"}
	c.VIPs = append(c.VIPs, config.VIP{Prefix: netip.MustParsePrefix("10.99.1.5/32"), Dev: "eth1"})
	cfg, by := vmacConfig(&config.Config{Instances: []config.Instance{a, b, c}})
	if by["A"].Name != "vrrp.7" || by["B"].Name != "vrrp6.7" || by["C"].Name != "mine" {
		t.Errorf("names %+v", by)
	}
	if by["B"].MAC.String() != "00:00:5e:00:02:07" || !by["B"].IPv6 {
		t.Errorf("IPv6 macvlan %+v", by["B"])
	}
	if got := cfg.Instances[2]; got.Interface != "mine" || got.VIPs[0].Dev != "mine" || got.VIPs[1].Dev != "eth1" {
		t.Errorf("instance C on the macvlan: %+v", got)
	}
	if a.Interface != "eth0" || a.VIPs[0].Dev != "eth0" {
		t.Error("vmacConfig changed its input")
	}
}

// TestVMACRetry: a macvlan that could not be made (its parent missing) is made again by
// the interface check while the instance's socket cannot open, and the instance leaves
// FAULT once it exists.
func TestVMACRetry(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	f := &fakeVMACs{up: map[string]vip.VMAC{}, fail: errors.New("parent eth0 missing")}
	d.vmacs = f
	h.openErr["vrrp.51"] = transport.ErrNoInterface
	ic := testInstance("VI_1", 51, 100, "10.99.0.100/24")
	ic.VMAC = config.VMAC{Enabled: true}
	startDaemon(t, d, ic)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || len(f.up) != 0 {
		t.Fatalf("without its macvlan: %v, macvlans %v", s.State, f.up)
	}
	f.fail = nil
	delete(h.openErr, "vrrp.51")
	d.checkInterfaces(t0.Add(time.Second))
	if _, ok := f.up["vrrp.51"]; !ok {
		t.Fatal("macvlan not made again by the interface check")
	}
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Errorf("with its macvlan: %v, want BACKUP", s.State)
	}
}
