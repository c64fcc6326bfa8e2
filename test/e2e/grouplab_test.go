package e2e

import (
	"context"
	"strings"
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
func groupLab(t *testing.T, spec v1alpha1.KeepalivedGroupSpec) (*netlab.Lab, string) {
	t.Helper()
	need(t)
	vrrpdBinary(t)
	createNodes(t)
	lab := netlabtest.New(t, "client", "h1", "h2")
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
func startNodeVrrpd(t *testing.T, h *netlab.Host, args, environ []string, replace ...string) *vrrpd {
	t.Helper()
	// The lab host's loopback stands for the node's status.hostIP, where the suite reads
	// /status.
	expand := strings.NewReplacer(append([]string{"$(NODE_NAME)", h.Name, "$(HOST_IP)", "127.0.0.1"}, replace...)...)
	a := make([]string, 0, len(args)+6)
	for _, s := range args {
		a = append(a, expand.Replace(s))
	}
	a = append(a, "--state-dir", vrrpdtest.NewStateDir(t), "--metrics-address", vrrpdtest.MetricsAddress, "--log-level", "debug")
	return startVrrpd(t, h, environ, a...)
}
