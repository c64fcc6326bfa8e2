package sharing

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
)

// DefaultClass is the class of a Service with the group's settings alone.
const DefaultClass = "default"

// ClassOf is the sharing class of a Service: Services share routers only
// within one class.
//
//   - A Service with a health check (externalTrafficPolicy Local) is a class
//     of its own, "solo-" and a hash of its key: its instance tracks
//     kube-proxy's answer for that Service alone, so its effective priorities
//     depend on where its endpoints run, which no other Service shares.
//   - A Service with verbatim settings is "v-" and a hash of them, canonical
//     (keys sorted, "key=value" lines), so Services with byte-identical
//     settings share and any difference separates them.
//   - Otherwise DefaultClass.
//
// The class is part of router keys and never contains '/' or ','.
func ClassOf(serviceKey string, verbatim map[string]string, healthCheck bool) string {
	if healthCheck {
		return "solo-" + hash128(serviceKey)
	}
	if len(verbatim) == 0 {
		return DefaultClass
	}
	h := sha256.New()
	var n [8]byte
	part := func(b string) {
		// Length-prefixed, so no two maps write the same bytes whatever
		// their keys and values contain.
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write([]byte(b))
	}
	for _, k := range slices.Sorted(maps.Keys(verbatim)) {
		part(k)
		part(verbatim[k])
	}
	return "v-" + hex.EncodeToString(h.Sum(nil)[:16])
}

func hash128(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}
