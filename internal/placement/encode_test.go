package placement

import (
	"reflect"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10, 100, 254, 300} {
		nodes := nodesN(n)
		p := Priorities("ns/svc", nodes)
		s := Encode(p)
		if want := (n + 2) / 3 * 4; len(s) != want {
			t.Fatalf("%d nodes: %d characters, want %d", n, len(s), want)
		}
		got, err := Decode(s, n)
		if err != nil {
			t.Fatalf("%d nodes: %v", n, err)
		}
		if !reflect.DeepEqual(got, p) && !(n == 0 && len(got) == 0) {
			t.Fatalf("%d nodes: decoded %v, want %v", n, got, p)
		}
	}
	if s := Encode([]uint8{254, 253, 1}); s != "/v0B" {
		t.Fatalf("Encode = %q, want /v0B", s)
	}
}

// TestStatusSize: the priorities of 255 instances over 100 nodes fit many
// times over in the 128 KiB status budget.
func TestStatusSize(t *testing.T) {
	nodes := nodesN(100)
	total := 0
	for _, k := range keysN("default", 255) {
		total += len(Encode(Priorities(k, nodes)))
	}
	if total != 255*136 || total > 40*1024 {
		t.Fatalf("255 x 100 priorities take %d bytes", total)
	}
	t.Logf("255 instances x 100 nodes: %d bytes of priorities", total)
}

func TestDecodeErrors(t *testing.T) {
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
		{Encode([]uint8{254, 0}), 2, "value 0 for node 1"},
		{Encode([]uint8{255, 1}), 2, "value 255 for node 0"},
	} {
		got, err := Decode(tc.s, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Decode(%q, %d) = %v, %v; want error with %q", tc.s, tc.n, got, err, tc.msg)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("/v0B", 3)
	f.Add("", 0)
	f.Add("====", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		p, err := Decode(s, n)
		if err != nil {
			return
		}
		if len(p) != n || Encode(p) != s {
			t.Fatalf("Decode(%q, %d) = %v does not round-trip", s, n, p)
		}
	})
}
