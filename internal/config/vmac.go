package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// This file holds keepalived's virtual MAC settings (use_vmac, vmac_xmit_base): the
// instance runs on a macvlan interface whose MAC is the RFC 5798 §7.3 virtual router MAC.

// VMAC is an instance's virtual MAC setting (keepalived's use_vmac and vmac_xmit_base).
type VMAC struct {
	// Enabled says the instance uses a macvlan interface with the virtual MAC: the VIPs go
	// on it, and (unless XmitBase) the advertisements are sent from it.
	Enabled bool
	// Interface is the macvlan's name as configured (use_vmac NAME); empty means the
	// daemon picks keepalived's default, vrrp.VRID.
	Interface string
	// MAC is a configured MAC address replacing 00-00-5E-00-01-VRID (use_vmac MAC, which
	// keepalived allows outside strict mode); nil for the RFC 5798 address.
	MAC net.HardwareAddr
	// XmitBase sends the advertisements from the base interface (Interface of the
	// instance) instead of from the macvlan (vmac_xmit_base).
	XmitBase bool
}

// Equal reports whether a and b are the same setting.
func (a VMAC) Equal(b VMAC) bool {
	return a.Enabled == b.Enabled && a.Interface == b.Interface && a.XmitBase == b.XmitBase && string(a.MAC) == string(b.MAC)
}

// vmacDraft is what the keywords asked for; Resolve checks it against the rest.
type vmacDraft struct {
	VMAC
	macUsesVRID bool // MAC was given with five octets: the sixth is the VRID
	xmitBase    bool // vmac_xmit_base given, possibly without use_vmac
	pos         Position
}

// useVMAC parses use_vmac's optional words: an interface name and a MAC address (a word
// with a colon, since interface names cannot hold one), in either order. Bad words are
// ignored with a note, as keepalived does.
func (s *statement) useVMAC(v *vmacDraft) {
	v.Enabled, v.pos = true, s.pos
	if len(s.args) > 2 {
		s.note("use_vmac takes at most an interface name and a MAC address; ignoring %q", strings.Join(s.args[2:], " "))
	}
	for i, w := range s.args {
		if i >= 2 {
			break
		}
		if !strings.Contains(w, ":") {
			if v.Interface != "" {
				s.note("VMAC interface name already specified; ignoring %q", w)
				continue
			}
			if !validIfName(w) {
				s.note("VMAC interface name %q too long or invalid characters - ignoring", w)
				continue
			}
			v.Interface = w
			continue
		}
		if v.MAC != nil {
			s.note("VMAC interface address already specified; ignoring %q", w)
			continue
		}
		mac, useVRID, err := parseVMACAddr(w)
		if err != nil {
			s.note("VMAC %v - ignored", err)
			continue
		}
		v.MAC, v.macUsesVRID = mac, useVRID
	}
}

// parseVMACAddr parses a use_vmac MAC address: six hex octets, or five (with or without a
// trailing colon) for the VRID to complete. Multicast addresses and the RFC 5798 ones
// (which use_vmac gives without an address) are refused, as keepalived refuses them.
func parseVMACAddr(w string) (net.HardwareAddr, bool, error) {
	parts := strings.Split(strings.TrimSuffix(w, ":"), ":")
	useVRID := len(parts) == 5
	if !useVRID && (len(parts) != 6 || strings.HasSuffix(w, ":")) {
		return nil, false, fmt.Errorf("invalid MAC address %s", w)
	}
	mac := make(net.HardwareAddr, 6)
	for i, p := range parts {
		b, err := strconv.ParseUint(p, 16, 8)
		if err != nil || p == "" || len(p) > 2 {
			return nil, false, fmt.Errorf("invalid MAC address %s", w)
		}
		mac[i] = byte(b)
	}
	switch {
	case mac[0]&1 != 0:
		return nil, false, fmt.Errorf("MAC address is multicast %s", w)
	case mac[0] == 0 && mac[1] == 0 && mac[2] == 0x5e && mac[3] == 0 && (mac[4] == 1 || mac[4] == 2):
		return nil, false, fmt.Errorf("MAC address not allowed to be RFC5798 address (%s)", w)
	}
	return mac, useVRID, nil
}

// validIfName reports whether the kernel accepts name as an interface name (dev_valid_name).
func validIfName(name string) bool {
	if name == "" || len(name) > 15 || name == "." || name == ".." {
		return false
	}
	return !strings.ContainsAny(name, "/: \t\n")
}

// vmac: vmac_xmit_base needs use_vmac; a MAC completed by the VRID gets it.
func (r *resolver) vmac() error {
	v := r.d.vmac
	if v.xmitBase && !v.Enabled {
		r.warn(r.or(v.pos), "vmac_xmit_base is only valid with a vmac")
	}
	if !v.Enabled {
		return nil
	}
	r.in.VMAC = v.VMAC
	r.in.VMAC.XmitBase = v.xmitBase
	if r.in.Strict {
		// keepalived's strict mode keeps a virtual router on its RFC 5798 MAC and sends
		// its advertisements from it: it clears both settings.
		if v.xmitBase {
			r.warn(r.or(v.pos), "vmac_xmit_base is not allowed in strict mode; clearing it")
			r.in.VMAC.XmitBase = false
		}
		if v.MAC != nil {
			r.warn(r.or(v.pos), "a configured VMAC address is not allowed in strict mode; using the RFC 5798 one")
			r.in.VMAC.MAC = nil
			return nil
		}
	}
	if v.MAC != nil {
		r.in.VMAC.MAC = append(net.HardwareAddr(nil), v.MAC...)
		if v.macUsesVRID {
			r.in.VMAC.MAC[5] = r.in.VRID
		}
	}
	return nil
}

// yamlVMAC is the YAML form of use_vmac / vmac_xmit_base:
// vmac: {enabled: true, interface: vrrp.51, mac: "02:00:00:00:00:33", xmitBase: false}.
type yamlVMAC struct {
	Enabled   bool   `yaml:"enabled"`
	Interface string `yaml:"interface"`
	MAC       string `yaml:"mac"`
	XmitBase  bool   `yaml:"xmitBase"`
}

// draft checks the YAML setting; where keepalived.conf notes and ignores a bad word, the
// YAML file, which has no legacy to accept, refuses it.
func (y yamlVMAC) draft(pos Position) (vmacDraft, error) {
	v := vmacDraft{VMAC: VMAC{Enabled: y.Enabled}, xmitBase: y.XmitBase, pos: pos}
	if y.Interface != "" {
		if !validIfName(y.Interface) {
			return v, fmt.Errorf("vmac.interface %q is not a valid interface name", y.Interface)
		}
		v.Interface = y.Interface
	}
	if y.MAC != "" {
		mac, useVRID, err := parseVMACAddr(y.MAC)
		if err != nil {
			return v, fmt.Errorf("vmac.mac: %v", err)
		}
		v.MAC, v.macUsesVRID = mac, useVRID
	}
	return v, nil
}
