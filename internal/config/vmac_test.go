package config

import (
	"net"
	"strings"
	"testing"
)

// TestVMACKeywords: use_vmac and vmac_xmit_base as keepalived 2.2.7's parser reads them.
func TestVMACKeywords(t *testing.T) {
	mac := func(s string) net.HardwareAddr { m, _ := net.ParseMAC(s); return m }
	cases := []struct {
		body string
		want VMAC
		warn string // a warning that must be given, "" for none
	}{
		{"", VMAC{}, ""},
		{"use_vmac", VMAC{Enabled: true}, ""},
		{"use_vmac vrrp.x", VMAC{Enabled: true, Interface: "vrrp.x"}, ""},
		{"use_vmac\nvmac_xmit_base", VMAC{Enabled: true, XmitBase: true}, ""},
		{"vmac_xmit_base", VMAC{}, "vmac_xmit_base is only valid with a vmac"},
		{"use_vmac 02:11:22:33:44:55 vm1", VMAC{Enabled: true, Interface: "vm1", MAC: mac("02:11:22:33:44:55")}, ""},
		// Five octets: the sixth is the VRID (51 = 0x33).
		{"use_vmac 02:11:22:33:44", VMAC{Enabled: true, MAC: mac("02:11:22:33:44:33")}, ""},
		{"use_vmac 02:11:22:33:44:", VMAC{Enabled: true, MAC: mac("02:11:22:33:44:33")}, ""},
		{"use_vmac 01:11:22:33:44:55", VMAC{Enabled: true}, "multicast"},
		{"use_vmac 00:00:5e:00:01:07", VMAC{Enabled: true}, "RFC5798"},
		{"use_vmac 0g:11:22:33:44:55", VMAC{Enabled: true}, "invalid MAC"},
		{"use_vmac averyveryverylongname", VMAC{Enabled: true}, "too long"},
		{"use_vmac a b", VMAC{Enabled: true, Interface: "a"}, "already specified"},
	}
	for _, c := range cases {
		in, ws := one(t, "", c.body)
		if !in.VMAC.Equal(c.want) {
			t.Errorf("%q: VMAC %+v, want %+v", c.body, in.VMAC, c.want)
		}
		var got []string
		for _, w := range ws {
			got = append(got, w.Error())
		}
		all := strings.Join(got, "\n")
		if (c.warn == "") != (all == "") || !strings.Contains(all, c.warn) {
			t.Errorf("%q: warnings %q, want one containing %q", c.body, all, c.warn)
		}
	}
}

// TestVMACYAML: the YAML field gives what the keywords give, and refuses bad values.
func TestVMACYAML(t *testing.T) {
	conf := func(vmac string) string {
		return "instances:\n- name: A\n  interface: eth0\n  vrid: 51\n  vips: [10.99.0.100/24]\n  vmac: " + vmac + "\n"
	}
	cfg, ws, err := Parse("v.yaml", []byte(conf("{enabled: true, interface: vm1, mac: \"02:11:22:33:44\", xmitBase: true}")))
	if err != nil || len(ws) != 0 {
		t.Fatalf("Parse: %v %v", err, ws)
	}
	want, _ := one(t, "", "use_vmac vm1 02:11:22:33:44\nvmac_xmit_base")
	if got := cfg.Instances[0].VMAC; !got.Equal(want.VMAC) || !got.Enabled {
		t.Errorf("YAML VMAC %+v, keepalived.conf %+v", got, want.VMAC)
	}
	for _, bad := range []string{"{enabled: true, interface: \"a/b\"}", "{enabled: true, mac: \"01:00:00:00:00:01\"}", "{enabled: true, bogus: 1}"} {
		if _, _, err := Parse("v.yaml", []byte(conf(bad))); err == nil {
			t.Errorf("vmac %s accepted", bad)
		}
	}
}

// TestVMACEqual: a reload that changes the virtual MAC setting is a changed instance.
func TestVMACEqual(t *testing.T) {
	base, _ := one(t, "", "use_vmac")
	for name, change := range map[string]func(*Instance){
		"Enabled":   func(i *Instance) { i.VMAC.Enabled = false },
		"Interface": func(i *Instance) { i.VMAC.Interface = "x" },
		"MAC":       func(i *Instance) { i.VMAC.MAC = net.HardwareAddr{2, 0, 0, 0, 0, 1} },
		"XmitBase":  func(i *Instance) { i.VMAC.XmitBase = true },
	} {
		c := base
		change(&c)
		if base.Equal(c) {
			t.Errorf("changing VMAC.%s: still Equal", name)
		}
	}
}
