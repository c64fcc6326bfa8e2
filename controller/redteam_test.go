package controller

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// The red-team suite (issue 27; README "Threat model"): each test acts, by
// impersonation, as one role of the threat model against the real API server
// with the install's own RBAC and ValidatingAdmissionPolicy applied from
// deploy/operator (not copies), tries an escalation, and must be refused.

// The install's identity: deploy/operator runs the operator as this
// ServiceAccount, and the admission policy matches it.
const (
	installNamespace = "vrrp-operator"
	operatorUser     = "system:serviceaccount:" + installNamespace + ":vrrp-operator"
	policyConfigMap  = "vrrp-operator-policy"
)

var installOnce struct {
	sync.Mutex
	done bool
}

// installOperator applies every file deploy/cluster's and deploy/operator's
// kustomizations list (the CRD directory aside: envtest has it), as the
// README's `kubectl apply -k` steps would: the namespaces, the ClusterRole
// and its binding, the takeover Role, the admission policy, its binding and
// parameters, the Deployment (which nothing runs here) and its
// PodDisruptionBudget. Once per API server.
func installOperator(t testing.TB) {
	t.Helper()
	needAPIServer(t)
	installOnce.Lock()
	defer installOnce.Unlock()
	if installOnce.done {
		return
	}
	ctx := context.Background()
	// deploy/cluster first: the groups' namespace, which the takeover Role of
	// deploy/operator lives in.
	for _, dir := range []string{filepath.Join("..", "deploy", "cluster"), filepath.Join("..", "deploy", "operator")} {
		var k struct{ Resources []string }
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			t.Fatal(err)
		}
		for _, r := range k.Resources {
			if !strings.HasSuffix(r, ".yaml") {
				continue // ../crds
			}
			for _, u := range readObjects(t, filepath.Join(dir, r)) {
				if err := k8s.Patch(ctx, u, client.Apply, client.FieldOwner("redteam-install"), client.ForceOwnership); err != nil {
					t.Fatalf("%s: apply %s %s: %v", r, u.GetKind(), u.GetName(), err)
				}
			}
		}
	}
	installOnce.done = true
}

// installOptions are the operator's options as the install's Deployment
// passes them (its args), plus extra group namespaces: what the admin would
// add to --group-namespaces and to the policy's ConfigMap alike
// (allowGroupNamespaces).
func installOptions(t testing.TB, extraGroupNS ...string) Options {
	t.Helper()
	objs := readObjects(t, filepath.Join("..", "deploy", "operator", "deployment.yaml"))
	var d appsv1.Deployment
	data, _ := yaml.Marshal(objs[0].Object)
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	image := fs.String("vrrpd-image", "", "")
	groupNS := fs.String("group-namespaces", "", "")
	allowed := fs.String("allowed-vrrpd-images", "", "")
	segNS := fs.String("segment-namespaces", "", "")
	var rest []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if slices.Contains([]string{"vrrpd-image", "group-namespaces", "allowed-vrrpd-images", "segment-namespaces"}, name) {
			rest = append(rest, a)
		}
	}
	if err := fs.Parse(rest); err != nil {
		t.Fatal(err)
	}
	if *image == "" || *groupNS == "" {
		t.Fatalf("deployment.yaml args %v lack --vrrpd-image or --group-namespaces", d.Spec.Template.Spec.Containers[0].Args)
	}
	return Options{
		VrrpdImage:        *image,
		GroupNamespaces:   append(SplitList(*groupNS), extraGroupNS...),
		AllowedImages:     SplitList(*allowed),
		SegmentNamespaces: append([]string{}, SplitList(*segNS)...),
	}
}

// allowGroupNamespaces adds namespaces to the policy's ConfigMap, as an
// admin who lets more namespaces hold groups does.
func allowGroupNamespaces(t testing.TB, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 10*time.Second, func() error {
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: installNamespace, Name: policyConfigMap}, &cm); err != nil {
			return err
		}
		have := SplitList(cm.Data["groupNamespaces"])
		for _, ns := range namespaces {
			if !slices.Contains(have, ns) {
				have = append(have, ns)
			}
		}
		cm.Data["groupNamespaces"] = strings.Join(have, ",")
		return k8s.Update(ctx, &cm)
	})
}

