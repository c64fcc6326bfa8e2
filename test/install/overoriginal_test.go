package install

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// The README's upgrade and uninstall commands sit between these markers.
const (
	lifecycleBegin = "<!-- lifecycle:begin -->"
	lifecycleEnd   = "<!-- lifecycle:end -->"
)

const (
	crdName     = "keepalivedgroups.redhatcop.redhat.io"
	groupsNS    = "keepalived-operator"
	originalCRD = "testdata/keepalived-operator/crd/redhatcop.redhat.io_keepalivedgroups.yaml"
)

var (
	crdGVR   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	groupGVR = schema.GroupVersionResource{Group: "redhatcop.redhat.io", Version: "v1alpha1", Resource: "keepalivedgroups"}
	sccGVR   = schema.GroupVersionResource{Group: "security.openshift.io", Version: "v1", Resource: "securitycontextconstraints"}
	nsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	depGVR   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// lifecycle is the README's upgrade and uninstall commands, by what they do.
type lifecycle struct {
	helmUpgrade, helmUninstall, kubectlUninstall []string
}

func readLifecycle(t *testing.T) lifecycle {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, lifecycleBegin), strings.Index(s, lifecycleEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md: no %s ... %s section", lifecycleBegin, lifecycleEnd)
	}
	var l lifecycle
	for _, b := range shBlock.FindAllStringSubmatch(s[i:j], -1) {
		cmds := commands(b[1])
		joined := strings.Join(cmds, "\n")
		switch {
		case strings.Contains(joined, "helm upgrade"):
			l.helmUpgrade = cmds
		case strings.Contains(joined, "helm uninstall"):
			l.helmUninstall = cmds
		case strings.Contains(joined, "kubectl delete"):
			l.kubectlUninstall = cmds
		}
	}
	if l.helmUpgrade == nil || l.helmUninstall == nil || l.kubectlUninstall == nil {
		t.Fatalf("README.md's upgrade and uninstall section needs a ```sh block each for helm upgrade, helm uninstall and kubectl delete; found %+v", l)
	}
	for _, c := range append(append(append([]string{}, l.helmUpgrade...), l.helmUninstall...), l.kubectlUninstall...) {
		if strings.Contains(c, "crd") || strings.Contains(c, "deploy/cluster") {
			t.Errorf("README.md: %q: removing the CRD or the groups' namespace is a separate step, not part of upgrade or uninstall", c)
		}
	}
	return l
}

