package install

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// One API server for the package. Besides the project's CRD it serves stand-ins for the
// two foreign kinds the install can contain, OpenShift's SecurityContextConstraints and
// the Prometheus operator's ServiceMonitor, with open schemas: the API server checks their
// group, version, kind and scope; the tests check their fields.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(e *envtest.Environment) {
		e.CRDs = append(e.CRDs, foreignCRDs()...)
	}, func(e *testenv.Env) { env = e }))
}

// foreignCRDs are the stand-ins for the foreign kinds (the floor's API server gets them
// too, floor_test.go).
func foreignCRDs() []*apiextensionsv1.CustomResourceDefinition {
	return []*apiextensionsv1.CustomResourceDefinition{
		openCRD("security.openshift.io", "SecurityContextConstraints", "securitycontextconstraints", apiextensionsv1.ClusterScoped),
		openCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors", apiextensionsv1.NamespaceScoped),
		openCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules", apiextensionsv1.NamespaceScoped),
	}
}

// openCRD serves v1 of a kind with any content. SCCs keep their fields at the top level,
// next to metadata, which an open schema at the root allows.
func openCRD(group, kind, plural string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// kubeconfig writes a kubeconfig for the API server (a cluster admin) and returns its path.
func kubeconfig(t testing.TB) string {
	t.Helper()
	testenv.Require(t, env)
	return env.AdminKubeconfig(t, "install-test")
}

// dryRunApply sends a rendering to the API server with a server-side dry run: defaulting,
// validation (the CRDs' schemas and CEL rules included) and admission, without storing.
// A dry run cannot create a namespace for the objects that follow it, so the namespaces
// the rendering itself declares are created for real first (with their labels); an object
// in a namespace the rendering does not declare still fails, unless extraNamespaces
// names it (a Helm release's namespace, which `helm install --create-namespace` makes).
func dryRunApply(t testing.TB, rendering []byte, extraNamespaces ...string) {
	t.Helper()
	cfg := kubeconfig(t)
	for _, u := range decode(t, rendering) {
		if u.GetKind() == "Namespace" {
			ensureNamespace(t, u.GetName(), u.GetLabels())
		}
	}
	for _, ns := range extraNamespaces {
		ensureNamespace(t, ns, nil)
	}
	out, err := run(t, []string{"KUBECONFIG=" + cfg}, rendering, kubectlPath(t),
		"apply", "--server-side", "--field-manager=install-test", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatalf("server-side dry run: %v\n%s", err, out)
	}
}

// ensureNamespace creates a namespace with labels, or sets the labels of an existing one.
func ensureNamespace(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	err := env.Client.Create(ctx, ns)
	if apierrors.IsAlreadyExists(err) {
		var have corev1.Namespace
		if err = env.Client.Get(ctx, types.NamespacedName{Name: name}, &have); err == nil && len(labels) > 0 {
			if have.Labels == nil {
				have.Labels = map[string]string{}
			}
			for k, v := range labels {
				have.Labels[k] = v
			}
			err = env.Client.Update(ctx, &have)
		}
	}
	if err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
}