// impersonate returns a client acting as user (with the groups the API
// server gives a ServiceAccount's token, for a ServiceAccount).
func impersonate(t testing.TB, user string) (*rest.Config, client.Client) {
	t.Helper()
	cfg := rest.CopyConfig(testConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	if ns, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		ns, _, _ = strings.Cut(ns, ":")
		cfg.Impersonate.Groups = append(cfg.Impersonate.Groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	}
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

// vrrpdShaped is a DaemonSet as the operator makes one (desiredDaemonSet's
// shape), for the mutations an attacker would make.
func vrrpdShaped(ns, image string) *appsv1.DaemonSet {
	labels := map[string]string{labelName: "vrrpd", labelGroup: "x"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x-vrrpd", Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "x-vrrpd",
					HostNetwork:        true,
					Containers: []corev1.Container{{
						Name: containerName, Image: image,
						SecurityContext: &corev1.SecurityContext{
							Privileged:               ptr.To(false),
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: runDir}},
					}},
					Volumes: []corev1.Volume{{Name: "run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostRunDir + "/" + ns + "/x"}}}},
				},
			},
		},
	}
}

// waitPolicyActive waits until the API server enforces the admission policy
// for the operator (it starts enforcing a new policy, binding or parameter
// a moment after they are written): a hostPID DaemonSet in the group
// namespace ns is refused while a vrrpd-shaped one is admitted.
func waitPolicyActive(t testing.TB, op client.Client, ns, image string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 30*time.Second, func() error {
		if err := op.Create(ctx, vrrpdShaped(ns, image), client.DryRunAll); err != nil {
			return fmt.Errorf("a vrrpd-shaped DaemonSet in group namespace %s: %v", ns, err)
		}
		bad := vrrpdShaped(ns, image)
		bad.Spec.Template.Spec.HostPID = true
		if err := op.Create(ctx, bad, client.DryRunAll); !apierrors.IsForbidden(err) {
			return fmt.Errorf("policy not enforced yet: a hostPID DaemonSet: %v", err)
		}
		return nil
	})
}

// refused fails unless err is the API server's refusal by RBAC or the
// admission policy (both Forbidden), not some other failure (a request the
// API server's validation refuses would prove nothing).
func refused(t testing.TB, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: admitted, want refused", what)
	case apierrors.IsForbidden(err):
		t.Logf("%s: refused: %v", what, err)
	default:
		t.Errorf("%s: %v, want Forbidden", what, err)
	}
}