// TestREADMEInstallOverKeepalivedOperator: on a cluster that ran keepalived-operator, whose
// CRD (its own schema) another field manager created, either by `kubectl create` or by the
// original's Helm chart (its crds/, Helm's field manager), with groups whose status holds
// router IDs and conditions, each of the README's install blocks runs as written and:
//   - the CRD then serves this project's schema, the groups' spec and status are as before,
//     and a status field only the new schema has is stored (the old one pruned it);
//   - the upgrade (Helm: the README's helm upgrade; kustomize: the install again) brings the
//     schema back over a CRD that an older version changed;
//   - the README's uninstall leaves the CRD, the groups' namespace, the groups and their
//     status (and on OpenShift vrrpd's SCC), and removes the operator.
func TestREADMEInstallOverKeepalivedOperator(t *testing.T) {
	testenv.Require(t, env)
	section, file := installSection(t)
	blocks := shBlock.FindAllStringSubmatch(section, -1)
	if len(blocks) == 0 {
		t.Fatalf("%s: no ```sh blocks in the install section", file)
	}
	life := readLifecycle(t)
	ours := decode(t, readFile(t, "deploy/crds/redhatcop.redhat.io_keepalivedgroups.yaml"))[0]
	for i, b := range blocks {
		install := commands(b[1])
		for _, manager := range []string{"kubectl-create", "helm"} {
			t.Run(fmt.Sprintf("block%d/%s", i+1, manager), func(t *testing.T) {
				fresh, cfg := freshCluster(t)
				dc, err := dynamic.NewForConfig(fresh.Config)
				if err != nil {
					t.Fatal(err)
				}
				installOriginal(t, cfg, manager)
				before := originalGroups(t, cfg, dc, manager)
				// What the README's --force-conflicts is for: without it the CRD's apply stops.
				out, err := run(t, []string{"KUBECONFIG=" + cfg}, nil, kubectlPath(t),
					"apply", "--server-side", "--dry-run=server", "-k", "deploy/cluster")
				if err == nil || !strings.Contains(err.Error(), "with \""+manager+"\"") || !strings.Contains(err.Error(), ".spec.versions") {
					t.Errorf("apply without --force-conflicts over the original's CRD: %v\n%s, want a conflict with %s on .spec.versions", err, out, manager)
				}

				runCommands(t, cfg, install)
				checkSchema(t, dc, ours, "after the install")
				checkGroupsKept(t, dc, before)
				checkNewStatusField(t, dc, before)

				// The upgrade: an older version's CRD in place (a status field missing,
				// written by another field manager), then the README's upgrade.
				degradeCRD(t, dc)
				viaHelm := strings.Contains(strings.Join(install, "\n"), "helm install")
				if viaHelm {
					runCommands(t, cfg, life.helmUpgrade)
				} else {
					runCommands(t, cfg, install)
				}
				checkSchema(t, dc, ours, "after the upgrade")
				checkGroupsKept(t, dc, before)

				openshift := exists(t, dc, sccGVR, "", "vrrp-operator-vrrpd")
				uninstall := life.kubectlUninstall
				if viaHelm {
					uninstall = life.helmUninstall
				}
				runCommands(t, cfg, noWait(uninstall))
				if alive(t, dc, depGVR, "vrrp-operator", "vrrp-operator") {
					t.Errorf("after %v the operator's Deployment is still there", uninstall)
				}
				if !alive(t, dc, crdGVR, "", crdName) {
					t.Fatalf("after %v the CRD is gone or being deleted", uninstall)
				}
				if !alive(t, dc, nsGVR, "", groupsNS) {
					t.Errorf("after %v the groups' namespace %s is gone or being deleted", uninstall, groupsNS)
				}
				if openshift && !alive(t, dc, sccGVR, "", "vrrp-operator-vrrpd") {
					t.Errorf("after %v vrrpd's SCC is gone: a vrrpd pod recreated on a node would not be admitted", uninstall)
				}
				checkSchema(t, dc, ours, "after the uninstall")
				checkGroupsKept(t, dc, before)
				// Nothing of the admission policy is left to refuse anyone's writes: a binding
				// without its ConfigMap refuses them all (its parameters are looked up before
				// the operator's condition). The API server's admission sees the binding's
				// deletion a moment after it; how long that moment was is logged.
				sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
					"metadata": map[string]any{"name": "after-uninstall", "namespace": "default"}}}
				start, refusals := time.Now(), 0
				poll.Until(t, 30*time.Second, func() error {
					_, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}).Namespace("default").
						Create(context.Background(), sa, metav1.CreateOptions{})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						refusals++
						return fmt.Errorf("after %v an admin's ServiceAccount: %v", uninstall, err)
					}
					return nil
				})
				t.Logf("after the uninstall an admin's write was refused %d times, for %v", refusals, time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// noWait adds --wait=false to kubectl delete: the test's API server runs no namespace
// controller, so the operator's namespace stays Terminating and a waiting kubectl would
// wait for ever. What is deleted is the same.
func noWait(cmds []string) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		if strings.HasPrefix(c, "kubectl delete") {
			c += " --wait=false"
		}
		out[i] = c
	}
	return out
}

