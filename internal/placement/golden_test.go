package placement

import (
	"hash/fnv"
	"testing"
)

// Values computed once by the first version and pinned; see TestGolden.
const (
	goldenWeight = 0x4c640bcc55a74346
	goldenRank   = "worker-01,worker-03,worker-04,worker-02,worker-00"
)

// TestWeightIsDocumentedHash recomputes the weight as doc.go describes it,
// with the standard library's FNV-1a, so the documentation stays true.
func TestWeightIsDocumentedHash(t *testing.T) {
	for _, kn := range [][2]string{{"default/web", "worker-00"}, {"", ""}, {"ns/svc/fd00:99::1", "node-a.example"}} {
		h := fnv.New64a()
		h.Write([]byte(kn[0]))
		h.Write([]byte{0})
		h.Write([]byte(kn[1]))
		x := h.Sum64()
		x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
		x = (x ^ x>>27) * 0x94d049bb133111eb
		x ^= x >> 31
		if w := weight(kn[0], kn[1]); w != x {
			t.Fatalf("weight(%q, %q) = %#x, documented hash gives %#x", kn[0], kn[1], w, x)
		}
	}
}
