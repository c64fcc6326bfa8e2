package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// FuzzServiceAnnotations: no annotation value, however malformed, panics
// the parsing or the instance computation (the original panicked on a
// group annotation without a slash: its issue 132).
func FuzzServiceAnnotations(f *testing.F) {
	f.Add("ns/name", "true", `{"track_src_ip": ""}`, "10.99.0.1")
	f.Add("nogroup", "yes", `{not json`, "fd00:99::1")
	f.Add("/", "", `[]`, "")
	f.Add("a/b/c", "true", `{"priority": "1"}`, "10.99.0.1,10.99.0.1")
	f.Fuzz(func(t *testing.T, group, spread, verbatim, ip string) {
		_, _ = parseGroupRef(group)
		_, _ = parseVerbatim(verbatim)
		svc := corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Annotations: map[string]string{
				v1alpha1.AnnotationGroup:          group,
				v1alpha1.AnnotationSpreadVIPs:     spread,
				v1alpha1.AnnotationVerbatimConfig: verbatim,
			}},
			Spec: corev1.ServiceSpec{ExternalIPs: []string{ip}},
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		_, _, _ = requested(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationLoadBalancerIPs: ip}}})
		g := &v1alpha1.KeepalivedGroup{Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0"}}
		nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "n2"}}}
		p := computePlan(g, []corev1.Service{svc}, nodes, nil)
		for _, in := range p.instances {
			if in.VRID < 1 || in.VRID > 255 || len(in.VIPs) == 0 {
				t.Fatalf("bad instance %+v", in)
			}
		}
	})
}

// BenchmarkComputePlan255x100: the pure part of a group reconcile at the
// status size limit (255 instances, 100 nodes).
func BenchmarkComputePlan255x100(b *testing.B) {
	g, svcs, nodes := bigGroup(255, 100)
	b.ReportAllocs()
	for b.Loop() {
		p := computePlan(g, svcs, nodes, nil)
		if len(p.instances) != 255 {
			b.Fatal(len(p.instances))
		}
	}
}