// installOriginal installs keepalived-operator's CRD the way its users did: `kubectl
// create` (field manager kubectl-create), or its Helm chart, which carries the CRD in
// crds/ (field manager helm) and is then uninstalled as the migration guide's first step
// says (Helm leaves a crds/ CRD). Either way the groups' namespace exists too.
func installOriginal(t *testing.T, cfg, manager string) {
	t.Helper()
	kenv := []string{"KUBECONFIG=" + cfg}
	switch manager {
	case "kubectl-create":
		for _, args := range [][]string{{"create", "-f", originalCRD}, {"create", "namespace", groupsNS}} {
			if out, err := run(t, kenv, nil, kubectlPath(t), args...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}
	case "helm":
		dir := t.TempDir()
		chart := "apiVersion: v2\nname: keepalived-operator\nversion: 1.5.0\n"
		// The operator's Deployment stands for what the chart ran; nothing runs it here.
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keepalived-operator-stand-in\n"
		for name, content := range map[string][]byte{
			"Chart.yaml":                 []byte(chart),
			"templates/stand-in.yaml":    []byte(cm),
			"crds/keepalivedgroups.yaml": readFile(t, originalCRD),
		} {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		h := helmCommand(t)
		args := append(append([]string{}, h[1:]...), "install", "keepalived-operator", dir, "--namespace", groupsNS, "--create-namespace")
		if out, err := run(t, kenv, nil, h[0], args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	default:
		t.Fatalf("manager %q", manager)
	}
	if out, err := run(t, kenv, nil, kubectlPath(t), "wait", "--for=condition=Established", "--timeout=2m", "crd/"+crdName); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Who wrote the CRD: the conflict the README's --force-conflicts and --take-ownership are for.
	var crd unstructured.Unstructured
	out, err := run(t, kenv, nil, kubectlPath(t), "get", "crd", crdName, "-o", "json", "--show-managed-fields")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &crd.Object); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, m := range crd.GetManagedFields() {
		managers = append(managers, m.Manager)
	}
	if !strings.Contains(strings.Join(managers, ","), manager) {
		t.Fatalf("the original's CRD is managed by %v, want %s", managers, manager)
	}
}

// group is what the test compares of a group before and after: spec and status.
type group struct {
	spec, status map[string]any
}

// originalGroups creates the original's groups (testdata/keepalived-operator/groups.yaml,
// by kubectl create, as its users did) and gives them the status keepalived-operator
// wrote: router IDs and a condition. It returns them as stored. A status field only this
// project's schema has (nodeCount) is written too and must be pruned: that shows the
// original's schema is the one served, so that the checks after the install mean
// something. With the Helm manager, the original's release is uninstalled afterwards.
func originalGroups(t *testing.T, cfg string, dc dynamic.Interface, manager string) map[string]group {
	t.Helper()
	kenv := []string{"KUBECONFIG=" + cfg}
	if out, err := run(t, kenv, nil, kubectlPath(t), "create", "-f", "testdata/keepalived-operator/groups.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ctx := context.Background()
	gc := dc.Resource(groupGVR).Namespace(groupsNS)
	list, err := gc.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) < 2 {
		t.Fatalf("the original's groups: %v (%d)", err, len(list.Items))
	}
	out := map[string]group{}
	for n, g := range list.Items {
		status := map[string]any{
			"routerIDs": map[string]any{
				"demo/web":            int64(10 + n),
				"demo/db/10.99.0.101": int64(20 + n),
				"demo/db/10.99.0.102": int64(30 + n),
			},
			"conditions": []any{map[string]any{
				"type": "ReconcileSuccess", "status": "True", "reason": "LastReconcileCycleSucceded",
				"message": "", "lastTransitionTime": "2026-01-02T03:04:05Z",
			}},
			"nodeCount": int64(3),
		}
		g.Object["status"] = status
		stored, err := gc.UpdateStatus(ctx, &g, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("status of %s: %v", g.GetName(), err)
		}
		st, _, _ := unstructured.NestedMap(stored.Object, "status")
		if _, ok := st["nodeCount"]; ok {
			t.Fatalf("the original's schema stored status.nodeCount of %s: it is not the original's", g.GetName())
		}
		if !reflect.DeepEqual(st["routerIDs"], status["routerIDs"]) {
			t.Fatalf("status.routerIDs of %s stored as %v", g.GetName(), st["routerIDs"])
		}
		spec, _, _ := unstructured.NestedMap(stored.Object, "spec")
		out[g.GetName()] = group{spec: spec, status: st}
	}
	if manager == "helm" {
		// The migration guide's first step: the original goes, its CRD and groups stay.
		h := helmCommand(t)
		args := append(append([]string{}, h[1:]...), "uninstall", "keepalived-operator", "--namespace", groupsNS)
		if o, err := run(t, kenv, nil, h[0], args...); err != nil {
			t.Fatalf("%v\n%s", err, o)
		}
		if !alive(t, dc, crdGVR, "", crdName) {
			t.Fatal("helm uninstall of the original deleted its CRD")
		}
	}
	return out
}

// checkSchema: the CRD serves exactly deploy/crds' versions (schema, printer columns,
// subresources).
func checkSchema(t *testing.T, dc dynamic.Interface, ours *unstructured.Unstructured, when string) {
	t.Helper()
	live, err := dc.Resource(crdGVR).Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	got, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
	want, _, _ := unstructured.NestedSlice(ours.Object, "spec", "versions")
	if !reflect.DeepEqual(roundTrip(t, got), roundTrip(t, want)) {
		t.Errorf("%s the CRD's versions are not deploy/crds': status properties %v", when, statusProperties(got))
	}
	if live.GetDeletionTimestamp() != nil {
		t.Errorf("%s the CRD is being deleted", when)
	}
}

// roundTrip makes two decodings comparable (int64 against float64 and the like).
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func statusProperties(versions []any) []string {
	var names []string
	if len(versions) == 0 {
		return nil
	}
	v, _ := versions[0].(map[string]any)
	props, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "status", "properties")
	for k := range props {
		names = append(names, k)
	}
	return names
}

// checkGroupsKept: every group is there, not being deleted, with its spec, router IDs and
// conditions as before.
func checkGroupsKept(t *testing.T, dc dynamic.Interface, before map[string]group) {
	t.Helper()
	gc := dc.Resource(groupGVR).Namespace(groupsNS)
	for name, b := range before {
		g, err := gc.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("group %s: %v", name, err)
			continue
		}
		if g.GetDeletionTimestamp() != nil {
			t.Errorf("group %s is being deleted", name)
		}
		spec, _, _ := unstructured.NestedMap(g.Object, "spec")
		status, _, _ := unstructured.NestedMap(g.Object, "status")
		// This schema's defaults (advertInterval, preempt) apply to stored objects as they
		// are read: every field the group had must be there as it was, new ones may be added.
		if !within(roundTrip(t, b.spec), roundTrip(t, spec)) {
			t.Errorf("group %s spec %v, was %v", name, spec, b.spec)
		}
		for _, f := range []string{"routerIDs", "conditions"} {
			if !reflect.DeepEqual(roundTrip(t, status[f]), roundTrip(t, b.status[f])) {
				t.Errorf("group %s status.%s %v, was %v", name, f, status[f], b.status[f])
			}
		}
	}
}

