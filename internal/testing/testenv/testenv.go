// Package testenv starts a real Kubernetes API server (kube-apiserver and etcd, through
// controller-runtime's envtest) with the project's CRDs installed, for the tests of the
// operator and of vrrpd's Kubernetes mode.
//
// It carries the project's rule for tests that need outside parts: without the envtest
// binaries (KUBEBUILDER_ASSETS, filled by `make envtest`) the tests that need the API server
// skip, except under CI=true, where the whole package fails.
package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// Env is a running API server and a direct (uncached) client to it.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	env    *envtest.Environment
}

// Missing says why the envtest binaries cannot be used, or "" when they can.
func Missing() string {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "KUBEBUILDER_ASSETS is not set (run the tests through make, or make envtest)"
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Sprintf("no %s in KUBEBUILDER_ASSETS=%q (make envtest)", b, dir)
		}
	}
	return ""
}

// Scheme is client-go's scheme plus KeepalivedGroup and CustomResourceDefinition.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // only a programming error in a scheme builder gets here
		}
	}
	return s
}

// Start starts an API server with deploy/crds installed; configure, when not nil, may
// adjust the environment (API server flags, users) first.
func Start(configure func(*envtest.Environment)) (*Env, error) {
	if why := Missing(); why != "" {
		return nil, errors.New(why)
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(logr.Discard())
	e := &Env{Scheme: Scheme(), env: &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}}
	if configure != nil {
		configure(e.env)
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		_ = e.env.Stop()
		return nil, fmt.Errorf("envtest client: %w", err)
	}
	return e, nil
}

// Environment is the underlying envtest environment (for AddUser and the like).
func (e *Env) Environment() *envtest.Environment { return e.env }

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

// Main runs a package's tests around one shared API server, for TestMain:
// os.Exit(testenv.Main(m, nil, func(e *testenv.Env) { env = e })). Without the binaries it
// runs the tests with no server (set is not called; tests needing one skip), except under
// CI=true, where it fails the package.
//
// A fuzzing run (go test -fuzz, and each of its worker processes) runs no test that needs
// the server, so it starts none: one API server per fuzz worker would starve the machine.
func Main(m *testing.M, configure func(*envtest.Environment), set func(*Env)) int {
	if fuzzing() {
		return m.Run()
	}
	if why := Missing(); why != "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "envtest:", why)
			return 1
		}
		fmt.Fprintln(os.Stderr, "envtest tests skip:", why)
		return m.Run()
	}
	e, err := Start(configure)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = e.Stop() }()
	set(e)
	return m.Run()
}

// fuzzing reports whether the test binary runs as a fuzzer or one of its workers.
func fuzzing() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// Require skips t when there is no API server to use (e == nil), or fails it under CI=true.
func Require(t testing.TB, e *Env) {
	t.Helper()
	if e != nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("envtest: no API server under CI=true: " + Missing())
	}
	t.Skip("envtest: " + Missing())
}

// moduleRoot finds the directory holding go.mod, from the test's working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// AdminKubeconfig writes a kubeconfig for a new cluster-admin user (group system:masters)
// of the API server into the test's temporary directory and returns its path, for the
// programs and kubectl commands a test runs against it.
func (e *Env) AdminKubeconfig(t testing.TB, user string) string {
	t.Helper()
	u, err := e.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
