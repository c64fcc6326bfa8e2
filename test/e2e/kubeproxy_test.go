package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// kubeProxyBinary is the kube-proxy hack/envtest-assets.sh builds next to envtest's
// kube-apiserver (make envtest). Without one, or without nft, the test skips, or fails
// under CI=true.
func kubeProxyBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-proxy")
	_, err := os.Stat(bin)
	if err == nil {
		// Its nftables mode runs the nft command (Debian's nftables).
		_, err = exec.LookPath("nft")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kube-proxy cannot run here (make envtest builds it; apt-get install nftables): %v", err)
		}
		t.Skipf("kube-proxy cannot run here (make envtest builds it; apt-get install nftables): %v", err)
	}
	return bin
}

// startKubeProxy runs the real kube-proxy on lab node h, in nftables mode, as the node
// of its name, against the API server through the lab's proxy with the suite's admin
// credentials. In nftables mode it serves each externalTrafficPolicy: Local Service's
// health check on the node's primary address (the Node's InternalIP) and the Service's
// healthCheckNodePort, from the EndpointSlices whose endpoints name the node. Its
// conntrack settings are left alone: the host's, not the namespace's. extra are further
// flags (--nodeport-addresses=0.0.0.0/0 serves the checks on every address, loopback
// included, as iptables mode does by default).
func startKubeProxy(t testing.TB, h *netlab.Host, extra ...string) *vrrpdtest.Proc {
	t.Helper()
	bin := kubeProxyBinary(t)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{
		Server:                   "https://" + proxyAddr,
		TLSServerName:            servingName,
		CertificateAuthorityData: env.Config.CAData,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: env.Config.CertData,
		ClientKeyData:         env.Config.KeyData,
		Token:                 env.Config.BearerToken,
	}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "admin"}
	kc.CurrentContext = "lab"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return vrrpdtest.Start(t, h, "kube-proxy@"+h.Name, nil, bin, append([]string{
		"--kubeconfig", path,
		"--hostname-override", h.Name,
		"--proxy-mode", "nftables",
		"--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0",
		"--conntrack-tcp-timeout-close-wait", "0",
		"--metrics-bind-address", "127.0.0.1:10249",
		"--healthz-bind-address", "127.0.0.1:10256",
		"--v", "2"}, extra...)...)
}

// setLocalEndpoints makes the Service's one EndpointSlice hold ready endpoints on the
// named nodes, one each, as the EndpointSlice controller (which envtest does not run)
// would for pods there; none for no endpoint anywhere.
func setLocalEndpoints(t testing.TB, ns, svc string, nodes ...string) {
	t.Helper()
	ctx := context.Background()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-lab",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "e2e.vrrp-operator.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for i, n := range nodes {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.0.%d", i+10)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(n),
		})
	}
	var cur discoveryv1.EndpointSlice
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: slice.Name}, &cur)
	if err != nil {
		if err := env.Client.Create(ctx, slice); err != nil {
			t.Fatal(err)
		}
		return
	}
	cur.Endpoints = slice.Endpoints
	if err := env.Client.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
}

// waitKubeProxyHealth waits until kube-proxy on h answers the Service's health check on
// the node's address with the status that says whether it has a local endpoint.
func waitKubeProxyHealth(t testing.TB, h *netlab.Host, port int32, local bool) {
	t.Helper()
	want := http.StatusServiceUnavailable
	if local {
		want = http.StatusOK
	}
	addr := netip.AddrPortFrom(h.Addr4, uint16(port)).String()
	var got int
	vrrpdtest.WaitFor(t, 30*time.Second, fmt.Sprintf("kube-proxy on %s answering %d on %s", h.Name, want, addr), func() bool {
		got = 0
		// Dialled on h.Do's own thread, so that the socket is in h's namespace (an
		// http.Transport would dial from another goroutine, in the test's).
		_ = h.Do(func() error {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(time.Second))
			if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n")); err != nil {
				return err
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return err
			}
			resp.Body.Close()
			got = resp.StatusCode
			return nil
		})
		return got == want
	})
}
