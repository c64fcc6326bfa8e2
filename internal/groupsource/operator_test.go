package groupsource

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testoperator"
)

// TestWatchWithOperator closes the loop with the real operator: it computes
// a group's status from Nodes and Services, and each node's watcher turns
// it into configurations that agree with each other: one VRID per instance
// everywhere, one clear master per instance, the spread VIPs of one Service
// on different masters, and each node's unicast peers being the others.
// The group is routerSharing: PerService, since the test names each Service's
// instances; TestSharedStatusContract and TestStagedStatusContract (controller)
// check the same agreement for shared routers.
func TestWatchWithOperator(t *testing.T) {
	needAPI(t)
	ctx := context.Background()
	ns := newNamespace(t, "operator")
	startOperator(t, ns)

	// Three member nodes and one that the selector leaves out.
	var nodes []string
	for i := range 4 {
		name := fmt.Sprintf("gs-%d-%s-n%d", os.Getpid(), ns, i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"lb": ns}}}
		if i == 3 {
			n.Labels = nil
		}
		if err := k8s.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
		n.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.99.0.%d", i+1)},
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("fd00:99::%d", i+1)},
		}
		if err := k8s.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, name)
	}
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", NodeSelector: map[string]string{"lb": ns}, UnicastEnabled: true,
			RouterSharing: v1alpha1.RouterSharingPerService},
	}
	if err := k8s.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []*corev1.Service{
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dual", Annotations: map[string]string{v1alpha1.AnnotationGroup: ns + "/edge"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{"10.99.0.100", "fd00:99::100"}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spread", Annotations: map[string]string{
				v1alpha1.AnnotationGroup: ns + "/edge", v1alpha1.AnnotationSpreadVIPs: "true",
				v1alpha1.AnnotationVerbatimConfig: `{"garp_master_delay": "1", "track_src_ip": ""}`,
			}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{"10.99.0.101", "10.99.0.102", "10.99.0.103"}},
		},
	} {
		if err := k8s.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}

	// Each node's watcher, until its configuration has every instance.
	want := []string{ns + "/dual/ipv4", ns + "/dual/ipv6", ns + "/spread/10.99.0.101", ns + "/spread/10.99.0.102", ns + "/spread/10.99.0.103"}
	cfgs := map[string]*config.Config{}
	var warnings []config.Warning
	for _, node := range nodes {
		w := startWatch(t, testConfig, Options{Group: types.NamespacedName{Namespace: ns, Name: "edge"}, Node: node})
		for {
			u := w.next(t)
			if node == nodes[3] {
				if len(u.Config.Instances) != 0 {
					t.Fatalf("non-member %s got instances %v", node, names(u.Config))
				}
				break
			}
			if slices.Equal(names(u.Config), want) {
				cfgs[node] = u.Config
				warnings = u.Warnings
				break
			}
		}
	}

	masters := map[string]string{}
	for i, name := range want {
		var vrid uint8
		best, bestNode, ties := uint8(0), "", 0
		for j, node := range nodes[:3] {
			in, _ := cfgs[node].Instance(name)
			if j == 0 {
				vrid = in.VRID
			} else if in.VRID != vrid {
				t.Errorf("%s: VRID %d on %s, %d on %s", name, in.VRID, node, vrid, nodes[0])
			}
			switch {
			case in.Priority > best:
				best, bestNode, ties = in.Priority, node, 0
			case in.Priority == best:
				ties++
			}
			// Unicast peers: the other two members, of the instance's family.
			var peers []netip.Addr
			for k := range 3 {
				if k != j {
					peers = append(peers, memberAddr(k, in.Family))
				}
			}
			if in.UnicastSrc != memberAddr(j, in.Family) || !slices.Equal(in.UnicastPeers, peers) {
				t.Errorf("%s on %s: source %v peers %v, want %v %v", name, node, in.UnicastSrc, in.UnicastPeers, memberAddr(j, in.Family), peers)
			}
			if i >= 2 && in.GARP.MasterDelay.Seconds() != 1 {
				t.Errorf("%s on %s: verbatim garp_master_delay not applied: %v", name, node, in.GARP.MasterDelay)
			}
		}
		if ties != 0 {
			t.Errorf("%s: %d nodes tie at the top priority %d", name, ties+1, best)
		}
		masters[name] = bestNode
	}
	if masters[want[0]] != masters[want[1]] {
		t.Errorf("the two families of one Service have different masters: %v", masters)
	}
	spread := []string{masters[want[2]], masters[want[3]], masters[want[4]]}
	slices.Sort(spread)
	if len(slices.Compact(spread)) != 3 {
		t.Errorf("spread VIPs share a master: %v", masters)
	}
	var sawTrack bool
	for _, w := range warnings {
		sawTrack = sawTrack || w.Message == "("+ns+"/spread/10.99.0.101) verbatim track_src_ip is not supported by vrrpd; ignored"
	}
	if !sawTrack {
		t.Errorf("no warning about the unsupported verbatim keyword: %v", warnings)
	}
}

// memberAddr is the address the test gave member k.
func memberAddr(k int, f config.Family) netip.Addr {
	if f == config.IPv6 {
		return netip.MustParseAddr(fmt.Sprintf("fd00:99::%d", k+1))
	}
	return netip.MustParseAddr(fmt.Sprintf("10.99.0.%d", k+1))
}

// startOperator runs the operator's controllers, watching only ns.
func startOperator(t *testing.T, ns string) {
	t.Helper()
	testoperator.Start(t, testConfig, k8s.Scheme(), ns, "example.com/vrrpd:test")
}
