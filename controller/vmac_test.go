package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
)

// TestGroupUseVMAC: a group's useVMAC (and vmacXmitBase), through the API server and the
// running operator, reaches every instance's settings, and vrrpd runs each of them with
// the virtual MAC as keepalived's use_vmac without arguments (the macvlan named and
// addressed from the VRID), advertising from the interface itself with vmacXmitBase. A
// group without useVMAC runs none, and the API server refuses vmacXmitBase without it.
// The groups share routers (the default): each group's two Services are in one or two.
func TestGroupUseVMAC(t *testing.T) {
	ns := newNamespace(t, "vmac")
	startManager(t, ns)
	sel := map[string]string{"test": ns}
	nodes := newNodes(t, ns, 2, sel)
	groups := map[string]struct{ vmac, base bool }{"vmac": {true, false}, "base": {true, true}, "plain": {}}
	ip := map[string]int{"vmac": 100, "base": 110, "plain": 120}
	for name, want := range groups {
		newGroup(t, ns, name, func(g *v1alpha1.KeepalivedGroup) {
			g.Spec.NodeSelector, g.Spec.UseVMAC, g.Spec.VMACXmitBase = sel, want.vmac, want.base
		})
		for i := range 2 {
			newService(t, ns, fmt.Sprintf("%s-%d", name, i), ns+"/"+name, withExternalIPs(fmt.Sprintf("10.99.0.%d", ip[name]+i)))
		}
	}
	for name, want := range groups {
		var g *v1alpha1.KeepalivedGroup
		eventually(t, 30*time.Second, func() error {
			g = getGroup(t, ns, name)
			vips := 0
			for _, in := range g.Status.Instances {
				vips += len(in.VIPs)
			}
			if len(g.Status.Instances) == 0 || vips != 2 || len(g.Status.RouterIDs) != 2 || len(g.Status.Nodes) != 2 {
				return fmt.Errorf("%s: status %+v", name, g.Status)
			}
			return nil
		})
		for _, in := range g.Status.Instances {
			if in.Settings.UseVMAC != want.vmac || in.Settings.VMACXmitBase != want.base {
				t.Errorf("%s: instance %s settings %+v, want useVMAC %v vmacXmitBase %v", name, in.Key, in.Settings, want.vmac, want.base)
			}
		}
		cfg, ws, err := groupsource.Translate(g, nodes[0], nil, nil)
		if err != nil || len(cfg.Instances) != len(g.Status.Instances) || len(ws) != 0 {
			t.Fatalf("%s: vrrpd runs %+v (%v, warnings %v)", name, cfg, err, ws)
		}
		for _, in := range cfg.Instances {
			if in.VMAC.Enabled != want.vmac || in.VMAC.Interface != "" || in.VMAC.MAC != nil || in.VMAC.XmitBase != want.base {
				t.Errorf("%s: %s runs with VMAC %+v, want enabled %v (xmit base %v) with the VRID's name and MAC", name, in.Name, in.VMAC, want.vmac, want.base)
			}
		}
	}
	bad := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", VMACXmitBase: true}}
	if err := k8s.Create(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "vmacXmitBase needs useVMAC") {
		t.Errorf("vmacXmitBase without useVMAC: %v, want the API server's refusal", err)
	}
}

// TestRedTeamServiceUseVMACRefused (issue 27, item 5): a Service's owner asks, in the
// verbatimconfig annotation, for use_vmac and vmac_xmit_base, which would make every
// member node create a macvlan and change its interface's ARP sysctls. Neither reaches
// the status or vrrpd; the Service gets an Event naming the group's field, and its
// instance runs as the group says (no virtual MAC). The group shares routers (the
// default): with the refused keywords dropped the three Services have the same settings,
// so they share routers of one class.
func TestRedTeamServiceUseVMACRefused(t *testing.T) {
	ns := newNamespace(t, "rt-vmac")
	startManager(t, ns)
	sel := map[string]string{"test": ns}
	nodes := newNodes(t, ns, 2, sel)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = sel })
	// One Service per keyword: the Events of one Service, reason and action fold into
	// one series that keeps the last note.
	for i, verbatim := range []string{
		`{"use_vmac": "", "garp_master_repeat": "3"}`,
		`{"use_vmac": "vrrp.7 00:00:5e:00:01:07", "vmac_xmit_base": "", "garp_master_repeat": "3"}`,
		`{"vmac_xmit_base": "", "garp_master_repeat": "3"}`,
	} {
		newService(t, ns, fmt.Sprintf("tenant-%d", i), ns+"/g", func(s *corev1.Service) {
			s.Spec.ExternalIPs = []string{fmt.Sprintf("10.99.0.%d", 130+i)}
			s.Annotations[v1alpha1.AnnotationVerbatimConfig] = verbatim
		})
	}
	var g *v1alpha1.KeepalivedGroup
	eventually(t, 30*time.Second, func() error {
		g = getGroup(t, ns, "g")
		vips := 0
		for _, in := range g.Status.Instances {
			vips += len(in.VIPs)
		}
		if len(g.Status.Instances) == 0 || vips != 3 || len(g.Status.RouterIDs) != 3 || len(g.Status.Nodes) != 2 {
			return fmt.Errorf("status %+v", g.Status)
		}
		return nil
	})
	for _, in := range g.Status.Instances {
		if set := in.Settings; set.UseVMAC || set.VMACXmitBase || len(set.Verbatim) != 1 || set.Verbatim["garp_master_repeat"] != "3" {
			t.Errorf("%s: the Service's use_vmac reached the status: %+v", in.Key, set)
		}
	}
	cfg, _, err := groupsource.Translate(g, nodes[0], nil, nil)
	if err != nil || len(cfg.Instances) != len(g.Status.Instances) {
		t.Fatalf("vrrpd runs %+v (%v)", cfg, err)
	}
	for _, in := range cfg.Instances {
		if in.VMAC.Enabled || in.VMAC.XmitBase || in.GARP.MasterRepeat != 3 {
			t.Errorf("vrrpd runs %s with VMAC %+v, garp_master_repeat %d", in.Name, in.VMAC, in.GARP.MasterRepeat)
		}
	}
	waitEvent(t, ns, "tenant-0", ReasonInvalidAnnotation, `"use_vmac" is the group's decision (spec.useVMAC`)
	waitEvent(t, ns, "tenant-1", ReasonInvalidAnnotation, `is the group's decision`)
	waitEvent(t, ns, "tenant-2", ReasonInvalidAnnotation, `"vmac_xmit_base" is the group's decision (spec.vmacXmitBase`)
}
