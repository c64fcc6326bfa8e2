package vip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// InterfaceFor names the interface the kernel would use to reach ip (the
// route `ip route get IP` shows), in the calling thread's namespace. For an
// address of this host, whose route is via lo, it is the interface that
// holds the address. This is keepalived-operator's interfaceFromIP.
func InterfaceFor(ip netip.Addr) (string, error) { return interfaceFor(&netlink.Handle{}, ip) }

func interfaceFor(nl *netlink.Handle, ip netip.Addr) (string, error) {
	if !ip.IsValid() || ip.IsUnspecified() {
		return "", fmt.Errorf("interface for %v: not an address", ip)
	}
	ip = ip.Unmap()
	routes, err := nl.RouteGet(net.IP(ip.AsSlice()))
	if err != nil {
		return "", fmt.Errorf("interface for %s: no route: %w", ip, err)
	}
	for _, r := range routes {
		if r.Type == unix.RTN_LOCAL {
			return holderOf(nl, ip)
		}
		if r.LinkIndex > 0 {
			link, err := nl.LinkByIndex(r.LinkIndex)
			if err != nil {
				return "", fmt.Errorf("interface for %s: %w", ip, err)
			}
			return link.Attrs().Name, nil
		}
	}
	return "", fmt.Errorf("interface for %s: route without an interface", ip)
}

// holderOf finds the interface carrying a local address.
func holderOf(nl *netlink.Handle, ip netip.Addr) (string, error) {
	fam := netlink.FAMILY_V4
	if ip.Is6() {
		fam = netlink.FAMILY_V6
	}
	addrs, err := nl.AddrList(nil, fam)
	for tries := 0; errors.Is(err, netlink.ErrDumpInterrupted) && tries < dumpRetries; tries++ {
		addrs, err = nl.AddrList(nil, fam)
	}
	// A dump that stayed interrupted (addresses changing while read) still shows where
	// the addresses it lists are.
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return "", fmt.Errorf("interface for %s: %w", ip, err)
	}
	for _, a := range addrs {
		if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == ip {
			link, err := nl.LinkByIndex(a.LinkIndex)
			if err != nil {
				return "", fmt.Errorf("interface for %s: %w", ip, err)
			}
			return link.Attrs().Name, nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("interface for %s: %w", ip, err)
	}
	return "", fmt.Errorf("interface for %s: local route but no interface holds it", ip)
}
