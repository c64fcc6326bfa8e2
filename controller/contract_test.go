package controller

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
)

// TestVerbatimContract: what the operator writes, vrrpd reads, for every
// keyword of the API's vrrp_instance table. A Service sets the keyword in
// its verbatimconfig; the operator's instance computation (computePlan)
// makes the status; vrrpd's translation (groupsource.Translate) makes the
// daemon's configuration. Operator-owned and refused keywords never reach
// the status; a Service keyword does, and vrrpd either applies it (the
// resulting instance field is checked) or warns naming it. A keyword that
// config starts to implement without this test learning it fails here.
func TestVerbatimContract(t *testing.T) {
	// The Service keywords vrrpd implements: a sample value and what the
	// instance must show.
	applied := map[string]struct {
		value string
		check func(config.Instance) bool
	}{
		"accept":                     {"", func(in config.Instance) bool { return in.AcceptMode }},
		"no_accept":                  {"", func(in config.Instance) bool { return !in.AcceptMode }},
		"preempt_delay":              {"3", func(in config.Instance) bool { return in.PreemptDelay == 3*time.Second }},
		"garp_master_delay":          {"7", func(in config.Instance) bool { return in.GARP.MasterDelay == 7*time.Second }},
		"garp_master_refresh":        {"60", func(in config.Instance) bool { return in.GARP.MasterRefresh == time.Minute }},
		"garp_master_refresh_repeat": {"3", func(in config.Instance) bool { return in.GARP.MasterRefreshRepeat == 3 }},
		"garp_master_repeat":         {"4", func(in config.Instance) bool { return in.GARP.MasterRepeat == 4 }},
		"mcast_dst_ip": {"224.0.0.19", func(in config.Instance) bool {
			return in.MulticastGroup == netip.MustParseAddr("224.0.0.19")
		}},
		"lower_prio_no_advert": {"", func(in config.Instance) bool { return in.LowerPrioNoAdvert }},
		"down_timer_adverts":   {"2", func(in config.Instance) bool { return in.DownTimerAdverts == 2 }},
		"strict_mode": {"", func(in config.Instance) bool {
			return in.Strict && in.LowerPrioNoAdvert && !in.AcceptMode
		}},
	}
	// The warning keepalived gives for an applied keyword alone (none since
	// use_vmac and vmac_xmit_base became the group's).
	warns := map[string]string{}
	nodes := []corev1.Node{node("n1", "10.99.0.1"), node("n2", "10.99.0.2")}
	seenApplied := map[string]bool{}
	for _, kw := range append(v1alpha1.InstanceKeywords(), "bogus_keyword") {
		owner, known := v1alpha1.InstanceKeyword(kw)
		value := "1"
		if a, ok := applied[kw]; ok {
			value = a.value
		}
		ann, _ := json.Marshal(map[string]string{kw: value})
		svc := corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", Annotations: map[string]string{
				v1alpha1.AnnotationVerbatimConfig: string(ann),
			}},
			Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.99.0.100"}},
		}
		g := &v1alpha1.KeepalivedGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
			Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0"},
		}
		p := computePlan(g, []corev1.Service{svc}, nodes, nil)
		if len(p.instances) != 1 {
			t.Fatalf("%s: instances %+v", kw, p.instances)
		}
		g.Status.Nodes, g.Status.Instances = p.nodes, p.instances
		_, reached := p.instances[0].Settings.Verbatim[kw]
		if want := known && owner == v1alpha1.OwnerUser; reached != want {
			t.Errorf("%s (owner %v, known %v): in the status %v, want %v", kw, owner, known, reached, want)
			continue
		}

		cfg, ws, err := groupsource.Translate(g, "n1", nil, nil)
		if err != nil {
			t.Fatalf("%s: vrrpd rejects the operator's status: %v", kw, err)
		}
		if len(cfg.Instances) != 1 {
			t.Fatalf("%s: vrrpd runs %d instances", kw, len(cfg.Instances))
		}
		var named []string
		for _, w := range ws {
			if strings.Contains(w.Message, " "+kw+" ") {
				named = append(named, w.Message)
			}
		}
		switch a, ok := applied[kw]; {
		case !reached && len(ws) != 0:
			t.Errorf("%s: not in the status, yet vrrpd warns: %v", kw, ws)
		case !reached:
		case ok:
			seenApplied[kw] = true
			w := warns[kw]
			if (len(ws) != 0) != (w != "") || (w != "" && !strings.Contains(ws[0].Message, w)) || !a.check(cfg.Instances[0]) {
				t.Errorf("%s %q: not applied (warnings %v): %+v", kw, value, ws, cfg.Instances[0])
			}
		case len(named) != 1 || !strings.Contains(named[0], "not supported by vrrpd"):
			t.Errorf("%s: vrrpd neither applies it nor says it does not: warnings %v", kw, ws)
		}
	}
	for kw := range applied {
		if !seenApplied[kw] {
			t.Errorf("%s: vrrpd applies it, but the operator never passes it on", kw)
		}
	}
}

func node(name, addr string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}}},
	}
}

// TestMoveWaitCoversStartDelay: the operator's timed condition for a move (moveWait)
// counts the start delay vrrpd gives a shared router a rank, the two packages' constants
// being one contract.
func TestMoveWaitCoversStartDelay(t *testing.T) {
	if sharedStartDelayStep != groupsource.SharedStartDelayStep {
		t.Errorf("the operator waits %v a rank for a new shared router, vrrpd delays it %v", sharedStartDelayStep, groupsource.SharedStartDelayStep)
	}
	s := v1alpha1.InstanceSettings{Version: 3, AdvertInterval: metav1.Duration{Duration: 100 * time.Millisecond}}
	if w, mdi := moveWait(s), 3*100*time.Millisecond; w < mdi+groupsource.SharedStartDelayStep {
		t.Errorf("moveWait at 100 ms adverts is %v, less than Master_Down_Interval and one rank of start delay (%v)", w, mdi+groupsource.SharedStartDelayStep)
	}
}
