package vrrp_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestNoAddresses: Count IPvX Addr is at least 1 (RFC 5798 / RFC 9568 §5.2.5), and a
// receiver drops a count of zero (RFC 9568 erratum 8299). The decoder refuses it with
// ErrNoAddresses, counted in addr_list_err as keepalived 2.2.7 counts it, so it never
// reaches the state machine; the encoder refuses to send it.
func TestNoAddresses(t *testing.T) {
	// v3: the fixed header alone; v2: the fixed header and the authentication data.
	noAddr := func(b []byte) []byte { b[3] = 0; return b[:vrrp.HeaderLen] }
	noAddr2 := func(b []byte) []byte {
		auth := append([]byte(nil), b[len(b)-vrrp.AuthDataLen:]...)
		b[3] = 0
		return append(b[:vrrp.HeaderLen], auth...)
	}
	cases := []struct {
		name     string
		msg      []byte
		src, dst netip.Addr
		want     error
	}{
		{"v3 IPv4", edit(v3ipv4(h2, m4), p4(h2, m4), noAddr), h2, m4, vrrp.ErrNoAddresses},
		{"v3 IPv6", edit(v3ipv6(ll1, m6), p6(ll1, m6), noAddr), ll1, m6, vrrp.ErrNoAddresses},
		{"v2", edit(v2ipv4(), nil, noAddr2), h1, m4, vrrp.ErrNoAddresses},
		// keepalived's order: after the type, before the checksum.
		{"bad type first", edit(v3ipv4(h2, m4), p4(h2, m4), func(b []byte) []byte { b = noAddr(b); b[0] = 0x32; return b }), h2, m4, vrrp.ErrInvalidType},
		{"then the count, before a bad checksum", func() []byte { b := edit(v3ipv4(h2, m4), p4(h2, m4), noAddr); b[7]++; return b }(), h2, m4, vrrp.ErrNoAddresses},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a vrrp.Advertisement
			if err := a.Unmarshal(tc.msg, tc.src, tc.dst); !errors.Is(err, tc.want) {
				t.Fatalf("Unmarshal = %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("counted in addr_list_err, the backup's timer untouched", func(t *testing.T) {
		c := vrrp.Config{VRID: 51, Version: vrrp.Version3, Priority: 100, AdvertInterval: 50 * time.Millisecond,
			Preempt: true, Primary: h1, VIPs: []netip.Prefix{netip.MustParsePrefix("10.99.0.100/24"), netip.MustParsePrefix("10.99.0.101/24")}}
		i, err := vrrp.NewInstance(c)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1000, 0)
		i.Start(now, nil)
		deadline := i.Deadline()
		// What a receive loop does with a packet: decode, and count what fails.
		var a vrrp.Advertisement
		err = a.Unmarshal(edit(v3ipv4(h2, m4), p4(h2, m4), noAddr), h2, m4)
		if err == nil {
			t.Fatal("decoded an advertisement with no address")
		}
		if !i.CountError(err) {
			t.Fatalf("%v feeds no counter", err)
		}
		if cs := i.Counters(); cs.AddrListErr != 1 || cs.AdvertRcvd != 0 {
			t.Errorf("counters %+v, want addr_list_err 1 only", cs)
		}
		if i.Deadline() != deadline || i.State() != vrrp.StateBackup {
			t.Errorf("state %v deadline moved from %v to %v", i.State(), deadline, i.Deadline())
		}
		// The same advertisement with its addresses is accepted and resets the timer.
		if err := a.Unmarshal(v3ipv4(h2, m4), h2, m4); err != nil {
			t.Fatal(err)
		}
		i.HandleAdvert(now.Add(time.Millisecond), &a, h2, nil)
		if i.Deadline() == deadline {
			t.Error("a valid advertisement did not reset Master_Down_Timer")
		}
	})

	t.Run("encoder refuses", func(t *testing.T) {
		for _, v := range []vrrp.Version{vrrp.Version2, vrrp.Version3} {
			a := vrrp.Advertisement{Version: v, VRID: 51, Priority: 100, MaxAdvertInterval: 100, AdvertIntervalSeconds: 1}
			out, err := a.AppendMarshal([]byte{1}, h1, m4)
			if !errors.Is(err, vrrp.ErrNoAddresses) || len(out) != 1 {
				t.Errorf("v%d: AppendMarshal with no address = %v, %d bytes", v, err, len(out))
			}
		}
	})
}
