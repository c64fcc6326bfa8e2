package transport_test

import (
	"errors"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// TestVMACSourceInterface: a Conn on a virtual MAC macvlan (keepalived's use_vmac), which
// has no address, sends with its parent's address when Options.SourceInterface names the
// parent, and hears the other routers' adverts; without it, it has no source.
func TestVMACSourceInterface(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	m := vip.VMAC{Name: "vrrp.42", Parent: "eth0", MAC: vip.VirtualMAC(false, 42)}
	if err := a.Do(func() error { _, err := vip.NewVMACs(nil).Up(m); return err }); err != nil {
		t.Fatal(err)
	}
	openOn := func(h *netlab.Host, ifname string, opt transport.Options) (*transport.Conn, error) {
		var c *transport.Conn
		err := h.Do(func() (err error) { c, err = transport.Open(ifname, transport.IPv4, opt); return err })
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	if _, err := openOn(a, "vrrp.42", transport.Options{}); !errors.Is(err, transport.ErrNoAddress) {
		t.Errorf("Open on the macvlan without SourceInterface: %v, want ErrNoAddress", err)
	}
	ca, err := openOn(a, "vrrp.42", transport.Options{SourceInterface: "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	if ca.Source() != a.Addr4 {
		t.Errorf("source %v, want eth0's %v", ca.Source(), a.Addr4)
	}
	cb := open(t, b, transport.IPv4, transport.Options{})
	warmUp(t, ca, cb, group4)
	msg := []byte{0x31, 42, 100, 1, 0, 100, 0x12, 0x34, 10, 99, 0, 100}
	if err := ca.Send(msg, group4); err != nil {
		t.Fatal(err)
	}
	if p := readOne(t, cb); p.Src != a.Addr4 || string(p.Payload) != string(msg) {
		t.Errorf("b got %v % x, want from %v", p.Src, p.Payload, a.Addr4)
	}
	// The macvlan hears b's adverts although it has no address.
	warmUp(t, cb, ca, group4)
	if err := cb.Send(msg, group4); err != nil {
		t.Fatal(err)
	}
	if p := readOne(t, ca); p.Src != b.Addr4 {
		t.Errorf("a's macvlan got an advert from %v, want %v", p.Src, b.Addr4)
	}
}