// TestRedTeamOperatorCannotRunPrivilegedWorkloads: impersonating the
// operator's ServiceAccount, with the install's ClusterRole and admission
// policy, a privileged DaemonSet, a hostPID one mounting the node's /, an
// arbitrary image and a hostPath of / are refused, in kube-system and in a
// namespace that holds groups. Changing the vrrpd DaemonSet of a group into
// one of those is refused too. (On main, all were admitted: the issue's
// `kubectl create --dry-run=server`.)
func TestRedTeamOperatorCannotRunPrivilegedWorkloads(t *testing.T) {
	installOperator(t)
	groupNS := newNamespace(t, "rt-ops")
	allowGroupNamespaces(t, groupNS)
	opts := installOptions(t)
	_, op := impersonate(t, operatorUser)
	waitPolicyActive(t, op, groupNS, opts.VrrpdImage)
	ctx := context.Background()

	attacks := map[string]func(*appsv1.DaemonSet){
		"privileged": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
			d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		},
		"hostPID mounting /": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.HostPID = true
			d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "root",
				VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		},
		"arbitrary image": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].Image = "docker.io/library/busybox:latest"
		},
		"look-alike image": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].Image = opts.VrrpdImage + "-evil"
		},
		"hostPath /": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Volumes[0].HostPath.Path = "/"
		},
		// (The API server itself refuses a hostPath with "..".)
		"hostPath /run": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Volumes[0].HostPath.Path = "/run"
		},
		"hostPath look-alike /run/vrrpd-x": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Volumes[0].HostPath.Path = "/run/vrrpd-x"
		},
		"SYS_ADMIN": func(d *appsv1.DaemonSet) {
			c := d.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities
			c.Add = append(c.Add, "SYS_ADMIN")
		},
		"capabilities kept": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Drop = nil
		},
		"another ServiceAccount": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.ServiceAccountName = "default"
		},
		"privileged init container": func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: opts.VrrpdImage,
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
		},
	}
	for _, ns := range []string{"kube-system", groupNS} {
		for name, mutate := range attacks {
			d := vrrpdShaped(ns, opts.VrrpdImage)
			mutate(d)
			refused(t, fmt.Sprintf("create %s DaemonSet in %s", name, ns), op.Create(ctx, d, client.DryRunAll))
		}
	}
	// Even the vrrpd shape is refused outside the group namespaces.
	refused(t, "create vrrpd-shaped DaemonSet in kube-system", op.Create(ctx, vrrpdShaped("kube-system", opts.VrrpdImage), client.DryRunAll))

	// An existing DaemonSet of another owner (here kube-system's) may not be
	// changed or deleted, nor a group's vrrpd DaemonSet turned privileged.
	victim := vrrpdShaped("kube-system", opts.VrrpdImage)
	victim.Name = "kube-proxy-rt"
	victim.Spec.Template.Spec.ServiceAccountName = victim.Name
	if err := k8s.Create(ctx, victim); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), victim) })
	var cur appsv1.DaemonSet
	if err := op.Get(ctx, client.ObjectKeyFromObject(victim), &cur); err != nil {
		t.Fatalf("the operator reads DaemonSets (it watches its own): %v", err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "docker.io/library/busybox:latest"
	refused(t, "update kube-system DaemonSet's image", op.Update(ctx, &cur, client.DryRunAll))
	refused(t, "delete kube-system DaemonSet", op.Delete(ctx, &cur, client.DryRunAll))

	own := vrrpdShaped(groupNS, opts.VrrpdImage)
	if err := op.Create(ctx, own); err != nil {
		t.Fatalf("the operator creating a vrrpd-shaped DaemonSet in group namespace %s: %v", groupNS, err)
	}
	own.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
	own.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
	refused(t, "update own DaemonSet to privileged", op.Update(ctx, own, client.DryRunAll))
}

// TestRedTeamOperatorCannotReachBeyondItsObjects: impersonating the
// operator's ServiceAccount, deleting a ConfigMap in kube-system, deleting a
// ConfigMap no group controls in a group namespace, listing Pods cluster-wide
// or in kube-system, binding cluster-admin (or a Role of its own rights) to a
// ServiceAccount, writing a ServiceAccount outside the group namespaces,
// changing a Service's spec or labels and writing a Lease in kube-system are
// all refused. (On main its ClusterRole allowed every one except the
// cluster-admin binding.)
func TestRedTeamOperatorCannotReachBeyondItsObjects(t *testing.T) {
	installOperator(t)
	groupNS := newNamespace(t, "rt-reach")
	allowGroupNamespaces(t, groupNS)
	opts := installOptions(t)
	_, op := impersonate(t, operatorUser)
	waitPolicyActive(t, op, groupNS, opts.VrrpdImage)
	ctx := context.Background()

	// In keepalived-operator (the install's group namespace, where the
	// takeover's Role lets it delete ConfigMaps) the policy still refuses one
	// no group controls.
	for _, ns := range []string{"kube-system", groupNS, "keepalived-operator"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt-victim"}, Data: map[string]string{"k": "v"}}
		if err := k8s.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), cm) })
		refused(t, "delete ConfigMap "+ns+"/rt-victim", op.Delete(ctx, cm))
	}
	refused(t, "list Pods in every namespace", op.List(ctx, &corev1.PodList{}))
	refused(t, "list Pods in kube-system", op.List(ctx, &corev1.PodList{}, client.InNamespace("kube-system")))
	refused(t, "list Pods in a namespace without groups", op.List(ctx, &corev1.PodList{}, client.InNamespace(newNamespace(t, "rt-pods"))))

	for _, ns := range []string{"kube-system", groupNS} {
		refused(t, "bind cluster-admin in "+ns, op.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x-vrrpd"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "x-vrrpd", Namespace: ns}},
		}, client.DryRunAll))
		// RBAC lets it grant what it holds; the policy does not.
		refused(t, "a Role granting DaemonSet writes in "+ns, op.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x-vrrpd"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"create"}}},
		}, client.DryRunAll))
		refused(t, "bind its own rights (ClusterRole vrrp-operator) to a user in "+ns, op.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x-vrrpd"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "vrrp-operator"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}},
		}, client.DryRunAll))
	}
	refused(t, "create ServiceAccount in kube-system", op.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "x-vrrpd"}}, client.DryRunAll))

	// Services: their finalizers, nothing else (externalIPs would redirect a
	// Service's traffic through kube-proxy).
	svc := newService(t, groupNS, "victim", "", func(s *corev1.Service) { s.Finalizers = []string{serviceFinalizer} })
	var cur corev1.Service
	if err := op.Get(ctx, client.ObjectKeyFromObject(svc), &cur); err != nil {
		t.Fatal(err)
	}
	hijack := cur.DeepCopy()
	hijack.Spec.ExternalIPs = []string{"10.99.0.66"}
	refused(t, "set a Service's externalIPs", op.Update(ctx, hijack, client.DryRunAll))
	relabel := cur.DeepCopy()
	relabel.Labels = map[string]string{"x": "y"}
	refused(t, "label a Service", op.Update(ctx, relabel, client.DryRunAll))
	unfinalized := cur.DeepCopy()
	unfinalized.Finalizers = nil
	if err := op.Update(ctx, unfinalized, client.DryRunAll); err != nil {
		t.Errorf("removing the old finalizer of a Service (what the operator does): %v", err)
	}

	// Leases: its own namespace only (not kube-system's leader elections).
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "rt-leader"}}
	refused(t, "create a Lease in kube-system", op.Create(ctx, lease, client.DryRunAll))
	if err := op.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "rt-leader"}}, client.DryRunAll); err != nil {
		t.Errorf("a Lease in the operator's namespace (leader election): %v", err)
	}
}

