package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// One API server (kube-apiserver + etcd) for the whole package; each test
// works in namespaces of its own.
var (
	testEnv    *envtest.Environment
	testConfig *rest.Config
	testScheme *runtime.Scheme
	k8s        client.Client // direct client, no cache: what a user's kubectl sees
	nsCounter  atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if !assetsPresent(assets) {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "envtest binaries missing in KUBEBUILDER_ASSETS=%q (run make envtest)\n", assets)
			return 1
		}
		fmt.Fprintf(os.Stderr, "skipping controller tests: no kube-apiserver/etcd in KUBEBUILDER_ASSETS=%q\n", assets)
		return 0
	}
	testScheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() { _ = testEnv.Stop() }()
	cfg.QPS, cfg.Burst = 500, 1000
	testConfig = cfg
	k8s, err = client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: %v\n", err)
		return 1
	}
	return m.Run()
}

func assetsPresent(dir string) bool {
	if dir == "" {
		return false
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return false
		}
	}
	return true
}

// newNamespace creates a namespace unique to this test.
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}
