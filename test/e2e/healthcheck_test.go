package e2e

import (
	"context"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// TestKubernetesModeExternalTrafficPolicyLocal: a LoadBalancer Service with
// externalTrafficPolicy: Local has its VIP on the node with a local ready endpoint, even
// against placement, and the VIP follows the endpoint within interval × fall plus one
// failover. With no endpoint anywhere the VIP stays where it is.
//
// The health endpoint is the real kube-proxy (built by make envtest), in nftables mode on
// each lab node, fed an EndpointSlice whose endpoints name the nodes (envtest runs no
// EndpointSlice controller). In that mode kube-proxy serves the check on the node's own
// address only, not on loopback, so a vrrpd probing 127.0.0.1 would fail here.
func TestKubernetesModeExternalTrafficPolicyLocal(t *testing.T) {
	ctx := context.Background()
	lab, ns := groupLab(t, v1alpha1.KeepalivedGroupSpec{VRRPVersion: 3, AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond}})
	logGroupOnFailure(t, ns)
	hosts := map[string]*netlab.Host{"h1": lab.Host("h1"), "h2": lab.Host("h2")}
	vip := netip.MustParseAddr("10.99.0.100")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr.To(false),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			ExternalIPs:           []string{vip.String()},
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	port := svc.Spec.HealthCheckNodePort
	if port == 0 {
		t.Fatal("the API server allocated no healthCheckNodePort")
	}
	var first string // the node placement ranks first
	vrrpdtest.WaitFor(t, 20*time.Second, "the instance with kube-proxy's health check", func() bool {
		var g v1alpha1.KeepalivedGroup
		if env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupName}, &g) != nil || len(g.Status.Instances) != 1 {
			return false
		}
		hc := g.Status.Instances[0].Settings.HealthCheck
		prios, err := v1alpha1.DecodePriorities(g.Status.Instances[0].Priorities, len(g.Status.Nodes))
		if hc == nil || hc.NodePort != port || err != nil || len(prios) != 2 {
			return false
		}
		first = g.Status.Nodes[0].Name
		if prios[1] > prios[0] {
			first = g.Status.Nodes[1].Name
		}
		return true
	})

	// kube-proxy on each node; the endpoint on the node placement ranks second, so that
	// only the check can put the VIP there.
	second := otherNode(first)
	setLocalEndpoints(t, ns, "web", second)
	for _, h := range hosts {
		startKubeProxy(t, h)
	}
	waitKubeProxyHealth(t, hosts[second], port, true)
	waitKubeProxyHealth(t, hosts[first], port, false)

	args := daemonSetArgs(t, ns)
	environ := []string{"KUBECONFIG=" + vrrpdKubeconfig(t, ns)}
	daemons := map[string]*vrrpd{}
	for name, h := range hosts {
		daemons[name] = startNodeVrrpd(t, h, args, environ)
	}
	hostList := []*netlab.Host{hosts["h1"], hosts["h2"]}
	waitHoldersSettle(t, 15*time.Second, time.Second, "the VIP on the node with the endpoint, against placement",
		map[netip.Addr]string{vip: second}, hostList...)
	// The placement's first node, failing its check, runs below the second, passing it.
	st, err := daemons[first].status()
	if err != nil {
		t.Fatal(err)
	}
	st2, err := daemons[second].status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 1 || len(st2.Instances) != 1 || len(st.Instances[0].TrackScripts) != 1 ||
		st.Instances[0].TrackScripts[0].Script != groupsource.HealthCheckPrefix+ns+"/web" ||
		st.Instances[0].Priority >= st2.Instances[0].Priority || st.Instances[0].BasePriority <= st2.Instances[0].BasePriority {
		t.Fatalf("%s (no endpoint) status %+v, %s (endpoint) status %+v: want the first below the second by the kube-proxy check",
			first, st.Instances, second, st2.Instances)
	}
	t.Logf("%s (placement's first, no endpoint): priority %d of %d; %s: %d", first,
		st.Instances[0].Priority, st.Instances[0].BasePriority, second, st2.Instances[0].Priority)

	// The endpoint moves: the VIP follows within interval × fall + one failover
	// (3 adverts + skew), with half a second for a loaded machine.
	bound := groupsource.HealthCheckInterval*groupsource.HealthCheckFall + 400*time.Millisecond + 500*time.Millisecond
	move := func(to string) {
		t.Helper()
		setLocalEndpoints(t, ns, "web", to, to)
		start := time.Now()
		want := map[netip.Addr]string{vip: to}
		vrrpdtest.WaitFor(t, 10*time.Second, "the VIP follows the endpoint to "+to, func() bool {
			ok, _ := holdersMatch(t, want, hostList...)
			return ok
		})
		took := time.Since(start)
		waitHoldersSettle(t, time.Second, 500*time.Millisecond, "the VIP stays on "+to, want, hostList...)
		t.Logf("endpoint moved to %s: VIP followed in %v (bound %v)", to, took.Round(time.Millisecond), bound)
		if took > bound {
			t.Errorf("the VIP followed the endpoint to %s in %v, want within %v", to, took, bound)
		}
	}
	move(first)
	move(second)

	// No endpoint anywhere: every node fails its check, keeping the placement's order
	// below the passing priorities, so the VIP goes to the placement's first node (not
	// nowhere, as FAULT would do) and stays.
	setLocalEndpoints(t, ns, "web")
	vrrpdtest.WaitFor(t, 5*time.Second, "both nodes failing the check", func() bool {
		for _, d := range daemons {
			st, err := d.status()
			if err != nil || len(st.Instances) != 1 || len(st.Instances[0].TrackScripts) != 1 ||
				st.Instances[0].TrackScripts[0].Status != "FAILED" || st.Instances[0].Priority >= st.Instances[0].BasePriority {
				return false
			}
		}
		return true
	})
	waitHoldersSettle(t, 5*time.Second, 3*time.Second, "the VIP on the placement's first node with no endpoint anywhere",
		map[netip.Addr]string{vip: first}, hostList...)
}