// policyOperator installs the operator's manifests and runs the operator as
// its ServiceAccount with the install's flags (plus the given group
// namespaces, added to the policy's ConfigMap alike), its cache on the given
// namespaces.
func policyOperator(t testing.TB, groupNS []string, cached ...string) Options {
	t.Helper()
	installOperator(t)
	allowGroupNamespaces(t, groupNS...)
	opts := installOptions(t, groupNS...)
	cfg, op := impersonate(t, operatorUser)
	waitPolicyActive(t, op, groupNS[0], opts.VrrpdImage)
	startManagerWith(t, cfg, opts, cached...)
	return opts
}

// groupAuthor is a user who may create KeepalivedGroups in ns (and read
// them), nothing else: the threat model's group author.
func groupAuthor(t testing.TB, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	user := "author-" + ns
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "group-author"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"keepalivedgroups"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "group-author"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "group-author"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, o := range []client.Object{role, rb} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	_, c := impersonate(t, user)
	return c
}

// authorGroup creates a group as the author (retrying while the author's
// Role reaches the API server's authorizer cache).
func authorGroup(t testing.TB, author client.Client, ns, name string, mutate func(*v1alpha1.KeepalivedGroup)) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0"}}
		if mutate != nil {
			mutate(g)
		}
		return author.Create(context.Background(), g)
	})
}

// TestRedTeamGroupAuthorCannotPickImage: a group author's spec.image
// busybox does not run: the DaemonSet runs the operator's vrrpd image, the
// group says ImageSubstituted=True ImageNotAllowed, and a Warning Event
// tells the author. (On main the DaemonSet ran busybox as uid 0 on the host
// network with NET_ADMIN.)
func TestRedTeamGroupAuthorCannotPickImage(t *testing.T) {
	ns := newNamespace(t, "rt-image")
	opts := policyOperator(t, []string{ns}, ns)
	authorGroup(t, groupAuthor(t, ns), ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.Image = "docker.io/library/busybox:latest"
	})
	ctx := context.Background()
	eventually(t, 30*time.Second, func() error {
		var ds appsv1.DaemonSet
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g-vrrpd"}, &ds); err != nil {
			return err
		}
		if img := ds.Spec.Template.Spec.Containers[0].Image; img != opts.VrrpdImage {
			return fmt.Errorf("DaemonSet runs %q, want %q", img, opts.VrrpdImage)
		}
		c := meta.FindStatusCondition(getGroup(t, ns, "g").Status.Conditions, v1alpha1.ConditionImageSubstituted)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonImageNotAllowed {
			return fmt.Errorf("ImageSubstituted %+v, want True ImageNotAllowed", c)
		}
		ev := groupEvents(t, ns, "g", v1alpha1.ReasonImageNotAllowed)
		if len(ev) != 1 || ev[0].Type != corev1.EventTypeWarning {
			return fmt.Errorf("ImageNotAllowed events %+v, want one Warning", ev)
		}
		return nil
	})
}

