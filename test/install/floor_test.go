package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// The floor (README, "Install on Kubernetes"): the oldest Kubernetes the install supports. The
// package's own API server is the release `make envtest` builds (1.36); this test starts a
// second one from the floor's kube-apiserver, which `make envtest-floor` builds into the
// directory VRRP_FLOOR_ASSETS names (the Makefile exports it), because what sets the floor
// is the API server's: CEL's isIP/isCIDR in the CRD's validation rules, and the
// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) that holds the operator's
// ServiceAccount to vrrpd-shaped objects.

// startFloor starts an API server from the floor's kube-apiserver with deploy/crds and the
// stand-ins of the foreign kinds installed; it skips (fails under CI=true) without the
// binaries. The server's version must be the one the directory's .version names: a test
// that silently ran on the newer server would prove nothing about the floor.
func startFloor(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	dir := os.Getenv("VRRP_FLOOR_ASSETS")
	if dir == "" {
		need(t, "VRRP_FLOOR_ASSETS is not set (run through make, or make envtest-floor and export VRRP_FLOOR_ASSETS=$PWD/bin/envtest-floor)")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			need(t, fmt.Sprintf("no %s in VRRP_FLOOR_ASSETS=%q (make envtest-floor)", b, dir))
		}
	}
	if why := testenv.Missing(); why != "" {
		need(t, why)
	}
	want, err := os.ReadFile(filepath.Join(dir, ".version"))
	if err != nil {
		t.Fatalf("the floor's version: %v (make envtest-floor writes it)", err)
	}
	e, err := testenv.Start(func(e *envtest.Environment) {
		// KUBEBUILDER_ASSETS (the 1.36 directory) would win over BinaryAssetsDirectory:
		// name the binaries themselves.
		e.ControlPlane.GetAPIServer().Path = filepath.Join(dir, "kube-apiserver")
		e.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(dir, "etcd")}
		e.CRDs = append(e.CRDs, foreignCRDs()...)
		// A second API server next to the package's, on a loaded machine: envtest's 20 s
		// default can be too short.
		e.ControlPlaneStartTimeout = 2 * time.Minute
	})
	if err != nil {
		t.Fatalf("starting the floor's API server: %v", err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v"+strings.TrimSpace(string(want)) {
		t.Fatalf("the floor's API server is %s, want v%s", v.GitVersion, strings.TrimSpace(string(want)))
	}
	t.Logf("floor API server %s", v.GitVersion)
	return e, strings.TrimSpace(string(want))
}

// applyTo sends every object of a rendering to the API server as a server-side apply,
// a dry run unless real. The namespaces the objects live in are created for real first
// (with the labels the rendering gives them): a dry run cannot create one for the objects
// after it, and whether each install declares its namespaces is the 1.36 tests' concern;
// this one is about what the floor's API server accepts.
func applyTo(t *testing.T, c client.Client, rendering []byte, real bool) {
	t.Helper()
	ctx := context.Background()
	objs := decode(t, rendering)
	labels := map[string]map[string]string{}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			labels[u.GetName()] = u.GetLabels()
		}
		if ns := u.GetNamespace(); ns != "" {
			if _, ok := labels[ns]; !ok {
				labels[ns] = nil
			}
		}
	}
	for ns, l := range labels {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("namespace %s: %v", ns, err)
		}
	}
	opts := []client.ApplyOption{client.FieldOwner("floor-test"), client.ForceOwnership}
	if !real {
		opts = append(opts, client.DryRunAll)
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
			t.Errorf("%s: %v", key(u), err)
		}
	}
}

