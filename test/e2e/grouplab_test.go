package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// groupLab is a lab (client, h1, h2) with the proxy to the API server, the operator
// watching a namespace of its own, and a group there on the lab's eth0 and nodes h1 and h2,
// its other settings from spec.
func groupLab(t testing.TB, spec v1alpha1.KeepalivedGroupSpec) (*netlab.Lab, string) {
	t.Helper()
	need(t)
	vrrpdBinary(t)
	createNodes(t)
	return groupLabHosts(t, spec, "h1", "h2")
}

// groupLabHosts is groupLab's lab with the named node hosts, whose Nodes the caller made.
func groupLabHosts(t testing.TB, spec v1alpha1.KeepalivedGroupSpec, nodes ...string) (*netlab.Lab, string) {
	t.Helper()
	return buildGroupLab(t, spec, nodeLabel, false, nodes...)
}

// groupLabNodes is groupLabHosts' lab whose group selects the Nodes labelled label, one
// per node host, which it makes (labNodes) before the operator starts.
func groupLabNodes(t testing.TB, spec v1alpha1.KeepalivedGroupSpec, label string, nodes ...string) (*netlab.Lab, string) {
	t.Helper()
	return buildGroupLab(t, spec, label, true, nodes...)
}

func buildGroupLab(t testing.TB, spec v1alpha1.KeepalivedGroupSpec, label string, makeNodes bool, nodes ...string) (*netlab.Lab, string) {
	t.Helper()
	lab := netlabtest.New(t, append([]string{"client"}, nodes...)...)
	startProxy(t, lab.Host("client"), proxyAddr, apiAddress(t))
	ns := newNamespace(t)
	if makeNodes {
		hosts := make([]*netlab.Host, len(nodes))
		for i, n := range nodes {
			hosts[i] = lab.Host(n)
		}
		labNodes(t, label, hosts...)
	}
	startOperator(t, ns)
	spec.Interface = "eth0"
	spec.NodeSelector = map[string]string{label: "true"}
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groupName}, Spec: spec}
	if err := env.Client.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	return lab, ns
}

// labNodes makes a Node for each lab host, of its name, labelled label=true, with the
// host's IPv4 address as its InternalIP, as kubelets would; they go when the test ends.
func labNodes(t testing.TB, label string, hosts ...*netlab.Host) {
	t.Helper()
	ctx := context.Background()
	for _, h := range hosts {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.Name, Labels: map[string]string{label: "true"}}}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatalf("create node %s: %v", h.Name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: h.Addr4.String()}}
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatalf("node %s status: %v", h.Name, err)
		}
	}
}

// startNodeVrrpd runs vrrpd on lab host node with the DaemonSet's args (the kubelet's
// expansions done, and each old/new pair of replace applied to them), the group's
// ServiceAccount credentials in environ, and the suite's state directory and metrics address.
func startNodeVrrpd(t testing.TB, h *netlab.Host, args, environ []string, replace ...string) *vrrpd {
	t.Helper()
	return startVrrpd(t, h, environ, nodeArgs(args, h.Name, vrrpdtest.NewStateDir(t), replace...)...)
}

// startGroupDaemons runs the group's vrrpd on each host as its DaemonSet's pods would
// (startNodeVrrpd, with the ServiceAccount's credentials), by host name.
func startGroupDaemons(t testing.TB, ns string, hosts ...*netlab.Host) map[string]*vrrpd {
	t.Helper()
	args := daemonSetArgs(t, ns)
	environ := []string{"KUBECONFIG=" + vrrpdKubeconfig(t, ns)}
	daemons := map[string]*vrrpd{}
	for _, h := range hosts {
		daemons[h.Name] = startNodeVrrpd(t, h, args, environ)
	}
	return daemons
}

// capacityServices gives the group of ns its 255 instances, every router ID: five spread
// Services of 51 IPv6 VIPs (the lab's IPv4 /24 holds fewer than 255, and envtest's Service
// range is small), one instance per VIP (the group must be routerSharing: PerService), and
// waits for them in the group's status.
func capacityServices(t testing.TB, ns string) []netip.Addr {
	t.Helper()
	const n = 255
	var vips []netip.Addr
	for i := 1; i <= n; i++ {
		vips = append(vips, netip.MustParseAddr(fmt.Sprintf("fd00:99::1:%x", i)))
	}
	for k := range 5 {
		newService(t, ns, fmt.Sprintf("s%d", k),
			map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName, v1alpha1.AnnotationSpreadVIPs: "true"},
			vips[k*51:(k+1)*51]...)
	}
	vrrpdtest.WaitFor(t, 2*time.Minute, "255 instances in the group's status", func() bool {
		var got v1alpha1.KeepalivedGroup
		err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: groupName}, &got)
		return err == nil && len(got.Status.Instances) == n
	})
	return vips
}
