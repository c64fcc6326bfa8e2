package config

import (
	"net"
)

// The model of keepalived's virtual MAC setting (use_vmac, vmac_xmit_base): the instance
// runs on a macvlan interface whose MAC is the RFC 5798 §7.3 virtual router MAC.

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
