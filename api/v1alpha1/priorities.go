package v1alpha1

import (
	"encoding/base64"
	"fmt"
)

// The byte values of Instance.Priorities, the contract between the operator
// (which writes them) and vrrpd (which reads them).
const (
	// PriorityNotMember (0) means the node does not take part in the
	// instance: its vrrpd does not run it (and resigns it, with a priority-0
	// advertisement, when it was master). The other members keep it among
	// their unicast peers, so that they hear that resignation. The operator
	// writes it for every instance on an excluded node (GroupNode.Excluded);
	// placement itself gives every member node 1..254. It takes a node out
	// without changing the node list that every instance's priorities are
	// indexed by.
	PriorityNotMember uint8 = 0
	// PriorityLowest (1) to PriorityHighest (254) are VRRP priorities:
	// within an instance the operator writes distinct values, the node ranked
	// first gets 254, the next ones 204, 79, 29, ... (internal/placement: wide
	// gaps make Skew_Times differ by more than a takeover's jitter); an
	// instance with a healthCheck gets 128..254 (254, 204, 166, 141, ...), so
	// that vrrpd can lower every node by 1 minus the lowest of them when the
	// check fails (placement.HealthChecked, placement.CheckWeight). vrrpd
	// reads the order, the lowest value and its own value.
	PriorityLowest  uint8 = 1
	PriorityHighest uint8 = 254
	// PriorityOwner (255) is VRRP's address owner, a router that holds the
	// VIPs as its own addresses. A VIP is never a node's own address, so the
	// operator never writes it and DecodePriorities rejects it: a node
	// claiming it would take over at once and never give the VIPs back.
	PriorityOwner uint8 = 255
)

// EncodePriorities writes one priority per member node, in the order of
// status.nodes, as standard padded base64 (RFC 4648): 100 nodes take 136
// characters.
func EncodePriorities(prios []uint8) string {
	return base64.StdEncoding.EncodeToString(prios)
}

// DecodePriorities reads what EncodePriorities wrote and checks it holds
// exactly n values, none of them PriorityOwner. A 0 (PriorityNotMember) is
// accepted: that node does not take part in the instance. Line breaks in s
// are skipped (encoding/base64's rule); padding and trailing bits are
// checked strictly.
func DecodePriorities(s string, n int) ([]uint8, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("priorities %q: not base64: %w", s, err)
	}
	if len(b) != n {
		return nil, fmt.Errorf("priorities %q: %d values for %d nodes", s, len(b), n)
	}
	for i, p := range b {
		if p == PriorityOwner {
			return nil, fmt.Errorf("priorities %q: value 255 for node %d is the address owner's, which a VIP never has", s, i)
		}
	}
	return b, nil
}
