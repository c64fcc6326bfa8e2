package vip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// maxNameLen is IFNAMSIZ minus the terminating NUL, the longest interface
// name and the longest address label the kernel keeps.
const maxNameLen = 15

// VIP is one virtual address as keepalived writes it in virtual_ipaddress:
// "10.0.0.1/24 dev eth0 label eth0:1".
type VIP struct {
	// Prefix is the address and its prefix length (keepalived's default
	// when none is written is /32 or /128; the config layer fills it in).
	Prefix netip.Prefix `json:"prefix"`
	// Dev is the interface the address goes on.
	Dev string `json:"dev"`
	// Label is the IPv4 address label ("eth0:1"); empty for none.
	Label string `json:"label,omitempty"`
}

// String gives the VIP in keepalived's form.
func (v VIP) String() string {
	var b strings.Builder
	b.WriteString(v.Prefix.String())
	if v.Dev != "" {
		b.WriteString(" dev ")
		b.WriteString(v.Dev)
	}
	if v.Label != "" {
		b.WriteString(" label ")
		b.WriteString(v.Label)
	}
	return b.String()
}

// validate reports what is wrong with a VIP before anything is sent to the
// kernel.
func (v VIP) validate() error {
	if !v.Prefix.IsValid() {
		return errors.New("vip: no address/prefix")
	}
	a := v.Prefix.Addr()
	if a.Zone() != "" || a.Is4In6() {
		return fmt.Errorf("vip %s: write the address without zone or IPv4-in-IPv6 form", v.Prefix)
	}
	if a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() {
		return fmt.Errorf("vip %s: not a unicast address", v.Prefix)
	}
	if v.Dev == "" {
		return fmt.Errorf("vip %s: no device", v.Prefix)
	}
	if len(v.Dev) > maxNameLen || strings.ContainsAny(v.Dev, "/ \t\n") {
		return fmt.Errorf("vip %s: bad device name %q", v.Prefix, v.Dev)
	}
	if v.Label != "" {
		if a.Is6() {
			// keepalived drops such a label with a log line; the config layer
			// does the same, so one reaching here is a caller bug.
			return fmt.Errorf("vip %s: label %q: IPv6 addresses have no labels", v.Prefix, v.Label)
		}
		if len(v.Label) > maxNameLen {
			return fmt.Errorf("vip %s: label %q longer than %d bytes", v.Prefix, v.Label, maxNameLen)
		}
		// iproute2 insists on this, and tools like ifconfig rely on it.
		if !strings.HasPrefix(v.Label, v.Dev) {
			return fmt.Errorf("vip %s: label %q must start with the device name %q", v.Prefix, v.Label, v.Dev)
		}
	}
	return nil
}

// key identifies a VIP by address and interface. The kernel would keep one IPv4 address
// twice under two prefix lengths, but to the wire (ARP, and whoever else holds it) it is
// one address: the prefix length and the label are attributes, not part of the identity.
type key struct {
	addr netip.Addr
	dev  string
}

func (v VIP) key() key { return key{v.Prefix.Addr(), v.Dev} }