// within reports whether every field of was is in is with the same value (maps
// recursively; is may have more).
func within(was, is any) bool {
	wm, ok := was.(map[string]any)
	if !ok {
		return reflect.DeepEqual(was, is)
	}
	im, ok := is.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range wm {
		if !within(v, im[k]) {
			return false
		}
	}
	return true
}

// checkNewStatusField: a status field of this project's schema is now stored.
func checkNewStatusField(t *testing.T, dc dynamic.Interface, before map[string]group) {
	t.Helper()
	ctx := context.Background()
	gc := dc.Resource(groupGVR).Namespace(groupsNS)
	for name := range before {
		// The API server serves a changed CRD's schema a moment after the write.
		poll.Until(t, 60*time.Second, func() error {
			g, err := gc.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(g.Object, int64(3), "status", "nodeCount"); err != nil {
				return err
			}
			stored, err := gc.UpdateStatus(ctx, g, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("status of %s under the new schema: %v", name, err)
			}
			if n, _, _ := unstructured.NestedInt64(stored.Object, "status", "nodeCount"); n != 3 {
				return fmt.Errorf("group %s: status.nodeCount %d after writing 3: the new schema is not served", name, n)
			}
			return nil
		})
	}
}

// degradeCRD makes the CRD an older version's: status.nodeCount dropped from its schema,
// written by another field manager (as an older release of the operator would have).
func degradeCRD(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	patch := []byte(`[{"op":"remove","path":"/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/nodeCount"}]`)
	_, err := dc.Resource(crdGVR).Patch(context.Background(), crdName, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: "vrrp-operator-older"})
	if err != nil {
		t.Fatalf("degrading the CRD: %v", err)
	}
	live, err := dc.Resource(crdGVR).Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
	for _, p := range statusProperties(versions) {
		if p == "nodeCount" {
			t.Fatal("the degraded CRD still has status.nodeCount")
		}
	}
}

// exists reports whether an object exists (being deleted or not).
func exists(t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) bool {
	t.Helper()
	_, err := dc.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("%s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return true
}

// alive reports whether an object exists and is not being deleted.
func alive(t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) bool {
	t.Helper()
	u, err := dc.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("%s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return u.GetDeletionTimestamp() == nil
}
