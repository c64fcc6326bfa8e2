package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// statement is one keyword and its values: a keepalived.conf line "key arg arg", or one
// entry of a KeepalivedGroup's verbatim map. Its readers are the one parser of each kind
// of value; their errors and notes carry no position, which the caller adds.
type statement struct {
	key   string
	args  []string
	pos   Position
	notes []string // warnings: values adjusted or ignored
}

func (s *statement) note(format string, a ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, a...))
}

// one returns the single value.
func (s *statement) one() (string, error) {
	if len(s.args) == 0 {
		return "", fmt.Errorf("%s needs a value", s.key)
	}
	if len(s.args) > 1 {
		s.note("%s takes one value; ignoring %q", s.key, strings.Join(s.args[1:], " "))
	}
	return s.args[0], nil
}

// noValue notes values given to a flag.
func (s *statement) noValue() {
	if len(s.args) > 0 {
		s.note("%s takes no value; ignoring %q", s.key, strings.Join(s.args, " "))
	}
}

// flag reads keepalived's optional boolean (check_true_false): no value means true,
// else true/on/yes or false/off/no, exactly as written.
func (s *statement) flag() (bool, error) {
	if len(s.args) == 0 {
		return true, nil
	}
	v, err := s.one()
	if err != nil {
		return false, err
	}
	switch v {
	case "true", "on", "yes":
		return true, nil
	case "false", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%s %q is not a boolean (true, on, yes, false, off or no)", s.key, v)
}

func (s *statement) uint(lo, hi uint64) (uint64, error) {
	v, err := s.one()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %q is not a number between %d and %d", s.key, v, lo, hi)
	}
	return n, nil
}

// seconds reads a whole number of seconds up to hi (keepalived's garp delays and
// refreshes).
func (s *statement) seconds(hi time.Duration) (time.Duration, error) {
	v, err := s.uint(0, uint64(hi/time.Second))
	return time.Duration(v) * time.Second, err
}

// delay reads garp_master_delay and its kin: whole seconds up to MaxGARPDelay.
func (s *statement) delay() (time.Duration, error) { return s.seconds(MaxGARPDelay) }

// refresh reads garp_master_refresh: whole seconds up to MaxGARPRefresh, 0 for none.
func (s *statement) refresh() (time.Duration, error) { return s.seconds(MaxGARPRefresh) }

// repeat reads a repeat count up to MaxGARPRepeat; 0 becomes 1 with a note, as in
// keepalived.
func (s *statement) repeat() (int, error) {
	v, err := s.uint(0, MaxGARPRepeat)
	if err != nil {
		return 0, err
	}
	n, adjusted := repeatCount(v)
	if adjusted {
		s.note("%s must be greater than 0; using 1", s.key)
	}
	return n, nil
}

// decimal reads fractional seconds such as 0.05, exactly (no float rounding), in lo..hi.
func (s *statement) decimal(lo, hi time.Duration) (time.Duration, error) {
	v, err := s.one()
	if err != nil {
		return 0, err
	}
	d, ok := parseDecimalSeconds(v)
	if !ok || d < lo || d > hi {
		return 0, fmt.Errorf("%s %q is not a number of seconds between %v and %v", s.key, v, lo, hi)
	}
	return d, nil
}

// addr reads one IP address.
func (s *statement) addr() (netip.Addr, error) {
	v, err := s.one()
	if err != nil {
		return netip.Addr{}, err
	}
	a, ok := parseAddr(v)
	if !ok {
		return netip.Addr{}, fmt.Errorf("bad IP address %q", v)
	}
	return a, nil
}

// multicast reads a multicast address of family f, or of either family when f is 0.
func (s *statement) multicast(f Family) (netip.Addr, error) {
	a, err := s.addr()
	if err != nil {
		return a, err
	}
	if err := checkMulticast(s.key, a, f); err != nil {
		return netip.Addr{}, err
	}
	return a, nil
}

// checkMulticast is the one multicast-address check of every format: a must be a
// multicast address of family f, or of either family when f is 0.
func checkMulticast(what string, a netip.Addr, f Family) error {
	switch {
	case f == 0 && !isMulticastOf(a, f):
		return fmt.Errorf("%s %s is not a multicast address", what, a)
	case !isMulticastOf(a, f):
		return fmt.Errorf("%s %s is not an %s multicast address", what, a, f)
	}
	return nil
}

func isMulticastOf(a netip.Addr, f Family) bool {
	return a.IsMulticast() && (f == 0 || vrrp.FamilyOf(a) == f)
}

// repeatCount is keepalived's rule for a repeat count: 0 means 1 (adjusted reports it).
func repeatCount(v uint64) (n int, adjusted bool) {
	if v == 0 {
		return 1, true
	}
	return int(v), false
}

// parseDecimalSeconds parses "1", "0.05", "2.5" (up to microseconds, as keepalived).
func parseDecimalSeconds(s string) (time.Duration, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 6 || len(whole) > 9 {
		return 0, false
	}
	var d time.Duration
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, false
		}
		d = d*10 + time.Duration(c-'0')
	}
	d *= time.Second
	unit := 100 * time.Millisecond
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
		d += time.Duration(c-'0') * unit
		unit /= 10
	}
	return d, true
}

// parseAddr parses an address without a zone, IPv4-mapped IPv6 taken as IPv4.
func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// parsePrefix parses addr or addr/len; a bare address is a host prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("bad address %q (want addr or addr/prefix)", s)
		}
		if p.Addr().Is4In6() {
			return netip.Prefix{}, fmt.Errorf("bad address %q: IPv4-mapped IPv6 addresses are not allowed", s)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("bad address %q (want addr or addr/prefix)", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// truncateAuthPass cuts a password to what VRRPv2 carries, with a note naming what the
// password was called where it was written.
func truncateAuthPass(pass, what string) (string, string) {
	if len(pass) <= maxAuthPass {
		return pass, ""
	}
	return pass[:maxAuthPass], fmt.Sprintf("truncating %s to %d characters", what, maxAuthPass)
}

func errAt(pos Position, format string, a ...any) *Error {
	return &Error{Pos: pos, Message: fmt.Sprintf(format, a...)}
}

// limitedBroadcast is 255.255.255.255.
var limitedBroadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// VIPProblem says why p cannot be a VIP, or "" when it can: the address must be one a
// host can own on a segment and announce with gratuitous ARP, a unicast host address. Not
// the unspecified address, a multicast, loopback or IPv4 link-local address (169.254/16,
// which the kernel and zeroconf manage per link), nor a broadcast address (the limited
// one, or its own prefix's). IPv6 link-local VIPs are fine: RFC 5798 wants one first. One
// rule for files (an error at the VIP's line) and Kubernetes mode (the instance is
// dropped with a warning, the group's others run).
func VIPProblem(p netip.Prefix) string {
	a := p.Addr()
	switch {
	case a.IsUnspecified():
		return "is the unspecified address, not a host address"
	case a.IsMulticast():
		return "is a multicast address, not a host address"
	case a.IsLoopback():
		return "is a loopback address, not one on the segment"
	case a.Is4() && a.IsLinkLocalUnicast():
		return "is an IPv4 link-local address (169.254.0.0/16), which the host manages per link"
	case a == limitedBroadcast:
		return "is the broadcast address"
	case a.Is4() && p.Bits() <= 30 && isBroadcastOf(p):
		return "is the broadcast address of its own prefix"
	}
	return ""
}

// isBroadcastOf reports whether p's address has every host bit set.
func isBroadcastOf(p netip.Prefix) bool {
	b := p.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	host := uint32(1)<<(32-p.Bits()) - 1
	return v&host == host
}
