package vip

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// This file makes and removes the macvlan interfaces that carry a virtual router's MAC
// (RFC 5798 §7.3) the way keepalived 2.2.7's use_vmac does (vrrp_vmac.c): a private-mode
// macvlan on the instance's interface, with the virtual MAC, up for as long as the
// instance runs, in backup as in master. Only the VIPs move on takeover; they go on the
// macvlan, so the kernel answers ARP for them with the virtual MAC.

// VirtualMAC returns the virtual router MAC of RFC 5798 §7.3: 00-00-5E-00-01-{VRID}
// for IPv4, 00-00-5E-00-02-{VRID} for IPv6.
func VirtualMAC(ipv6 bool, vrid uint8) net.HardwareAddr {
	fam := byte(1)
	if ipv6 {
		fam = 2
	}
	return net.HardwareAddr{0x00, 0x00, 0x5e, 0x00, fam, vrid}
}

// VMACName returns the name keepalived gives an instance's macvlan when the
// configuration names none: vrrp.VRID, or, when taken says that name is used (by
// another instance), vrrp1.VRID, vrrp2.VRID, ... IPv6 tries vrrp6.VRID first, which
// is how an IPv4 and an IPv6 instance with one VRID end up with vrrp.VRID and
// vrrp6.VRID. taken may be nil.
func VMACName(ipv6 bool, vrid uint8, taken func(string) bool) string {
	name := fmt.Sprintf("vrrp.%d", vrid)
	for num := 0; taken != nil && taken(name); {
		switch {
		case !ipv6:
			num++
		case num == 0:
			num = 6
		case num == 6:
			num = 1
		default:
			if num++; num == 6 {
				num++
			}
		}
		name = fmt.Sprintf("vrrp%d.%d", num, vrid)
	}
	return name
}

// VMAC is one virtual MAC interface to make.
type VMAC struct {
	// Name is the macvlan's name.
	Name string
	// Parent is the interface it sits on: the instance's interface.
	Parent string
	// MAC is its address, normally VirtualMAC.
	MAC net.HardwareAddr
	// IPv6 says the instance (or one of its excluded VIPs) needs IPv6 on the macvlan;
	// keepalived turns IPv6 off on the macvlans of IPv4-only instances.
	IPv6 bool
	// LinkLocal, when valid, is put on the macvlan (IPv6 instances that send their
	// advertisements from it): keepalived uses the parent's link-local address, so the
	// advertisements' source stays the router's own address (RFC 5798 §5.1.2.2).
	LinkLocal netip.Addr
}

// VMACs makes and removes macvlans in the calling thread's network namespace (netlink
// through nl, sysctls through /proc/sys). It keeps the parent interfaces' arp_ignore
// and arp_filter, which it changes while a macvlan sits on them, to put them back after
// the last one goes; with a state directory (NewRecordedVMACs) it also writes them, and
// each macvlan, to a crash record first, so the next run puts them back after a crash
// (Recover). Safe for concurrent use.
type VMACs struct {
	nl      *netlink.Handle
	dir     string // the state directory; "" keeps no record
	mu      sync.Mutex
	parents map[string]*parentConf
	rec     *vmacRecord // what the file says (with dir)
}

// parentKeys are the parent's ipv4 conf settings a macvlan changes.
var parentKeys = []string{"arp_ignore", "arp_filter"}

// parentConf is a parent's ARP settings from before its first macvlan.
type parentConf struct {
	users map[string]bool   // the macvlans on it
	orig  map[string]string // parentKeys' values that could be read
}

// NewVMACs returns a VMACs working through nl (nil: the calling thread's namespace)
// that keeps no crash record.
func NewVMACs(nl *netlink.Handle) *VMACs {
	if nl == nil {
		nl = &netlink.Handle{}
	}
	return &VMACs{nl: nl, parents: map[string]*parentConf{}, rec: &vmacRecord{}}
}

// NewRecordedVMACs is NewVMACs with a crash record in stateDir (the daemon's, which
// vip.New has locked). It loads what a previous run recorded, a corrupt record being
// an error; call Recover before the first Up.
func NewRecordedVMACs(nl *netlink.Handle, stateDir string) (*VMACs, error) {
	rec, err := readVMACRecord(stateDir)
	if err != nil {
		return nil, fmt.Errorf("vip: %w", err)
	}
	v := NewVMACs(nl)
	v.dir, v.rec = stateDir, rec
	return v, nil
}

