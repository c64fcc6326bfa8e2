package config

import (
	"net"
)

// Resolve's step for the virtual MAC.

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
