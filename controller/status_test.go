package controller

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// bigGroup builds realistic inputs: a group, nServices single-VIP
// LoadBalancer Services with production-length names, and nNodes dual-stack
// Nodes named like cloud hosts.
func bigGroup(nServices, nNodes int) (*v1alpha1.KeepalivedGroup, []corev1.Service, []corev1.Node) {
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "keepalived-operator", Name: "keepalivedgroup-workers", Generation: 7},
		Spec: v1alpha1.KeepalivedGroupSpec{
			Interface:    "ens3",
			PasswordAuth: &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "keepalived-password"}},
		},
	}
	var svcs []corev1.Service
	for i := range nServices {
		s := corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   fmt.Sprintf("team-%02d-production", i%40),
				Name:        fmt.Sprintf("frontend-gateway-%03d", i),
				Annotations: map[string]string{v1alpha1.AnnotationGroup: "keepalived-operator/keepalivedgroup-workers"},
			},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("10.99.%d.%d", i/250, 1+i%250)}}
		svcs = append(svcs, s)
	}
	var nodes []corev1.Node
	for i := range nNodes {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ip-10-99-%d-%d.eu-west-1.compute.internal", i/250, i%250)}}
		n.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.99.0.%d", i+1)},
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("fd00:99::%x", i+1)},
		}
		nodes = append(nodes, n)
	}
	return g, svcs, nodes
}

func statusJSON(t testing.TB, g *v1alpha1.KeepalivedGroup, svcs []corev1.Service, nodes []corev1.Node) []byte {
	t.Helper()
	p := computePlan(g, svcs, nodes, nil)
	st := buildStatus(g, p, imageChoice{image: testImage}, false, nil)
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.Unix(1700000000, 0)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStatusSize: 255 instances over 100 nodes stay under 128 KiB of
// status, thanks to the one-byte-per-node priorities. routerSharing: PerService,
// the most instances a segment has (shared, these 255 Services on 100 nodes are 61
// hash-bucket routers).
func TestStatusSize(t *testing.T) {
	g, svcs, nodes := bigGroup(255, 100)
	g.Spec.RouterSharing = v1alpha1.RouterSharingPerService
	b := statusJSON(t, g, svcs, nodes)
	t.Logf("status of 255 instances x 100 nodes: %d bytes (%.1f KiB)", len(b), float64(len(b))/1024)
	if len(b) >= 128*1024 {
		t.Fatalf("status is %d bytes, over 128 KiB", len(b))
	}
	var st v1alpha1.KeepalivedGroupStatus
	if err := json.Unmarshal(b, &st); err != nil || len(st.Instances) != 255 || len(st.Nodes) != 100 {
		t.Fatalf("round trip: %v, %d instances, %d nodes", err, len(st.Instances), len(st.Nodes))
	}
}

// TestStatusDeterministic: the same inputs in any order give the same bytes.
func TestStatusDeterministic(t *testing.T) {
	g, svcs, nodes := bigGroup(120, 30)
	// A spreadvips Service with several VIPs, to cover sibling placement.
	svcs[0].Annotations[v1alpha1.AnnotationSpreadVIPs] = "true"
	svcs[0].Spec.ExternalIPs = []string{"10.99.9.3", "10.99.9.1", "10.99.9.2"}
	want := statusJSON(t, g, svcs, nodes)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		rng.Shuffle(len(svcs), func(i, j int) { svcs[i], svcs[j] = svcs[j], svcs[i] })
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		if got := statusJSON(t, g, svcs, nodes); string(got) != string(want) {
			t.Fatalf("status differs for shuffled inputs")
		}
	}
}
