package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Host is one namespace on the lab's bridge (or one end of a pair lab).
type Host struct {
	// Name is the name the lab was created with ("a", "client", ...).
	Name string
	// Netns is the namespace's name, for `ip netns exec`.
	Netns string
	// Link is the host's interface on the bridge, always "eth0".
	Link string
	// MAC is Link's hardware address.
	MAC net.HardwareAddr
	// Addr4 and Addr6 are the host's own addresses on Link (/24 and /64).
	Addr4, Addr6 netip.Addr
	// LinkLocal is Link's IPv6 link-local address.
	LinkLocal netip.Addr
	// SwitchEnd is the peer veth on the bridge, in the lab's SwitchNetns;
	// empty in a pair lab.
	SwitchEnd string

	lab *Lab
}

// Prefix4 and Prefix6 are the lab's subnets.
var (
	Prefix4 = netip.MustParsePrefix("10.99.0.0/24")
	Prefix6 = netip.MustParsePrefix("fd00:99::/64")
)

// build makes the host's namespace, plugs its eth0 into the bridge and
// configures it.
func (h *Host) build() error {
	if err := h.addNetns(); err != nil {
		return err
	}
	sw := h.lab.SwitchNetns
	if err := ip("-n", sw, "link", "add", h.SwitchEnd, "type", "veth", "peer", "name", h.Link, "netns", h.Netns); err != nil {
		return err
	}
	if err := ip("-n", sw, "link", "set", h.SwitchEnd, "master", h.lab.Bridge, "up"); err != nil {
		return err
	}
	return h.configure()
}

// addNetns makes the host's namespace.
func (h *Host) addNetns() error {
	if err := ip("netns", "add", h.Netns); err != nil {
		return err
	}
	// DAD off before eth0 exists, so its link-local and global addresses are
	// usable at once (default.* applies to links created or moved in later).
	// No router advertisements are expected on a lab segment.
	if err := sysctls(h.Netns,
		"net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
		"net.ipv6.conf.all.accept_ra=0", "net.ipv6.conf.default.accept_ra=0",
	); err != nil {
		return err
	}
	return ip("-n", h.Netns, "link", "set", "lo", "up")
}

// configure gives the host's eth0 (already in its namespace) its addresses and
// brings it up.
func (h *Host) configure() error {
	if err := ip("-n", h.Netns, "addr", "add", h.Addr4.String()+"/24", "dev", h.Link); err != nil {
		return err
	}
	if err := ip("-n", h.Netns, "addr", "add", h.Addr6.String()+"/64", "dev", h.Link, "nodad"); err != nil {
		return err
	}
	if err := ip("-n", h.Netns, "link", "set", h.Link, "up"); err != nil {
		return err
	}
	nh, err := h.Netlink()
	if err != nil {
		return err
	}
	defer nh.Close()
	link, err := nh.LinkByName(h.Link)
	if err != nil {
		return fmt.Errorf("%s: %w", h.Link, err)
	}
	h.MAC = link.Attrs().HardwareAddr
	mac := [6]byte(h.MAC)
	// The kernel derives the link-local address from the MAC (EUI-64);
	// computing it here saves waiting for it to appear.
	ll := [16]byte{0: 0xfe, 1: 0x80, 8: mac[0] ^ 0x02, 9: mac[1], 10: mac[2], 11: 0xff, 12: 0xfe, 13: mac[3], 14: mac[4], 15: mac[5]}
	h.LinkLocal = netip.AddrFrom16(ll)
	return nil
}

// Netlink returns a netlink handle working inside the host's namespace.
// Close it when done.
func (h *Host) Netlink() (*netlink.Handle, error) {
	ns, err := netns.GetFromName(h.Netns)
	if err != nil {
		return nil, fmt.Errorf("open namespace %s: %w", h.Netns, err)
	}
	defer ns.Close()
	nh, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", h.Netns, err)
	}
	return nh, nil
}

// Command returns a command that runs inside the host's namespace. The lab
// kills it, if still running, when it is closed.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Netns, name}, args...)...)
}

