package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// use_vmac's words as written, read by the keyword table's entry (draft.go), checked
// against the rest by Resolve (resolve_vmac.go).

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
	if len(s.Args) > 2 {
		s.Note("use_vmac takes at most an interface name and a MAC address; ignoring %q", strings.Join(s.Args[2:], " "))
	}
	for i, w := range s.Args {
		if i >= 2 {
			break
		}
		if !strings.Contains(w, ":") {
			if v.Interface != "" {
				s.Note("VMAC interface name already specified; ignoring %q", w)
				continue
			}
			if !validIfName(w) {
				s.Note("VMAC interface name %q too long or invalid characters - ignoring", w)
				continue
			}
			v.Interface = w
			continue
		}
		if v.MAC != nil {
			s.Note("VMAC interface address already specified; ignoring %q", w)
			continue
		}
		mac, useVRID, err := parseVMACAddr(w)
		if err != nil {
			s.Note("VMAC %v - ignored", err)
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
