package install

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/controller"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testoperator"
)

// The README's worked example sits between these markers.
const (
	exampleBegin = "<!-- example:begin -->"
	exampleEnd   = "<!-- example:end -->"
)

// The nodes the example labels: what a user's cluster has before they start.
var exampleNodes = map[string]string{"worker-1": "10.99.0.11", "worker-2": "10.99.0.12"}

// TestREADMEExample runs the README's worked example as written, after the first install
// block, on a cluster of its own with the operator running: every kubectl command, in
// order; the curl at the end needs the cluster's network and real nodes, so the test checks
// instead that the Service got the address the README curls, and that kubectl showed it.
func TestREADMEExample(t *testing.T) {
	testenv.Require(t, env)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, exampleBegin), strings.Index(readme, exampleEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md: no %s ... %s section", exampleBegin, exampleEnd)
	}
	example := readme[i+len(exampleBegin) : j]
	blocks := shBlock.FindAllStringSubmatch(example, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md: no ```sh block in the worked example")
	}
	var kubectl []string
	var vip netip.Addr
	curl := regexp.MustCompile(`^curl http://([0-9.]+)/$`)
	for _, bl := range blocks {
		for _, line := range commands(bl[1]) {
			if m := curl.FindStringSubmatch(line); m != nil {
				if vip, err = netip.ParseAddr(m[1]); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				continue
			}
			kubectl = append(kubectl, line)
		}
	}
	if !vip.IsValid() {
		t.Fatal("the worked example curls no VIP")
	}
	section, _ := installSection(t)
	install := shBlock.FindStringSubmatch(section)
	if install == nil {
		t.Fatal("no install block")
	}

	fresh, cfg := freshCluster(t)
	ctx := context.Background()
	for name, addr := range exampleNodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := fresh.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}}
		if err := fresh.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	runCommands(t, cfg, commands(install[1]))
	// The Deployment the install applied cannot run here: the operator runs in the test,
	// watching every namespace as the deployed one does.
	testoperator.StartWith(t, fresh.Config, fresh.Scheme, "", controller.Options{VrrpdImage: "vrrpd:test"})
	outs := runCommands(t, cfg, kubectl)

	var svc corev1.Service
	poll.Until(t, 30*time.Second, func() error {
		if err := fresh.Client.Get(ctx, types.NamespacedName{Namespace: "demo", Name: "web"}, &svc); err != nil {
			return err
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			return errors.New("the Service has no address")
		}
		return nil
	})
	if got := svc.Status.LoadBalancer.Ingress[0].IP; got != vip.String() {
		t.Errorf("the Service got %s, the README curls %s", got, vip)
	}
	shown := false
	for k, line := range kubectl {
		if strings.HasPrefix(line, "kubectl get service") && strings.Contains(outs[k], vip.String()) {
			shown = true
		}
	}
	if !shown {
		t.Errorf("no `kubectl get service` of the example showed %s", vip)
	}
}