// Do runs fn on an OS thread switched into the host's namespace, so that
// sockets and netlink calls made by fn belong to the host. Sockets keep
// their namespace after Do returns, so fn may open a socket and hand it to
// other goroutines. Goroutines started by fn do NOT run in the namespace.
func (h *Host) Do(fn func() error) error {
	target, err := netns.GetFromName(h.Netns)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", h.Netns, err)
	}
	defer target.Close()

	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(int(target), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter namespace %s: %w", h.Netns, err)
	}
	fnErr := fn()
	if err := unix.Setns(int(orig), unix.CLONE_NEWNET); err != nil {
		// Stay locked: the runtime then ends this thread when the goroutine
		// exits instead of reusing it in the wrong namespace.
		return errors.Join(fnErr, fmt.Errorf("leave namespace %s: %w", h.Netns, err))
	}
	runtime.UnlockOSThread()
	return fnErr
}

var errNoSwitch = errors.New("netlab: a pair lab has no switch to unplug from")

// Cut takes the host off the bridge, as if its cable were pulled: the
// switch-side veth goes down, so eth0 loses carrier but keeps its addresses.
func (h *Host) Cut() error {
	if h.lab.SwitchNetns == "" {
		return errNoSwitch
	}
	return ip("-n", h.lab.SwitchNetns, "link", "set", h.SwitchEnd, "down")
}

// Restore plugs the host back in after [Host.Cut].
func (h *Host) Restore() error {
	if h.lab.SwitchNetns == "" {
		return errNoSwitch
	}
	return ip("-n", h.lab.SwitchNetns, "link", "set", h.SwitchEnd, "up")
}

// AddrsOn lists the addresses (with prefix length) on a link of the host,
// IPv4 and IPv6, link-local ones included.
func (h *Host) AddrsOn(link string) ([]netip.Prefix, error) {
	nh, err := h.Netlink()
	if err != nil {
		return nil, err
	}
	defer nh.Close()
	l, err := nh.LinkByName(link)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", link, h.Netns, err)
	}
	addrs, err := nh.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("addresses of %s in %s: %w", link, h.Netns, err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out, nil
}

// HasAddr reports whether the host's eth0 holds the address p.Addr() (the
// prefix length is not compared, so a VIP is found whatever its mask).
func (h *Host) HasAddr(p netip.Prefix) (bool, error) {
	addrs, err := h.AddrsOn(h.Link)
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if a.Addr() == p.Addr() {
			return true, nil
		}
	}
	return false, nil
}

// NeighState is a neighbour-table entry's NUD state, e.g. "REACHABLE".
type NeighState string

// Neighbor returns the host's neighbour-table entry for ip on eth0: the
// link-layer address it points at and its state. A missing entry is
// (nil, "", nil); an entry without an address (INCOMPLETE, FAILED) has a
// nil MAC.
func (h *Host) Neighbor(ip netip.Addr) (net.HardwareAddr, NeighState, error) {
	nh, err := h.Netlink()
	if err != nil {
		return nil, "", err
	}
	defer nh.Close()
	l, err := nh.LinkByName(h.Link)
	if err != nil {
		return nil, "", err
	}
	family := netlink.FAMILY_V4
	if ip.Is6() && !ip.Is4In6() {
		family = netlink.FAMILY_V6
	}
	neighs, err := nh.NeighList(l.Attrs().Index, family)
	if err != nil {
		return nil, "", fmt.Errorf("neighbours of %s in %s: %w", h.Link, h.Netns, err)
	}
	for _, n := range neighs {
		nip, ok := netip.AddrFromSlice(n.IP)
		if !ok || nip.Unmap() != ip.Unmap() {
			continue
		}
		var mac net.HardwareAddr
		if len(n.HardwareAddr) > 0 {
			mac = n.HardwareAddr
		}
		return mac, NeighState(neighStateName(n.State)), nil
	}
	return nil, "", nil
}

func neighStateName(s int) string {
	switch s {
	case netlink.NUD_INCOMPLETE:
		return "INCOMPLETE"
	case netlink.NUD_REACHABLE:
		return "REACHABLE"
	case netlink.NUD_STALE:
		return "STALE"
	case netlink.NUD_DELAY:
		return "DELAY"
	case netlink.NUD_PROBE:
		return "PROBE"
	case netlink.NUD_FAILED:
		return "FAILED"
	case netlink.NUD_NOARP:
		return "NOARP"
	case netlink.NUD_PERMANENT:
		return "PERMANENT"
	case netlink.NUD_NONE:
		return "NONE"
	}
	return fmt.Sprintf("0x%x", s)
}