// TestRedTeamGroupOutsideAllowedNamespacesGetsNothing: a group author in a
// namespace the admin did not allow gets no DaemonSet, ServiceAccount, Role
// or RoleBinding, Ready=False NamespaceNotAllowed and a Warning Event; a
// LoadBalancer Service of that group gets no address from its pool, and an
// externalIP its Service lists first does not block a Service of an allowed
// group. (On main every namespace's group got a DaemonSet.)
func TestRedTeamGroupOutsideAllowedNamespacesGetsNothing(t *testing.T) {
	allowed := newNamespace(t, "rt-allowed")
	ns := newNamespace(t, "rt-denied")
	policyOperator(t, []string{allowed}, allowed, ns)
	authorGroup(t, groupAuthor(t, ns), ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.230-10.99.0.231"}}
	})
	newService(t, ns, "web", ns+"/g", asLoadBalancer)
	ctx := context.Background()
	eventually(t, 30*time.Second, func() error {
		c := meta.FindStatusCondition(getGroup(t, ns, "g").Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNamespaceNotAllowed {
			return fmt.Errorf("Ready %+v, want False NamespaceNotAllowed", c)
		}
		if ev := groupEvents(t, ns, "g", v1alpha1.ReasonNamespaceNotAllowed); len(ev) != 1 || ev[0].Type != corev1.EventTypeWarning {
			return fmt.Errorf("NamespaceNotAllowed events %+v, want one Warning", ev)
		}
		if len(serviceEvents(t, ns, ReasonGroupNotAllowed)["web"]) == 0 {
			return fmt.Errorf("no GroupNotAllowed Event on the Service")
		}
		return nil
	})
	key := types.NamespacedName{Namespace: ns, Name: "g-vrrpd"}
	for _, o := range []client.Object{&appsv1.DaemonSet{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		if err := k8s.Get(ctx, key, o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s: %v, want none", o, key, err)
		}
	}
	var svc corev1.Service
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("the Service got %v from a group that may not run", svc.Status.LoadBalancer.Ingress)
	}
	if g := getGroup(t, ns, "g"); len(g.Status.RouterIDs) != 0 || len(g.Status.Instances) != 0 {
		t.Errorf("status holds router IDs %v and %d instances", g.Status.RouterIDs, len(g.Status.Instances))
	}

	// Nor can the group's Services squat an address: an externalIP listed
	// first through the refused group blocks no Service of an admitted one.
	newService(t, ns, "squat", ns+"/g", withExternalIPs("10.99.0.232"))
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
	newGroup(t, allowed, "lan", perService(nil))
	newService(t, allowed, "late", allowed+"/lan", withExternalIPs("10.99.0.232"))
	waitInstances(t, allowed, "lan", map[string]string{allowed + "/late": "10.99.0.232"})
	if ev := serviceEvents(t, allowed, ReasonAddressInUse)["late"]; len(ev) != 0 {
		t.Errorf("the admitted Service got AddressInUse: %v", ev)
	}
}

// TestRedTeamGroupAuthorCannotPickSegment: a group author who names
// `segment: mine` without the admin's leave stays in the shared router-ID
// space: its instance does not get the router ID another group on the wire
// already uses, the group says SegmentIgnored=True SegmentNotAllowed, and a
// Warning Event tells the author. (On main it got router ID 1, the other
// group's: the same virtual router.)
func TestRedTeamGroupAuthorCannotPickSegment(t *testing.T) {
	admin := newNamespace(t, "rt-seg-admin")
	ns := newNamespace(t, "rt-seg")
	newNodes(t, ns, 1, map[string]string{"rt-seg": ns})
	policyOperator(t, []string{admin, ns}, admin, ns)
	sel := map[string]string{"rt-seg": ns}
	newGroup(t, admin, "lan", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = sel })
	newService(t, admin, "a", admin+"/lan", withExternalIPs("10.99.0.150"))
	waitRouterIDs(t, admin, "lan", map[string]int{admin + "/a": 1})

	authorGroup(t, groupAuthor(t, ns), ns, "mine", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = sel
		g.Spec.Segment = "mine"
	})
	newService(t, ns, "b", ns+"/mine", withExternalIPs("10.99.0.151"))
	waitRouterIDs(t, ns, "mine", map[string]int{ns + "/b": 2})
	eventually(t, 20*time.Second, func() error {
		c := meta.FindStatusCondition(getGroup(t, ns, "mine").Status.Conditions, v1alpha1.ConditionSegmentIgnored)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonSegmentNotAllowed {
			return fmt.Errorf("SegmentIgnored %+v, want True SegmentNotAllowed", c)
		}
		if ev := groupEvents(t, ns, "mine", v1alpha1.ReasonSegmentNotAllowed); len(ev) != 1 || ev[0].Type != corev1.EventTypeWarning {
			return fmt.Errorf("SegmentNotAllowed events %+v, want one Warning", ev)
		}
		return nil
	})
	// The admin's group kept its ID.
	waitRouterIDs(t, admin, "lan", map[string]int{admin + "/a": 1})
}

