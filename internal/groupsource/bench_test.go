package groupsource

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/placement"
)

// bigGroup is the largest group the status is sized for: 255 instances over
// 100 nodes, every third instance dual-stack, unicast on.
func bigGroup() *v1alpha1.KeepalivedGroup {
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lb", Name: "big"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0"},
	}
	var nodeNames []string
	for i := range 100 {
		n := fmt.Sprintf("node-%03d", i)
		nodeNames = append(nodeNames, n)
		g.Status.Nodes = append(g.Status.Nodes, v1alpha1.GroupNode{Name: n, Addresses: []string{
			netip.AddrFrom4([4]byte{10, 99, 0, byte(i + 1)}).String(), fmt.Sprintf("fd00:99::%x", i+1)}})
	}
	for i := range 255 {
		key := fmt.Sprintf("default/svc-%03d", i)
		vips := []string{netip.AddrFrom4([4]byte{10, 99, 1, byte(i)}).String()}
		if i%3 == 0 {
			vips = append(vips, fmt.Sprintf("fd00:99::1:%x", i))
		}
		g.Status.Instances = append(g.Status.Instances, v1alpha1.Instance{
			Key: key, VRID: i + 1, VIPs: vips,
			Settings:   v1alpha1.InstanceSettings{Version: 3, AdvertInterval: metav1.Duration{Duration: time.Second}, Preempt: true, Unicast: true, Verbatim: map[string]string{"garp_master_delay": "1"}},
			Priorities: v1alpha1.EncodePriorities(placement.Priorities(key, nodeNames)),
		})
	}
	return g
}

// BenchmarkTranslate: one node's configuration from the largest group.
func BenchmarkTranslate(b *testing.B) {
	g := bigGroup()
	b.ReportAllocs()
	for b.Loop() {
		cfg, _, err := Translate(g, "node-042", nil, nil)
		if err != nil || len(cfg.Instances) != 340 {
			b.Fatalf("%v, %d instances", err, len(cfg.Instances))
		}
	}
}

// BenchmarkWatchLatency: from a status update accepted by the API server to
// the new configuration in OnChange (envtest on loopback, the group of
// testGroup).
func BenchmarkWatchLatency(b *testing.B) {
	needAPI(b)
	ns := newNamespace(b, "bench")
	createGroup(b, ns, "edge", testGroup())
	w := startWatch(b, testConfig, Options{Group: types.NamespacedName{Namespace: ns, Name: "edge"}, Node: "a"})
	w.next(b)
	var total time.Duration
	n := 0
	for b.Loop() {
		p := uint8(1 + n%250)
		start := time.Now()
		updateStatus(b, ns, "edge", func(s *v1alpha1.KeepalivedGroupStatus) {
			s.Instances[0].Priorities = v1alpha1.EncodePriorities([]uint8{p, 253, 252})
		})
		u := w.next(b)
		total += time.Since(start)
		n++
		if got, _ := u.Config.Instance("default/dual/ipv4"); got.Priority != p {
			b.Fatalf("priority %d, want %d", got.Priority, p)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(n)/1000, "ms/update")
}
