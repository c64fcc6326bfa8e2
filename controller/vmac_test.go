package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
)

// TestGroupUseVMAC: a group's useVMAC, through the API server and the running operator,
// reaches every instance's settings, and vrrpd runs each of them with the virtual MAC as
// keepalived's use_vmac without arguments (the macvlan named and addressed from the
// VRID). A Service's vmac_xmit_base then applies to its own instance, which it does not
// without a vmac. A group without useVMAC runs none.
func TestGroupUseVMAC(t *testing.T) {
	ns := newNamespace(t, "vmac")
	startManager(t, ns)
	sel := map[string]string{"test": ns}
	nodes := newNodes(t, ns, 2, sel)
	newGroup(t, ns, "vmac", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector, g.Spec.UseVMAC = sel, true })
	newGroup(t, ns, "plain", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = sel })
	for _, group := range []string{"vmac", "plain"} {
		newService(t, ns, group+"-web", ns+"/"+group, withExternalIPs(map[string]string{"vmac": "10.99.0.100", "plain": "10.99.0.110"}[group]))
		newService(t, ns, group+"-base", ns+"/"+group, func(s *corev1.Service) {
			s.Spec.ExternalIPs = []string{map[string]string{"vmac": "10.99.0.101", "plain": "10.99.0.111"}[group]}
			s.Annotations[v1alpha1.AnnotationVerbatimConfig] = `{"vmac_xmit_base": ""}`
		})
	}
	for _, group := range []string{"vmac", "plain"} {
		want := group == "vmac"
		var g *v1alpha1.KeepalivedGroup
		eventually(t, 30*time.Second, func() error {
			g = getGroup(t, ns, group)
			if len(g.Status.Instances) != 2 || len(g.Status.Nodes) != 2 {
				return fmt.Errorf("%s: status %+v", group, g.Status)
			}
			return nil
		})
		for _, in := range g.Status.Instances {
			if in.Settings.UseVMAC != want {
				t.Errorf("%s: instance %s settings.useVMAC %v, want %v", group, in.Key, in.Settings.UseVMAC, want)
			}
		}
		cfg, ws, err := groupsource.Translate(g, nodes[0], nil, nil)
		if err != nil || len(cfg.Instances) != 2 {
			t.Fatalf("%s: vrrpd runs %+v (%v)", group, cfg, err)
		}
		// Without a vmac, keepalived drops vmac_xmit_base with a warning, and so does vrrpd.
		if text := fmt.Sprint(ws); (len(ws) != 0) == want {
			t.Errorf("%s: warnings %s", group, text)
		}
		for _, in := range cfg.Instances {
			base := in.Name == ns+"/"+group+"-base"
			if in.VMAC.Enabled != want || in.VMAC.Interface != "" || in.VMAC.MAC != nil || in.VMAC.XmitBase != (want && base) {
				t.Errorf("%s: %s runs with VMAC %+v, want enabled %v (xmit base %v) with the VRID's name and MAC", group, in.Name, in.VMAC, want, want && base)
			}
		}
	}
}
