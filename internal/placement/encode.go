package placement

import (
	"encoding/base64"
	"fmt"
)

// Encode writes priorities, one byte per node in the status' node order, as
// standard padded base64.
func Encode(prios []uint8) string {
	return base64.StdEncoding.EncodeToString(prios)
}

// Decode reads what Encode wrote and checks it holds exactly n priorities,
// each in 1..254.
func Decode(s string, n int) ([]uint8, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("priorities %q: not base64: %w", s, err)
	}
	if len(b) != n {
		return nil, fmt.Errorf("priorities %q: %d values for %d nodes", s, len(b), n)
	}
	for i, p := range b {
		if p < LowestPriority || p > MasterPriority {
			return nil, fmt.Errorf("priorities %q: value %d for node %d is outside %d..%d", s, p, i, LowestPriority, MasterPriority)
		}
	}
	return b, nil
}
