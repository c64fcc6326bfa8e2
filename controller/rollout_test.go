package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestDaemonSetRollout: what an operator restart and an upgrade do to a group's vrrpd
// DaemonSet, against a real API server. The DaemonSet rolls one node at a time and never
// runs two of the group's pods on a node (RollingUpdate, maxUnavailable 1, maxSurge 0)
// and carries the operator's image pull policy and pull secrets. A restart with the same
// settings leaves it alone (its generation, so the DaemonSet controller rolls nothing);
// a new vrrpd image (an operator upgrade: the default image is the operator's version)
// changes the pod template, so it rolls, except for a group whose image the admin
// pinned; new pull settings change the template too, and the old secrets go.
func TestDaemonSetRollout(t *testing.T) {
	ns := newNamespace(t, "rollout")
	newGroup(t, ns, "g", nil)
	const pinned = "example.com/vrrpd:pinned"
	newGroup(t, ns, "pinned", func(g *v1alpha1.KeepalivedGroup) { g.Spec.Image = pinned })
	ctx := context.Background()
	v1 := Options{
		VrrpdImage:            "example.com/vrrpd:v1",
		AllowedImages:         []string{pinned},
		VrrpdImagePullPolicy:  corev1.PullIfNotPresent,
		VrrpdImagePullSecrets: []string{"regcred", "mirror-cred"},
	}

	get := func(group string) *appsv1.DaemonSet {
		t.Helper()
		var ds appsv1.DaemonSet
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: group + "-vrrpd"}, &ds); err != nil {
			t.Fatal(err)
		}
		return &ds
	}
	// check: the DaemonSet of group runs image with the pull settings of opts, and the
	// update strategy.
	check := func(ds *appsv1.DaemonSet, image string, opts Options) {
		t.Helper()
		pod := ds.Spec.Template.Spec
		c := pod.Containers[0]
		if c.Image != image || c.ImagePullPolicy != opts.VrrpdImagePullPolicy {
			t.Errorf("%s: image %q pull policy %q, want %q %q", ds.Name, c.Image, c.ImagePullPolicy, image, opts.VrrpdImagePullPolicy)
		}
		var secrets []string
		for _, s := range pod.ImagePullSecrets {
			secrets = append(secrets, s.Name)
		}
		if !slices.Equal(secrets, opts.VrrpdImagePullSecrets) {
			t.Errorf("%s: imagePullSecrets %v, want %v", ds.Name, secrets, opts.VrrpdImagePullSecrets)
		}
		u := ds.Spec.UpdateStrategy
		if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil ||
			u.RollingUpdate.MaxUnavailable == nil || u.RollingUpdate.MaxUnavailable.String() != "1" ||
			u.RollingUpdate.MaxSurge == nil || u.RollingUpdate.MaxSurge.String() != "0" {
			t.Errorf("%s: updateStrategy %+v, want RollingUpdate maxUnavailable 1 maxSurge 0", ds.Name, u)
		}
	}

	m := startManagerWith(t, testConfig, v1, ns)
	waitApplied(t, m, ns, "g", "pinned")
	m.stop()
	g1, p1 := get("g"), get("pinned")
	check(g1, v1.VrrpdImage, v1)
	check(p1, pinned, v1)

	// A restart with the same settings: the new process applies (it remembers nothing
	// of the last one), and the API server finds nothing to change.
	m = startManagerWith(t, testConfig, v1, ns)
	waitApplied(t, m, ns, "g", "pinned")
	m.stop()
	for _, was := range []*appsv1.DaemonSet{g1, p1} {
		is := get(was.Labels[labelGroup])
		if is.Generation != was.Generation || is.ResourceVersion != was.ResourceVersion {
			t.Errorf("%s after a restart: generation %d resourceVersion %s, was %d %s",
				is.Name, is.Generation, is.ResourceVersion, was.Generation, was.ResourceVersion)
		}
	}

	// An upgrade: a new vrrpd image. The group that runs the operator's image rolls; the
	// pinned one does not.
	v2 := v1
	v2.VrrpdImage = "example.com/vrrpd:v2"
	m = startManagerWith(t, testConfig, v2, ns)
	eventually(t, 20*time.Second, func() error {
		if img := get("g").Spec.Template.Spec.Containers[0].Image; img != v2.VrrpdImage {
			return fmt.Errorf("image %q, want %q", img, v2.VrrpdImage)
		}
		return nil
	})
	waitApplied(t, m, ns, "pinned")
	m.stop()
	g2, p2 := get("g"), get("pinned")
	check(g2, v2.VrrpdImage, v2)
	check(p2, pinned, v2)
	if g2.Generation != g1.Generation+1 {
		t.Errorf("g after the upgrade: generation %d, want %d (one template change)", g2.Generation, g1.Generation+1)
	}
	if p2.Generation != p1.Generation {
		t.Errorf("pinned after the upgrade: generation %d, want %d unchanged", p2.Generation, p1.Generation)
	}

	// New pull settings: the template changes, and the secrets are the new list only.
	v3 := v2
	v3.VrrpdImagePullPolicy, v3.VrrpdImagePullSecrets = corev1.PullAlways, []string{"regcred-2"}
	m = startManagerWith(t, testConfig, v3, ns)
	eventually(t, 20*time.Second, func() error {
		if pp := get("g").Spec.Template.Spec.Containers[0].ImagePullPolicy; pp != corev1.PullAlways {
			return fmt.Errorf("imagePullPolicy %q", pp)
		}
		return nil
	})
	waitApplied(t, m, ns, "g", "pinned")
	m.stop()
	check(get("g"), v3.VrrpdImage, v3)
	check(get("pinned"), pinned, v3)
}

// waitApplied waits until m's group reconciler has server-side applied the DaemonSet of
// each group (its memo of applied objects, set after the API server answered).
func waitApplied(t *testing.T, m *testManager, ns string, groups ...string) {
	t.Helper()
	r := m.r.Groups
	eventually(t, 20*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, g := range groups {
			if _, ok := r.applied[ns+"/"+g+"/"+fmt.Sprintf("%T", &appsv1.DaemonSet{})]; !ok {
				return fmt.Errorf("the DaemonSet of %s/%s not applied yet", ns, g)
			}
		}
		return nil
	})
}

// TestValidatePullSettings: the pull settings the API server would refuse in every
// DaemonSet are refused at start.
func TestValidatePullSettings(t *testing.T) {
	for _, tc := range []struct {
		policy  corev1.PullPolicy
		secrets []string
		ok      bool
	}{
		{"", nil, true},
		{corev1.PullAlways, []string{"regcred"}, true},
		{corev1.PullNever, []string{"a.b-c", "d"}, true},
		{"always", nil, false},
		{corev1.PullIfNotPresent, []string{"Bad_Name"}, false},
		{"", []string{"ns/secret"}, false},
	} {
		if err := ValidatePullSettings(tc.policy, tc.secrets); (err == nil) != tc.ok {
			t.Errorf("ValidatePullSettings(%q, %q) = %v, want ok %v", tc.policy, tc.secrets, err, tc.ok)
		}
	}
}
