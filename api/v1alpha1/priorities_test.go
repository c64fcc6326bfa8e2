package v1alpha1

import (
	"reflect"
	"strings"
	"testing"
)

// ranked returns n priorities as the operator writes them: 254 down to 1,
// then 1 for the tail of very large groups.
func ranked(n int) []uint8 {
	p := make([]uint8, n)
	for i := range p {
		p[i] = uint8(max(int(PriorityHighest)-i, int(PriorityLowest)))
	}
	return p
}

func TestEncodeDecodePrioritiesRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10, 100, 254, 300} {
		p := ranked(n)
		s := EncodePriorities(p)
		if want := (n + 2) / 3 * 4; len(s) != want {
			t.Fatalf("%d nodes: %d characters, want %d", n, len(s), want)
		}
		got, err := DecodePriorities(s, n)
		if err != nil {
			t.Fatalf("%d nodes: %v", n, err)
		}
		if !reflect.DeepEqual(got, p) && !(n == 0 && len(got) == 0) {
			t.Fatalf("%d nodes: decoded %v, want %v", n, got, p)
		}
	}
	if s := EncodePriorities([]uint8{254, 253, 1}); s != "/v0B" {
		t.Fatalf("EncodePriorities = %q, want /v0B", s)
	}
	// 0 is "does not take part", part of the contract.
	if got, err := DecodePriorities(EncodePriorities([]uint8{254, 0}), 2); err != nil || got[1] != PriorityNotMember {
		t.Fatalf("priority 0: %v, %v", got, err)
	}
}

// TestPrioritiesStatusSize: the priorities of 255 instances over 100 nodes
// fit many times over in the 128 KiB status budget.
func TestPrioritiesStatusSize(t *testing.T) {
	total := 0
	for range 255 {
		total += len(EncodePriorities(ranked(100)))
	}
	if total != 255*136 || total > 40*1024 {
		t.Fatalf("255 x 100 priorities take %d bytes", total)
	}
}

func TestDecodePrioritiesErrors(t *testing.T) {
	for _, tc := range []struct {
		s   string
		n   int
		msg string
	}{
		{"/v0B", 4, "3 values for 4 nodes"},
		{"/v0B", 2, "3 values for 2 nodes"},
		{"not base64!", 3, "not base64"},
		{"/v0", 2, "not base64"},  // missing padding
		{"/v1=", 2, "not base64"}, // non-zero trailing bits: Strict
		{EncodePriorities([]uint8{255, 1}), 2, "value 255 for node 0"},
		{EncodePriorities([]uint8{1, 0, 255}), 3, "value 255 for node 2"},
	} {
		got, err := DecodePriorities(tc.s, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("DecodePriorities(%q, %d) = %v, %v; want error with %q", tc.s, tc.n, got, err, tc.msg)
		}
	}
}

func FuzzDecodePriorities(f *testing.F) {
	f.Add("/v0B", 3)
	f.Add("", 0)
	f.Add("====", 1)
	f.Add("AP8=", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		p, err := DecodePriorities(s, n)
		if err != nil {
			return
		}
		// Line breaks are skipped, as encoding/base64 does (and vrrpd always
		// has); everything else must be exactly what EncodePriorities writes.
		if len(p) != n || EncodePriorities(p) != strings.NewReplacer("\r", "", "\n", "").Replace(s) {
			t.Fatalf("DecodePriorities(%q, %d) = %v does not round-trip", s, n, p)
		}
		for _, v := range p {
			if v == PriorityOwner {
				t.Fatalf("DecodePriorities(%q, %d) accepted 255", s, n)
			}
		}
	})
}

// TestKeywordTable: the three kinds of owner are all used, and the
// keywords the brief of each side relies on have the right owner.
func TestKeywordTable(t *testing.T) {
	for k, want := range map[string]Owner{
		"priority": OwnerOperator, "advert_int": OwnerOperator, "unicast_src_ip": OwnerOperator,
		"nopreempt": OwnerOperator, "auth_pass": OwnerOperator,
		"garp_master_delay": OwnerUser, "track_src_ip": OwnerUser, "mcast_dst_ip": OwnerUser,
		"notify_master": OwnerRefused, "track_script": OwnerRefused,
	} {
		if got, ok := InstanceKeyword(k); !ok || got != want {
			t.Errorf("InstanceKeyword(%q) = %v, %v; want %v", k, got, ok, want)
		}
	}
	if _, ok := InstanceKeyword("vrrp_garp_interval"); ok {
		t.Error("a global_defs keyword is in the vrrp_instance table")
	}
	if o, why := GlobalKeyword("router_id"); o != OwnerOperator || why == "" {
		t.Errorf("router_id: %v %q", o, why)
	}
	if o, _ := GlobalKeyword("vrrp_garp_interval"); o != OwnerUser {
		t.Error("global_defs owners")
	}
	if ks := InstanceKeywords(); len(ks) != len(instanceKeywords) || ks[0] != "accept" {
		t.Errorf("InstanceKeywords() = %v", ks)
	}
}
