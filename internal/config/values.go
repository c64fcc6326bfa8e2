package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/keyword"
)

// statement is one keyword and its values with where it is written: the keyword
// table's Statement (whose readers are the one parser of each kind of value) and a
// position, which the caller adds to errors and notes.
type statement struct {
	keyword.Statement
	pos Position
}

func newStatement(key string, args []string, pos Position) *statement {
	return &statement{Statement: keyword.Statement{Key: key, Args: args}, pos: pos}
}

// repeatCount is keepalived's rule for a repeat count: 0 means 1 (adjusted reports it).
func repeatCount(v uint64) (n int, adjusted bool) {
	if v == 0 {
		return 1, true
	}
	return int(v), false
}

// parseDecimalSeconds and parseAddr are the keyword table's readers of seconds and
// addresses, for the values the front-ends read outside the table.
var (
	parseDecimalSeconds = keyword.ParseDecimalSeconds
	parseAddr           = keyword.ParseAddr
)

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

// parseVIPWords parses "addr[/len] [dev DEV] [label LABEL] [brd X] [scope S] ...". It
// returns warnings for options keepalived knows that vrrpd does not apply.
func parseVIPWords(words []string) (VIP, []string, error) {
	var v VIP
	var ws []string
	if len(words) == 0 {
		return v, nil, fmt.Errorf("empty VIP")
	}
	pfx, err := parsePrefix(words[0])
	if err != nil {
		return v, nil, err
	}
	v.Prefix = pfx
	for i := 1; i < len(words); i++ {
		opt := words[i]
		value := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("VIP %s: %q needs a value", words[0], opt)
			}
			i++
			return words[i], nil
		}
		switch opt {
		case "dev":
			if v.Dev, err = value(); err != nil {
				return v, nil, err
			}
			if len(v.Dev) > 15 {
				return v, nil, fmt.Errorf("VIP %s: interface name %q is longer than 15 characters", words[0], v.Dev)
			}
		case "label":
			if v.Label, err = value(); err != nil {
				return v, nil, err
			}
			if len(v.Label) > 15 {
				return v, nil, fmt.Errorf("VIP %s: label %q is longer than 15 characters", words[0], v.Label)
			}
		case "scope":
			s, err := value()
			if err != nil {
				return v, nil, err
			}
			// vrrpd adds addresses with the kernel's default, global scope.
			if s != "global" && s != "0" {
				ws = append(ws, fmt.Sprintf("VIP %s: scope %s is not supported; the address gets scope global", words[0], s))
			}
		case "brd", "broadcast", "peer", "preferred_lft", "track_group":
			s, err := value()
			if err != nil {
				return v, nil, err
			}
			ws = append(ws, fmt.Sprintf("VIP %s: option %q %q is not supported; ignored", words[0], opt, s))
		case "no_track", "home", "nodad", "-nodad", "noprefixroute", "autojoin":
			ws = append(ws, fmt.Sprintf("VIP %s: option %q is not supported; ignored", words[0], opt))
		default:
			ws = append(ws, fmt.Sprintf("VIP %s: unknown option %q; ignored", words[0], opt))
		}
	}
	return v, ws, nil
}
