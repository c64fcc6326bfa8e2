package transport_test

import (
	"net/netip"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// A VRRPv3 advertisement encoded with Conn.Source and the group decodes on the other host
// with a valid checksum, for both families: the kernel neither recomputes (no
// IPV6_CHECKSUM) nor corrupts it, and the source the receiver sees is the one the
// pseudo-header was computed with.
func TestCodecRoundTrip(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, tc := range []struct {
		fam transport.Family
		vip netip.Addr
	}{
		{transport.IPv4, netip.MustParseAddr("10.99.0.100")},
		{transport.IPv6, netip.MustParseAddr("fd00:99::100")},
	} {
		t.Run(tc.fam.String(), func(t *testing.T) {
			ca := open(t, a, tc.fam, transport.Options{})
			cb := open(t, b, tc.fam, transport.Options{})
			warmUp(t, ca, cb, ca.Group())
			adv := vrrp.Advertisement{Version: vrrp.Version3, VRID: 7, Priority: 120,
				MaxAdvertInterval: 100, Addresses: []netip.Addr{tc.vip}}
			msg, err := adv.AppendMarshal(nil, ca.Source(), ca.Group())
			if err != nil {
				t.Fatal(err)
			}
			if err := ca.Send(msg, ca.Group()); err != nil {
				t.Fatal(err)
			}
			p := readOne(t, cb)
			var got vrrp.Advertisement
			if err := got.Unmarshal(p.Payload, p.Src, p.Dst); err != nil {
				t.Fatalf("Unmarshal of the received advert (from %v to %v): %v", p.Src, p.Dst, err)
			}
			if got.VRID != 7 || got.Priority != 120 || len(got.Addresses) != 1 || got.Addresses[0] != tc.vip {
				t.Errorf("decoded %+v", got)
			}

			// Encoded for a source other than the one sent from, the checksum fails: the
			// receiver really checks the pseudo-header against the packet's source.
			other := netip.MustParseAddr("10.99.0.99")
			if tc.fam == transport.IPv6 {
				other = netip.MustParseAddr("fe80::99")
			}
			bad, err := adv.AppendMarshal(nil, other, ca.Group())
			if err != nil {
				t.Fatal(err)
			}
			if err := ca.Send(bad, ca.Group()); err != nil {
				t.Fatal(err)
			}
			p = readOne(t, cb)
			if err := got.Unmarshal(p.Payload, p.Src, p.Dst); err == nil {
				t.Error("an advert checksummed for another source decoded cleanly")
			}
		})
	}
}

// Group memberships survive the receiving link going down and up again.
func TestMembershipSurvivesLinkFlap(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		t.Run(fam.String(), func(t *testing.T) {
			cb := open(t, b, fam, transport.Options{})
			ipCmd(t, b, "link", "set", b.Link, "down")
			ipCmd(t, b, "link", "set", b.Link, "up")
			waitRefresh(t, cb)
			ca := open(t, a, fam, transport.Options{})
			warmUp(t, ca, cb, ca.Group())
		})
	}
}
