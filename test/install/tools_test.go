package install

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// root is the module's root directory: the tests run every command from there, like a
// user following the README.
var root = func() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}()

// need skips t for a missing tool, or fails it under CI=true, where everything must run.
func need(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI=true: nothing may be skipped)")
	}
	t.Skip(why)
}

// kubectlPath is the kubectl that `make envtest` builds next to kube-apiserver.
func kubectlPath(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		need(t, "KUBEBUILDER_ASSETS is not set (run through make, or make envtest)")
	}
	p := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		need(t, fmt.Sprintf("no kubectl in KUBEBUILDER_ASSETS=%q (make envtest)", dir))
	}
	return p
}

// helmCommand is the Makefile's HELM: a pinned `go run helm.sh/helm/v3/cmd/helm@VERSION`
// or a path to a helm binary.
func helmCommand(t testing.TB) []string {
	t.Helper()
	h := strings.Fields(os.Getenv("HELM"))
	if len(h) == 0 {
		need(t, "HELM is not set: run through make, or HELM='go run -ldflags=-X=helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37 helm.sh/helm/v3/cmd/helm@v3.22.0'")
	}
	return h
}

// run runs a command from the module root and returns its standard output; a failure
// carries the standard error.
func run(t testing.TB, env []string, stdin []byte, name string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// kustomize renders a kustomization directory (relative to the module root, or absolute).
func kustomize(t testing.TB, dir string) []byte {
	t.Helper()
	out, err := run(t, nil, nil, kubectlPath(t), "kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const chartDir = "deploy/helm/vrrp-operator"

// helmTemplate renders the chart as release vrrp-operator in namespace vrrp-operator, CRDs
// included, with extra arguments (--set ...).
func helmTemplate(t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	h := helmCommand(t)
	all := append(append([]string{}, h[1:]...), "template", "vrrp-operator", chartDir, "--namespace", "vrrp-operator", "--include-crds")
	return run(t, nil, nil, h[0], append(all, args...)...)
}

func mustHelmTemplate(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decode splits a multi-document YAML stream into objects, numbers as int64 or float64 as
// the API machinery reads them; empty documents are skipped.
func decode(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding: %v", err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("decoding: %v", err)
		}
		var m map[string]any
		if err := utiljson.Unmarshal(j, &m); err != nil {
			t.Fatalf("decoding: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func readFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// key names an object the way the comparisons do: kind, namespace, name.
func key(u *unstructured.Unstructured) string {
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// index maps each object's key to it, failing on duplicates.
func index(t testing.TB, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if _, dup := m[key(u)]; dup {
			t.Fatalf("%s rendered twice", key(u))
		}
		m[key(u)] = u
	}
	return m
}

// find returns the one object of a kind and name, failing when absent.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s among %d objects", kind, name, len(objs))
	return nil
}

// field reads a nested field, failing when it is missing.
func field(t testing.TB, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s: no field %s (%v)", key(u), strings.Join(path, "."), err)
	}
	return v
}

// container is the operator's one container in a Deployment.
func container(t testing.TB, deploy *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _ := field(t, deploy, "spec", "template", "spec", "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", key(deploy), len(cs))
	}
	c, _ := cs[0].(map[string]any)
	return c
}

// args are a container's arguments.
func args(t testing.TB, deploy *unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	list, _ := container(t, deploy)["args"].([]any)
	for _, a := range list {
		s, ok := a.(string)
		if !ok {
			t.Fatalf("%s: argument %v is not a string", key(deploy), a)
		}
		out = append(out, s)
	}
	return out
}