// TestRedTeamVrrpdCannotReachBeyondItsGroup: impersonating a group's vrrpd
// ServiceAccount (a compromised vrrpd pod), with the RBAC the operator made
// for it under the install's policy: it reads its own group, and may not
// read another group or any Secret, write its group or its status, create
// Pods or DaemonSets, or list Services. (This held on main already; it guards
// the threat model's row against regressions.) It may update the status of its
// own group's KeepalivedMastership, not another group's, and create none.
func TestRedTeamVrrpdCannotReachBeyondItsGroup(t *testing.T) {
	ns := newNamespace(t, "rt-vrrpd")
	policyOperator(t, []string{ns}, ns)
	newGroup(t, ns, "g", nil)
	newGroup(t, ns, "other", nil)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pw"}, StringData: map[string]string{"password": "x"}}
	if err := k8s.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, vrrpd := impersonate(t, "system:serviceaccount:"+ns+":g-vrrpd")
	eventually(t, 30*time.Second, func() error {
		var g v1alpha1.KeepalivedGroup
		return vrrpd.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g"}, &g)
	})
	refused(t, "get another group", vrrpd.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, &v1alpha1.KeepalivedGroup{}))
	refused(t, "get a Secret", vrrpd.Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{}))
	refused(t, "list Services", vrrpd.List(ctx, &corev1.ServiceList{}, client.InNamespace(ns)))
	g := getGroup(t, ns, "g")
	g.Spec.Image = "docker.io/library/busybox:latest"
	refused(t, "update its group", vrrpd.Update(ctx, g, client.DryRunAll))
	g = getGroup(t, ns, "g")
	g.Status.RouterIDs = map[string]int{"x/y": 7}
	refused(t, "update its group's status", vrrpd.Status().Update(ctx, g, client.DryRunAll))
	refused(t, "create a DaemonSet", vrrpd.Create(ctx, vrrpdShaped(ns, "docker.io/library/busybox:latest"), client.DryRunAll))
	refused(t, "create a Pod", vrrpd.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "docker.io/library/busybox:latest"}}}}, client.DryRunAll))

	// Who holds what: the status of its own group's KeepalivedMastership, and nothing
	// else of that kind (issue 30).
	holder := v1alpha1.VIPHolder{Instance: ns + "/web", Service: ns + "/web", Node: "n1", VIPs: []string{"10.99.0.9"}, Since: metav1.NowMicro()}
	eventually(t, 30*time.Second, func() error {
		var m v1alpha1.KeepalivedMastership
		if err := vrrpd.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g"}, &m); err == nil {
			return fmt.Errorf("vrrpd may get the KeepalivedMastership itself; want only its status")
		}
		for _, name := range []string{"g", "other"} {
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &m); err != nil {
				return fmt.Errorf("the operator has not made %s's KeepalivedMastership: %v", name, err)
			}
		}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g"}, &m); err != nil {
			return err
		}
		m.Status.Holders = []v1alpha1.VIPHolder{holder}
		return vrrpd.Status().Update(ctx, &m, client.DryRunAll)
	})
	var other v1alpha1.KeepalivedMastership
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, &other); err != nil {
		t.Fatal(err)
	}
	if len(other.OwnerReferences) != 1 || other.OwnerReferences[0].Name != "other" || other.OwnerReferences[0].Kind != "KeepalivedGroup" {
		t.Errorf("KeepalivedMastership other: owners %+v, want the group", other.OwnerReferences)
	}
	other.Status.Holders = []v1alpha1.VIPHolder{holder}
	refused(t, "update another group's KeepalivedMastership status", vrrpd.Status().Update(ctx, &other, client.DryRunAll))
	refused(t, "get another group's KeepalivedMastership", vrrpd.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, &v1alpha1.KeepalivedMastership{}))
	var own v1alpha1.KeepalivedMastership
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "g"}, &own); err != nil {
		t.Fatal(err)
	}
	own.Labels = map[string]string{"x": "y"}
	refused(t, "update its own KeepalivedMastership (not the status)", vrrpd.Update(ctx, &own, client.DryRunAll))
	refused(t, "create a KeepalivedMastership", vrrpd.Create(ctx, &v1alpha1.KeepalivedMastership{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "new"}}, client.DryRunAll))
}
