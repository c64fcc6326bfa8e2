package daemon

import (
	"testing"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestSendsConfiguredChecksumForm: a VRRPv3 IPv4 master sends the checksum
// with the pseudo-header, as keepalived does, unless the instance asks for
// RFC 9568's form without it (v3_checksum_as_v2).
func TestSendsConfiguredChecksumForm(t *testing.T) {
	for _, asV2 := range []bool{false, true} {
		h := newFakeHost()
		d := newTestDaemon(t, h)
		ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
		ic.V3ChecksumAsV2 = asV2
		startDaemon(t, d, ic)
		advance(d, takeover(100))
		want := vrrp.ChecksumPseudoHeader
		if asV2 {
			want = vrrp.ChecksumNoPseudoHeader
		}
		if len(h.sent) != 1 || h.sent[0].adv.ChecksumForm != want {
			t.Errorf("V3ChecksumAsV2 %v: sent %+v, want one advert in form %v", asV2, h.sent, want)
		}
	}
}