// Up makes the macvlan (or takes over one a previous run left, fixing its MAC, mode or
// parent), sets its sysctls and brings it up. It returns its interface index. An
// existing interface of that name that is not a macvlan is left alone: an error.
func (v *VMACs) Up(m VMAC) (int, error) {
	if len(m.MAC) != 6 || m.Name == "" || m.Parent == "" {
		return 0, fmt.Errorf("vmac %q on %q: name, parent and 6-byte MAC required", m.Name, m.Parent)
	}
	parent, err := v.nl.LinkByName(m.Parent)
	if err != nil {
		return 0, fmt.Errorf("vmac %s: parent %s: %w", m.Name, m.Parent, err)
	}
	if old, err := v.nl.LinkByName(m.Name); err == nil {
		mv, ok := old.(*netlink.Macvlan)
		if !ok {
			return 0, fmt.Errorf("vmac %s conflicts with existing %s interface", m.Name, old.Type())
		}
		if mv.ParentIndex != parent.Attrs().Index || mv.Mode != netlink.MACVLAN_MODE_PRIVATE ||
			mv.HardwareAddr.String() != m.MAC.String() {
			// A stale one (another parent, MAC or mode): replace it.
			if err := v.nl.LinkDel(old); err != nil {
				return 0, fmt.Errorf("vmac %s: remove stale: %w", m.Name, err)
			}
		}
	}
	// Recorded before it is made: a crash between the two leaves a record of a
	// macvlan that is not there, which Recover takes in its stride.
	v.mu.Lock()
	err = v.recordMACVLAN(m)
	v.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("vmac %s: record: %w", m.Name, err)
	}
	link, err := v.nl.LinkByName(m.Name)
	if err != nil {
		mv := &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: m.Name, ParentIndex: parent.Attrs().Index,
			HardwareAddr: m.MAC}, Mode: netlink.MACVLAN_MODE_PRIVATE}
		if err := v.nl.LinkAdd(mv); err != nil {
			return 0, fmt.Errorf("vmac %s: create on %s: %w", m.Name, m.Parent, err)
		}
		if link, err = v.nl.LinkByName(m.Name); err != nil {
			return 0, fmt.Errorf("vmac %s: %w", m.Name, err)
		}
	}
	if err := v.configure(link, m); err != nil {
		return 0, err
	}
	return link.Attrs().Index, nil
}

func (v *VMACs) configure(link netlink.Link, m VMAC) error {
	// IPv4: the macvlan must not answer ARP for the parent's addresses (arp_ignore), must
	// hear the other routers' adverts although it has no address (accept_local,
	// rp_filter), and keeps secondary VIPs when the first goes (promote_secondaries).
	for _, kv := range [][2]string{{"arp_ignore", "1"}, {"accept_local", "1"}, {"rp_filter", "0"}, {"promote_secondaries", "1"}} {
		if err := writeSysctl("ipv4", m.Name, kv[0], kv[1]); err != nil {
			return fmt.Errorf("vmac %s: %w", m.Name, err)
		}
	}
	if err := v.holdParent(m.Parent, m.Name); err != nil {
		return fmt.Errorf("vmac %s: %w", m.Name, err)
	}
	disable := "1"
	if m.IPv6 {
		disable = "0"
		// No EUI-64 link-local from the virtual MAC (RFC 5798 §7.4: the virtual MAC is
		// not the source of the router's own address). Set before the link goes up.
		if err := v.nl.LinkSetIP6AddrGenMode(link, 1 /* IN6_ADDR_GEN_MODE_NONE */); err != nil {
			return fmt.Errorf("vmac %s: addr_gen_mode: %w", m.Name, err)
		}
	}
	if err := writeSysctl("ipv6", m.Name, "disable_ipv6", disable); err != nil && m.IPv6 {
		return fmt.Errorf("vmac %s: %w", m.Name, err)
	}
	if err := v.nl.LinkSetUp(link); err != nil {
		return fmt.Errorf("vmac %s: up: %w", m.Name, err)
	}
	if m.IPv6 && m.LinkLocal.IsValid() {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: m.LinkLocal.AsSlice(), Mask: net.CIDRMask(64, 128)}, Flags: unix.IFA_F_NODAD}
		if err := v.nl.AddrReplace(link, a); err != nil {
			return fmt.Errorf("vmac %s: link-local %s: %w", m.Name, m.LinkLocal, err)
		}
	}
	return nil
}

