package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
)

// The group's v3ChecksumAsV2 goes into every instance's settings, and vrrpd
// sends that checksum form; unset means the pseudo-header, as keepalived.
func TestGroupV3ChecksumAsV2(t *testing.T) {
	nodes := []corev1.Node{node("n1", "10.99.0.1"), node("n2", "10.99.0.2")}
	svc := corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec:       corev1.ServiceSpec{ExternalIPs: []string{"10.99.0.100"}},
	}
	for _, set := range []*bool{nil, new(false), new(true)} {
		g := &v1alpha1.KeepalivedGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
			Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0", V3ChecksumAsV2: set},
		}
		want := set != nil && *set
		p := computePlan(g, []corev1.Service{svc}, nodes, nil)
		if len(p.instances) != 1 || p.instances[0].Settings.V3ChecksumAsV2 != want {
			t.Fatalf("spec %v: instances %+v", set, p.instances)
		}
		g.Status.Nodes, g.Status.Instances = p.nodes, p.instances
		cfg, ws, err := groupsource.Translate(g, "n1", nil, nil)
		if err != nil || len(ws) != 0 || len(cfg.Instances) != 1 || cfg.Instances[0].V3ChecksumAsV2 != want {
			t.Errorf("spec %v: vrrpd runs %+v (%v, %v)", set, cfg, ws, err)
		}
	}
}
