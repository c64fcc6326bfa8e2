package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	lab := netlabtest.New(t, append([]string{"client"}, nodes...)...)
	startProxy(t, lab.Host("client"), proxyAddr, apiAddress(t))
	ns := newNamespace(t)
	startOperator(t, ns)
	spec.Interface = "eth0"
	spec.NodeSelector = map[string]string{nodeLabel: "true"}
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groupName}, Spec: spec}
	if err := env.Client.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	return lab, ns
}

// startNodeVrrpd runs vrrpd on lab host node with the DaemonSet's args (the kubelet's
// expansions done, and each old/new pair of replace applied to them), the group's
// ServiceAccount credentials in environ, and the suite's state directory and metrics address.
func startNodeVrrpd(t testing.TB, h *netlab.Host, args, environ []string, replace ...string) *vrrpd {
	t.Helper()
	return startVrrpd(t, h, environ, nodeArgs(args, h.Name, vrrpdtest.NewStateDir(t), replace...)...)
}
