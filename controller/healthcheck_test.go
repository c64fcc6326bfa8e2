package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// TestHealthCheckContract: an externalTrafficPolicy: Local Service's healthCheckNodePort
// becomes its instance's healthCheck in the status, and vrrpd on each node turns that into
// an HTTP check of kube-proxy on the node's own address, tracked with a weight that puts
// every failing node below every passing one, the failing ones distinct (no two take over
// after the same Skew_Time) and the lowest at 1. The policy or the port changing changes the check; nothing
// in the Service's annotations can add or redirect one.
func TestHealthCheckContract(t *testing.T) {
	nodes := []corev1.Node{node("n1", "10.99.0.1"), node("n2", "10.99.0.2"), node("n3", "10.99.0.3")}
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0"},
	}
	verb, _ := json.Marshal(map[string]string{"track_script": "x", "track_check": "x", "vrrpd_http_check": "x"})
	svc := func(policy corev1.ServiceExternalTrafficPolicy, port int32) corev1.Service {
		return corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: map[string]string{
				v1alpha1.AnnotationVerbatimConfig: string(verb),
			}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalIPs: []string{"10.99.0.100"},
				ExternalTrafficPolicy: policy, HealthCheckNodePort: port},
		}
	}
	for _, tc := range []struct {
		name string
		svc  corev1.Service
		want *v1alpha1.HealthCheck
	}{
		{"local", svc(corev1.ServiceExternalTrafficPolicyLocal, 31234), &v1alpha1.HealthCheck{NodePort: 31234}},
		{"local, port changed", svc(corev1.ServiceExternalTrafficPolicyLocal, 32000), &v1alpha1.HealthCheck{NodePort: 32000}},
		{"cluster", svc(corev1.ServiceExternalTrafficPolicyCluster, 0), nil},
		{"local without a port (externalIPs only)", svc(corev1.ServiceExternalTrafficPolicyLocal, 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := computePlan(g, []corev1.Service{tc.svc}, nodes, nil)
			if len(p.instances) != 1 {
				t.Fatalf("instances %+v", p.instances)
			}
			got := p.instances[0].Settings.HealthCheck
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("status healthCheck %+v, want %+v", got, tc.want)
			}
			if len(p.instances[0].Settings.Verbatim) != 0 {
				t.Fatalf("verbatim %v reached the status", p.instances[0].Settings.Verbatim)
			}
			gs := g.DeepCopy()
			gs.Status.Nodes, gs.Status.Instances = p.nodes, p.instances
			var passing, failing []int
			for _, n := range []struct{ name, addr string }{{"n1", "10.99.0.1"}, {"n2", "10.99.0.2"}, {"n3", "10.99.0.3"}} {
				cfg, _, err := groupsource.Translate(gs, n.name, nil, nil)
				if err != nil || len(cfg.Instances) != 1 {
					t.Fatalf("%s: translate: %v %+v", n.name, err, cfg)
				}
				tracks := cfg.Instances[0].TrackScripts
				if tc.want == nil {
					if len(tracks) != 0 || len(cfg.Scripts) != 0 {
						t.Fatalf("%s: tracks %+v scripts %+v without a check in the status", n.name, tracks, cfg.Scripts)
					}
					continue
				}
				name := groupsource.HealthCheckPrefix + "ns/web"
				wantCheck := track.Check{Kind: track.CheckHTTP, StatusCode: 200,
					URL: "http://" + n.addr + ":" + itoa(tc.want.NodePort) + "/"}
				if len(tracks) != 1 || tracks[0].Script != name {
					t.Fatalf("%s: tracks %+v", n.name, tracks)
				}
				if len(cfg.Scripts) != 1 || cfg.Scripts[0].Check != wantCheck || len(cfg.Scripts[0].Command) != 0 {
					t.Fatalf("%s: scripts %+v, want the check %+v and no process", n.name, cfg.Scripts, wantCheck)
				}
				prio := cfg.Instances[0].Priority
				passing = append(passing, int(track.Effective(prio, track.Contribution(tracks[0].Weight, false, track.StatusGood))))
				failing = append(failing, int(track.Effective(prio, track.Contribution(tracks[0].Weight, false, track.StatusFailed))))
			}
			if tc.want == nil {
				return
			}
			t.Logf("priorities passing %v, failing %v", passing, failing)
			if slices.Min(failing) != 1 {
				t.Errorf("lowest failing priority %d, want 1", slices.Min(failing))
			}
			if slices.Max(failing) >= slices.Min(passing) {
				t.Errorf("a failing node (%v) is not below every passing one (%v)", failing, passing)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(failing)))) != len(failing) {
				t.Errorf("failing nodes share a priority: %v", failing)
			}
			for i := range failing {
				for j := range failing {
					if (passing[i] > passing[j]) != (failing[i] > failing[j]) {
						t.Errorf("failing changes the order: passing %v, failing %v", passing, failing)
					}
				}
			}
		})
	}
}

func itoa(p int32) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// TestHealthCheckFollowsService: against a real API server, which allocates the
// healthCheckNodePort, the group status follows the Service's policy and port.
func TestHealthCheckFollowsService(t *testing.T) {
	ns := newNamespace(t, "hc")
	newGroup(t, ns, "g", nil)
	svc := newService(t, ns, "web", ns+"/g", func(s *corev1.Service) {
		asLoadBalancer(s)
		s.Spec.ExternalIPs = []string{"10.99.0.71"}
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	})
	startManager(t, ns)
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.HealthCheckNodePort == 0 {
		t.Fatal("the API server allocated no healthCheckNodePort")
	}
	want := func(port int32) func() error {
		return func() error {
			g := getGroup(t, ns, "g")
			if len(g.Status.Instances) != 1 {
				return fmt.Errorf("instances %+v", g.Status.Instances)
			}
			got := g.Status.Instances[0].Settings.HealthCheck
			switch {
			case port == 0 && got != nil, port != 0 && (got == nil || got.NodePort != port):
				return fmt.Errorf("healthCheck %+v, want port %d", got, port)
			}
			return nil
		}
	}
	eventually(t, 20*time.Second, want(svc.Spec.HealthCheckNodePort))

	update := func(mutate func(*corev1.Service)) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
				return err
			}
			mutate(svc)
			return k8s.Update(ctx, svc)
		}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		s.Spec.HealthCheckNodePort = 0
	})
	eventually(t, 20*time.Second, want(0))
	update(func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 30999
	})
	eventually(t, 20*time.Second, want(30999))
}
