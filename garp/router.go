package garp

import (
	"os"
	"time"
)

// routerRecheck is how long a forwarding setting read for the NA Router flag is
// used before it is read again: keepalived 2.2.7 re-reads it when its last
// read of the interface is more than 5 seconds old (vrrp_ndisc.c,
// ndisc_send_unsolicited_na_immediate).
const routerRecheck = 5 * time.Second

// routerFlag is the Router flag of the unsolicited NAs (RFC 4861 §4.4): set
// when the interface forwards IPv6, so hosts that use the VIP's router keep it
// in their default router lists (RFC 5798 §6.4.1, §6.4.2 send the NAs of a
// router). Like keepalived, it is read when an NA is sent, from
// /proc/sys/net/ipv6/conf/<interface>/forwarding, at most once every
// routerRecheck, so that turning forwarding on or off while vrrpd runs shows in
// the next announcements. Only the Announcer's sending goroutine uses it.
type routerFlag struct {
	forwarding forwardingSource
	recheck    time.Duration
	now        func() time.Time

	checked time.Time // when forwarding was last read; zero before the first
	router  bool
}

// forwardingSource reads the interface's forwarding setting.
type forwardingSource interface {
	forwarding() bool
	close() error
}

func newRouterFlag(src forwardingSource) *routerFlag {
	return &routerFlag{forwarding: src, recheck: routerRecheck, now: time.Now}
}

// get returns the flag for an NA sent now.
func (r *routerFlag) get() bool {
	now := r.now()
	if r.checked.IsZero() || now.Sub(r.checked) > r.recheck {
		r.router = r.forwarding.forwarding()
		r.checked = now
	}
	return r.router
}

func (r *routerFlag) close() error { return r.forwarding.close() }

// sysctlForwarding reads the forwarding file through a descriptor opened when
// the Announcer was made. /proc/sys/net shows the namespace of the thread that
// opens it, and the sending goroutine may run on any thread: the open file
// stays in the namespace the Announcer was made in.
type sysctlForwarding struct{ f *os.File }

// openForwarding opens ifname's IPv6 forwarding setting. A file that cannot be
// opened (IPv6 disabled in the kernel) reads as keepalived reads it then.
func openForwarding(ifname string) forwardingSource {
	f, err := os.Open("/proc/sys/net/ipv6/conf/" + ifname + "/forwarding")
	if err != nil {
		return sysctlForwarding{}
	}
	return sysctlForwarding{f}
}

func (s sysctlForwarding) forwarding() bool {
	if s.f == nil {
		return forwardingValue(nil)
	}
	var b [1]byte
	n, _ := s.f.ReadAt(b[:], 0) // a failed read leaves n 0
	return forwardingValue(b[:n])
}

func (s sysctlForwarding) close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// forwardingValue is keepalived's reading of the setting (get_sysctl): the
// first character, a digit, non-zero meaning forwarding. Anything it cannot
// read counts as forwarding, as in keepalived, where the failure value is
// non-zero: an NA that says "router" from a host does little harm (hosts mark
// the neighbour as a router), one that says "not a router" from a router makes
// hosts drop it from their default router lists (RFC 4861 §7.2.5).
func forwardingValue(b []byte) bool {
	if len(b) == 0 || b[0] < '0' || b[0] > '9' {
		return true
	}
	return b[0] != '0'
}
