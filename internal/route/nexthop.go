package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// MaxWeight is the largest nexthop weight (ip route's weight, 1..256: the kernel stores
// weight-1 in a byte).
const MaxWeight = 256

// Nexthop is one path of a multipath route (ip route's nexthop via ADDR [dev IF]
// [weight N] [onlink]); keepalived's "via A or B" makes one per gateway.
type Nexthop struct {
	// Via is the path's gateway; invalid for a path straight onto Dev.
	Via netip.Addr `json:"via,omitzero"`
	// Dev is the path's interface, empty to let the kernel pick it from Via.
	Dev string `json:"dev,omitempty"`
	// Weight is the path's share (1..MaxWeight), 0 for the kernel's default, 1.
	Weight uint16 `json:"weight,omitempty"`
	OnLink bool   `json:"onlink,omitempty"`
}

// String writes n as ip route's nexthop clause.
func (n Nexthop) String() string {
	var b strings.Builder
	b.WriteString("nexthop")
	if n.Via.IsValid() {
		b.WriteString(" via " + n.Via.String())
	}
	if n.Dev != "" {
		b.WriteString(" dev " + n.Dev)
	}
	if n.Weight > 1 {
		fmt.Fprintf(&b, " weight %d", n.Weight)
	}
	if n.OnLink {
		b.WriteString(" onlink")
	}
	return b.String()
}

// Nexthops are the paths of a multipath route, in order; the zero value is none (a
// route with one path has it in Route.Via and Route.Dev). It holds the list as its JSON
// text rather than as a slice because a Route must stay comparable with ==: it is the
// identity of an entry in the holdings book (a map key) and the daemon compares
// configurations' routes on reload, and two routes that differ only in their nexthops
// are different routes. The text is canonical (NewNexthops writes every list one way),
// so equal lists are equal values.
type Nexthops struct {
	text string
}

// NewNexthops returns the paths nhs. A weight of 1, the kernel's default, is kept as 0,
// so that "weight 1" and no weight are the same route.
func NewNexthops(nhs ...Nexthop) Nexthops {
	if len(nhs) == 0 {
		return Nexthops{}
	}
	list := make([]Nexthop, len(nhs))
	for i, n := range nhs {
		if n.Weight == 1 {
			n.Weight = 0
		}
		list[i] = n
	}
	b, err := json.Marshal(list)
	if err != nil {
		// A slice of Nexthop always marshals: addresses and strings.
		panic(fmt.Sprintf("route: nexthops: %v", err))
	}
	return Nexthops{text: string(b)}
}

// List returns the paths, a new slice each time.
func (n Nexthops) List() []Nexthop {
	if n.text == "" {
		return nil
	}
	var list []Nexthop
	if err := json.Unmarshal([]byte(n.text), &list); err != nil {
		// The text is NewNexthops' own.
		panic(fmt.Sprintf("route: nexthops %q: %v", n.text, err))
	}
	return list
}

// Len is how many paths there are.
func (n Nexthops) Len() int { return len(n.List()) }

// IsZero reports whether there are no paths (encoding/json's omitzero asks).
func (n Nexthops) IsZero() bool { return n.text == "" }

// MarshalJSON writes the paths as a JSON array.
func (n Nexthops) MarshalJSON() ([]byte, error) {
	if n.text == "" {
		return []byte("null"), nil
	}
	return []byte(n.text), nil
}

// UnmarshalJSON reads a JSON array of paths (a crash record's) into its canonical form.
func (n *Nexthops) UnmarshalJSON(b []byte) error {
	var list []Nexthop
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*n = NewNexthops(list...)
	return nil
}

// validate checks the paths of a multipath route to dst.
func (n Nexthops) validate(dst netip.Prefix) error {
	for _, h := range n.List() {
		switch {
		case h.Via.IsValid() && h.Via.Is6() != dst.Addr().Is6():
			return fmt.Errorf("route %s mixes IPv4 and IPv6 addresses", dst)
		case !h.Via.IsValid() && h.Dev == "":
			return fmt.Errorf("route %s: a nexthop needs via or dev", dst)
		case len(h.Dev) > 15:
			return fmt.Errorf("interface name %q is longer than 15 characters", h.Dev)
		case h.Weight > MaxWeight:
			return fmt.Errorf("route %s: nexthop weight %d is not 1..%d", dst, h.Weight, MaxWeight)
		}
	}
	return nil
}

// errMultipathTop says a multipath route has a path of its own besides its nexthops.
var errMultipathTop = errors.New("a route with nexthops takes its via, dev and onlink in each nexthop")