// TestFloorAcceptsEveryInstall: on the floor's API server, with the CRD installed, every
// install path's objects pass a server-side dry run (every kustomization under deploy/,
// the chart with its default values and with its OpenShift and monitoring switches, the
// samples and the original keepalived-operator's manifests); a KeepalivedGroup with a bad
// address is refused by the CRD's CEL rules (so they run there, not only parse); and the
// install's ValidatingAdmissionPolicy is enforced: impersonating the operator's
// ServiceAccount, with the install applied, a vrrpd-shaped DaemonSet in the groups'
// namespace is admitted and a privileged one in kube-system is refused by the policy.
func TestFloorAcceptsEveryInstall(t *testing.T) {
	fe, floor := startFloor(t)

	t.Run("renderings", func(t *testing.T) {
		overlays, components := kustomizations(t)
		for _, dir := range overlays {
			t.Run(dir, func(t *testing.T) { applyTo(t, fe.Client, kustomize(t, dir), false) })
		}
		for _, dir := range components {
			t.Run(dir, func(t *testing.T) { applyTo(t, fe.Client, withComponent(t, dir), false) })
		}
		for name, set := range map[string][]string{
			"helm default":    nil,
			"helm openshift":  {"--set", "openshift.enabled=true", "--set", "metrics.serviceMonitor.enabled=true"},
			"helm monitoring": {"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.dashboard.enabled=true"},
		} {
			// As `helm install` renders it for a cluster of the floor's version: the chart's
			// kubeVersion must admit it.
			set = append(set, "--kube-version", floor)
			t.Run(name, func(t *testing.T) { applyTo(t, fe.Client, mustHelmTemplate(t, set...), false) })
		}
		// And the chart refuses a cluster below the floor (its kubeVersion).
		major, rest, _ := strings.Cut(floor, ".")
		minor, _, _ := strings.Cut(rest, ".")
		n, err := strconv.Atoi(minor)
		if err != nil {
			t.Fatalf("floor version %q: %v", floor, err)
		}
		below := fmt.Sprintf("%s.%d.0", major, n-1)
		if _, err := helmTemplate(t, "--kube-version", below); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
			t.Errorf("helm template --kube-version %s: %v, want refused by the chart's kubeVersion", below, err)
		}
		for _, dir := range []string{"deploy/operator/samples", "testdata/keepalived-operator"} {
			files, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no manifests in %s (%v)", dir, err)
			}
			for _, f := range files {
				rel, _ := filepath.Rel(root, f)
				t.Run(rel, func(t *testing.T) { applyTo(t, fe.Client, readFile(t, rel), false) })
			}
		}
	})

	t.Run("CEL", func(t *testing.T) { floorCEL(t, fe.Client) })
	t.Run("admission policy", func(t *testing.T) { floorPolicy(t, fe) })
}

// floorCEL: each address field's rule refuses a bad value and admits a good one (the
// good one shows the refusal is the rule's, not some other part of the object).
func floorCEL(t *testing.T, c client.Client) {
	ctx := context.Background()
	ns := "floor-cel"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		good, bad func(*v1alpha1.KeepalivedGroupSpec)
		message   string
	}{
		{"externalIPs.allowedCIDRs (isCIDR)",
			func(s *v1alpha1.KeepalivedGroupSpec) {
				s.ExternalIPs = &v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.0/24"}}
			},
			func(s *v1alpha1.KeepalivedGroupSpec) {
				s.ExternalIPs = &v1alpha1.ExternalIPPolicy{AllowedCIDRs: []string{"10.99.0.0/33"}}
			},
			"must be a CIDR"},
		{"interfaceFromIP (isIP)",
			func(s *v1alpha1.KeepalivedGroupSpec) { s.InterfaceFromIP = "10.99.0.1" },
			func(s *v1alpha1.KeepalivedGroupSpec) { s.InterfaceFromIP = "10.99.0.256" },
			"interfaceFromIP must be an IP address"},
		{"addressPool range (ip().family())",
			func(s *v1alpha1.KeepalivedGroupSpec) {
				s.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.200-10.99.0.210"}}
			},
			func(s *v1alpha1.KeepalivedGroupSpec) {
				s.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.200-fd00:99::1"}}
			},
			"must be a CIDR, a single IP address, or a range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := func(mutate func(*v1alpha1.KeepalivedGroupSpec)) *v1alpha1.KeepalivedGroup {
				g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "floor"},
					Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0"}}
				mutate(&g.Spec)
				return g
			}
			if err := c.Create(ctx, group(tc.good), client.DryRunAll); err != nil {
				t.Errorf("a valid group: %v", err)
			}
			err := c.Create(ctx, group(tc.bad), client.DryRunAll)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("a bad group: %v, want Invalid saying %q", err, tc.message)
			}
		})
	}
}