// holdParent sets arp_ignore and arp_filter on the parent, so it does not answer ARP for
// the VIPs on its macvlans with its own MAC, remembering the values for releaseParent,
// in the crash record first.
func (v *VMACs) holdParent(name, vmac string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if p := v.parents[name]; p != nil {
		p.users[vmac] = true
		return nil
	}
	p := &parentConf{users: map[string]bool{vmac: true}, orig: map[string]string{}}
	if prev, ok := v.rec.Parents[name]; ok {
		// A crashed run's originals, not recovered yet: the values now are its.
		maps.Copy(p.orig, prev)
	} else {
		for _, k := range parentKeys {
			if val, err := readSysctl("ipv4", name, k); err == nil {
				p.orig[k] = val
			}
		}
		if v.dir != "" {
			if v.rec.Parents == nil {
				v.rec.Parents = map[string]map[string]string{}
			}
			v.rec.Parents[name] = maps.Clone(p.orig)
			if err := v.rec.write(v.dir); err != nil {
				delete(v.rec.Parents, name)
				return fmt.Errorf("record %s's sysctls: %w", name, err)
			}
		}
	}
	v.parents[name] = p
	var errs []error
	for _, k := range parentKeys {
		errs = append(errs, writeSysctl("ipv4", name, k, "1"))
	}
	return errors.Join(errs...)
}

// releaseParent puts the parent's ARP settings back after its last macvlan goes, and
// then takes them out of the crash record.
func (v *VMACs) releaseParent(name, vmac string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.parents[name]
	if p == nil {
		return nil
	}
	if delete(p.users, vmac); len(p.users) > 0 {
		return nil
	}
	delete(v.parents, name)
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(p.orig)) {
		errs = append(errs, writeSysctl("ipv4", name, k, p.orig[k]))
	}
	if err := errors.Join(errs...); err != nil {
		return err // still recorded: the next start tries again
	}
	if _, ok := v.rec.Parents[name]; ok && v.dir != "" {
		delete(v.rec.Parents, name)
		return v.rec.write(v.dir)
	}
	return nil
}

// Remove deletes the macvlan (its VIPs go with it) and, after the parent's last one,
// puts the parent's ARP settings back. An interface of that name that is not a
// macvlan is left alone.
func (v *VMACs) Remove(m VMAC) error {
	errRel := v.releaseParent(m.Parent, m.Name)
	link, err := v.nl.LinkByName(m.Name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			v.mu.Lock()
			errRec := v.forgetMACVLAN(m.Name)
			v.mu.Unlock()
			return errors.Join(errRel, errRec)
		}
		return errors.Join(errRel, fmt.Errorf("vmac %s: %w", m.Name, err))
	}
	if _, ok := link.(*netlink.Macvlan); !ok {
		return errors.Join(errRel, fmt.Errorf("vmac %s: not removing a %s interface", m.Name, link.Type()))
	}
	if err := v.nl.LinkDel(link); err != nil {
		return errors.Join(errRel, fmt.Errorf("vmac %s: remove: %w", m.Name, err))
	}
	v.mu.Lock()
	errRec := v.forgetMACVLAN(m.Name)
	v.mu.Unlock()
	return errors.Join(errRel, errRec)
}

func sysctlPath(family, iface, key string) string {
	return filepath.Join("/proc/sys/net", family, "conf", iface, key)
}

func readSysctl(family, iface, key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(family, iface, key))
	return strings.TrimSpace(string(b)), err
}

func writeSysctl(family, iface, key, value string) error {
	if _, err := strconv.Atoi(value); err != nil || strings.ContainsAny(iface, "/") {
		return fmt.Errorf("sysctl %s/%s/%s: bad value %q", family, iface, key, value)
	}
	return os.WriteFile(sysctlPath(family, iface, key), []byte(value), 0o644)
}
