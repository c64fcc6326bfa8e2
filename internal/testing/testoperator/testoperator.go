// Package testoperator runs the operator's controllers in-process against a test API server
// (internal/testing/testenv), for the tests of the packages that work with it: vrrpd's Kubernetes
// mode and the end-to-end test. (The controller's own tests cannot use it: it imports them.)
package testoperator

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vrrp-operator/vrrp-operator/controller"
)

// Start runs the operator, watching only namespace ns (and the cluster's Nodes), with image
// as its --vrrpd-image, until the test ends.
func Start(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, ns, image string) {
	t.Helper()
	StartWith(t, cfg, scheme, ns, controller.Options{VrrpdImage: image})
}

// StartWith is Start with the operator's options.
func StartWith(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, ns string, opts controller.Options) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
		// Several operators start in one test binary, each registering its controllers.
		Controller: crconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
}
