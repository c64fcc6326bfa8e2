package config

import (
	"fmt"
)

// The YAML form of use_vmac and vmac_xmit_base.

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
