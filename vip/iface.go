package vip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// InterfaceFor names the interface the kernel would use to reach ip (the
// route `ip route get IP` shows), in the calling thread's namespace. For an
// address of this host, whose route is via lo, it is the interface that
// holds the address. This is keepalived-operator's interfaceFromIP.
func InterfaceFor(ip netip.Addr) (string, error) { return interfaceFor(&netlink.Handle{}, ip) }

// InterfaceFor is [InterfaceFor] through the Manager's netlink handle.
func (m *Manager) InterfaceFor(ip netip.Addr) (string, error) { return interfaceFor(m.nl, ip) }

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
	if err != nil {
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
	return "", fmt.Errorf("interface for %s: local route but no interface holds it", ip)
}

// ErrNoAddress means an interface has no address of the kind asked for
// (yet): a VRRP instance on it goes to FAULT until one appears.
var ErrNoAddress = errors.New("no usable address")

// PrimaryIPv4 returns the interface's primary IPv4 address, the source of
// IPv4 VRRP adverts: the first global (or site) address that is not a
// secondary, in the calling thread's namespace.
func PrimaryIPv4(dev string) (netip.Addr, error) { return primaryIPv4(&netlink.Handle{}, dev, nil) }

// PrimaryIPv4 is [PrimaryIPv4] through the Manager's handle, never
// returning one of the VIPs the Manager recorded (a /32 VIP in a subnet of
// its own is "primary" to the kernel, but it moves with mastership).
func (m *Manager) PrimaryIPv4(dev string) (netip.Addr, error) {
	return primaryIPv4(m.nl, dev, m.Recorded())
}

func primaryIPv4(nl *netlink.Handle, dev string, vips []VIP) (netip.Addr, error) {
	addrs, err := listAddrs(nl, dev, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || a.Flags&unix.IFA_F_SECONDARY != 0 || a.Scope != int(netlink.SCOPE_UNIVERSE) && a.Scope != int(netlink.SCOPE_SITE) {
			continue
		}
		ip = ip.Unmap()
		if isVIP(vips, dev, ip) {
			continue
		}
		return ip, nil
	}
	return netip.Addr{}, fmt.Errorf("%s: IPv4: %w", dev, ErrNoAddress)
}

// LinkLocal returns the interface's IPv6 link-local address, the source of
// IPv6 VRRP adverts (RFC 5798 5.1.2.1), skipping addresses still tentative
// or failed in duplicate address detection, which cannot be bound. The
// address carries no zone; the zone is dev.
func LinkLocal(dev string) (netip.Addr, error) { return linkLocal(&netlink.Handle{}, dev, nil) }

// LinkLocal is [LinkLocal] through the Manager's handle, never returning a
// recorded VIP (keepalived allows link-local VIPs).
func (m *Manager) LinkLocal(dev string) (netip.Addr, error) {
	return linkLocal(m.nl, dev, m.Recorded())
}

func linkLocal(nl *netlink.Handle, dev string, vips []VIP) (netip.Addr, error) {
	addrs, err := listAddrs(nl, dev, netlink.FAMILY_V6)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || !ip.IsLinkLocalUnicast() || a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			continue
		}
		if isVIP(vips, dev, ip) {
			continue
		}
		return ip, nil
	}
	return netip.Addr{}, fmt.Errorf("%s: IPv6 link-local: %w", dev, ErrNoAddress)
}

func listAddrs(nl *netlink.Handle, dev string, fam int) ([]netlink.Addr, error) {
	link, err := nl.LinkByName(dev)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", dev, err)
	}
	addrs, err := nl.AddrList(link, fam)
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", dev, err)
	}
	return addrs, nil
}

func isVIP(vips []VIP, dev string, ip netip.Addr) bool {
	return slices.ContainsFunc(vips, func(v VIP) bool { return v.Dev == dev && v.Prefix.Addr() == ip })
}
