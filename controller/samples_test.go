package controller

import (
	"bytes"
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// applyFile creates every document of a multi-document YAML file as it is
// (unstructured, so nothing is normalised by Go types on the way).
func applyFile(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if err := k8s.Create(context.Background(), u); err != nil {
			t.Fatalf("%s: create %s %s/%s: %v", path, u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		objs = append(objs, u)
	}
	return objs
}

func ensureNamespace(t testing.TB, name string) {
	t.Helper()
	err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestSampleManifestsApply: the original operator's sample groups and
// Services apply unchanged to this project's CRD.
func TestSampleManifestsApply(t *testing.T) {
	ensureNamespace(t, "keepalived-operator")
	ensureNamespace(t, "demo")
	groups := applyFile(t, "testdata/groups.yaml")
	services := applyFile(t, "testdata/services.yaml")
	if len(groups) != 3 || len(services) != 2 {
		t.Fatalf("applied %d group-file objects and %d services, want 3 and 2", len(groups), len(services))
	}
}