// floorPolicy applies deploy/operator for real (its RBAC, the policy, its binding and
// parameters) and acts as the operator's ServiceAccount, as the red-team tests do on 1.36
// (controller/redteam_test.go). The ClusterRole lets the operator create DaemonSets in any
// namespace, so a refusal in kube-system that names the policy is the policy's.
func floorPolicy(t *testing.T, fe *testenv.Env) {
	objs := decode(t, kustomize(t, "deploy/operator"))
	applyTo(t, fe.Client, kustomize(t, "deploy/operator"), true)
	if t.Failed() {
		t.FailNow()
	}
	deploy := find(t, objs, "Deployment", "vrrp-operator")
	sa := field(t, deploy, "spec", "template", "spec", "serviceAccountName").(string)
	ns := deploy.GetNamespace()
	data := field(t, find(t, objs, "ConfigMap", "vrrp-operator-policy"), "data").(map[string]any)
	image, _ := data["vrrpdImage"].(string)
	groupNS := strings.Split(data["groupNamespaces"].(string), ",")[0]
	if image == "" || groupNS == "" || groupNS == "*" {
		t.Fatalf("policy parameters %v: want a vrrpd image and a group namespace", data)
	}

	cfg := rest.CopyConfig(fe.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:authenticated", "system:serviceaccounts", "system:serviceaccounts:" + ns},
	}
	op, err := client.New(cfg, client.Options{Scheme: fe.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	privileged := vrrpdDaemonSet("kube-system", image)
	sc := privileged.Spec.Template.Spec.Containers[0].SecurityContext
	sc.Privileged, sc.AllowPrivilegeEscalation = ptr.To(true), ptr.To(true)
	// The API server starts enforcing a new policy a moment after it is written.
	poll.Until(t, 60*time.Second, func() error {
		if err := op.Create(ctx, vrrpdDaemonSet(groupNS, image), client.DryRunAll); err != nil {
			return fmt.Errorf("a vrrpd-shaped DaemonSet in %s, as the operator: %v, want admitted", groupNS, err)
		}
		err := op.Create(ctx, privileged.DeepCopy(), client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'vrrp-operator'") {
			return fmt.Errorf("a privileged DaemonSet in kube-system, as the operator: %v, want refused by ValidatingAdmissionPolicy 'vrrp-operator'", err)
		}
		t.Logf("refused: %v", err)
		return nil
	})
	// In the groups' namespace the same privileged DaemonSet meets the container rules
	// (CEL over every container's securityContext), not only the namespace list.
	inGroups := privileged.DeepCopy()
	inGroups.Namespace = groupNS
	err = op.Create(ctx, inGroups, client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "are not privileged") {
		t.Errorf("a privileged DaemonSet in %s, as the operator: %v, want refused by the policy's container rule", groupNS, err)
	} else {
		t.Logf("refused: %v", err)
	}
	// The policy's parameters are read on the floor too: the same DaemonSet in a namespace
	// the ConfigMap does not list is refused, and admitted once it is listed.
	ensure := func(name string) {
		if err := fe.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	ensure("floor-groups")
	if err := op.Create(ctx, vrrpdDaemonSet("floor-groups", image), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("a vrrpd-shaped DaemonSet in a namespace the policy does not list: %v, want Forbidden", err)
	}
	var cm corev1.ConfigMap
	if err := fe.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "vrrp-operator-policy"}, &cm); err != nil {
		t.Fatal(err)
	}
	list := strings.Split(cm.Data["groupNamespaces"], ",")
	if !slices.Contains(list, "floor-groups") {
		cm.Data["groupNamespaces"] = strings.Join(append(list, "floor-groups"), ",")
		if err := fe.Client.Update(ctx, &cm); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 60*time.Second, func() error {
		return op.Create(ctx, vrrpdDaemonSet("floor-groups", image), client.DryRunAll)
	})
}

// vrrpdDaemonSet is a DaemonSet of the shape the policy admits: <group>-vrrpd running as
// the ServiceAccount of that name, with the pod of vrrpdPod (podsecurity_test.go).
func vrrpdDaemonSet(ns, image string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "vrrpd", "floor-test": "lan"}
	pod := vrrpdPod(ns).Spec
	pod.ServiceAccountName = "lan-vrrpd"
	pod.Containers[0].Image = image
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lan-vrrpd", Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
}
