package controller

import (
	"testing"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestEffectiveImage: spec.image runs only when it is the operator's image
// or on the allow-list (a reference, a repository with any tag or digest, a
// prefix ending in /); the original's keepalived images and everything else
// run the operator's image, each with its reason.
func TestEffectiveImage(t *testing.T) {
	const vrrpd = "ghcr.io/vrrp-operator/vrrpd:v1"
	allowed := []string{"registry.example/mirror/vrrpd", "registry.example/pinned:v2", "internal.example/"}
	for _, tc := range []struct {
		spec, image, reason string
	}{
		{"", vrrpd, ""},
		{vrrpd, vrrpd, ""},
		{"registry.example/mirror/vrrpd:v3", "registry.example/mirror/vrrpd:v3", ""},
		{"registry.example/mirror/vrrpd@sha256:abcd", "registry.example/mirror/vrrpd@sha256:abcd", ""},
		{"registry.example/mirror/vrrpd", "registry.example/mirror/vrrpd", ""},
		{"registry.example/pinned:v2", "registry.example/pinned:v2", ""},
		{"internal.example/team/vrrpd:x", "internal.example/team/vrrpd:x", ""},
		// Look-alikes of allowed entries.
		{"registry.example/mirror/vrrpd-evil:v1", vrrpd, v1alpha1.ReasonImageNotAllowed},
		{"registry.example/pinned:v3", vrrpd, v1alpha1.ReasonImageNotAllowed},
		{"internal.example.evil/vrrpd", vrrpd, v1alpha1.ReasonImageNotAllowed},
		{"ghcr.io/vrrp-operator/vrrpd:v2", vrrpd, v1alpha1.ReasonImageNotAllowed},
		{"docker.io/library/busybox:latest", vrrpd, v1alpha1.ReasonImageNotAllowed},
		// The original's images keep mapping to ours.
		{"registry.redhat.io/openshift4/ose-keepalived-ipfailover", vrrpd, v1alpha1.ReasonKeepalivedImage},
		{"quay.io/redhat-cop/keepalived:latest", vrrpd, v1alpha1.ReasonKeepalivedImage},
	} {
		got := effectiveImage(tc.spec, vrrpd, allowed)
		if got.image != tc.image || got.reason != tc.reason {
			t.Errorf("effectiveImage(%q) = %+v, want %q reason %q", tc.spec, got, tc.image, tc.reason)
		}
	}
	if got := effectiveImage("registry.example/mirror/vrrpd:v3", vrrpd, nil); got.image != vrrpd {
		t.Errorf("no allow-list: %+v, want the operator's image", got)
	}
}

// TestNamespaceLists: nil allows every namespace (the library's default), an
// empty list none, "*" every one.
func TestNamespaceLists(t *testing.T) {
	g := &v1alpha1.KeepalivedGroup{}
	g.Namespace, g.Spec.Segment = "team", "mine"
	for _, tc := range []struct {
		list    []string
		allowed bool
	}{
		{nil, true}, {[]string{}, false}, {[]string{"other"}, false}, {[]string{"other", "team"}, true}, {[]string{AnyNamespace}, true},
	} {
		r := &GroupReconciler{Options: Options{GroupNamespaces: tc.list, SegmentNamespaces: tc.list}}
		if r.groupAllowed(g) != tc.allowed {
			t.Errorf("GroupNamespaces %q: allowed %v", tc.list, !tc.allowed)
		}
		want := ""
		if tc.allowed {
			want = "mine"
		}
		if got := r.segment(g); got != want {
			t.Errorf("SegmentNamespaces %q: segment %q, want %q", tc.list, got, want)
		}
	}
	if err := ValidateImagePatterns([]string{"a/b", "c/"}); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"/", "a/*", "a b"} {
		if ValidateImagePatterns([]string{bad}) == nil {
			t.Errorf("image pattern %q accepted", bad)
		}
	}
}
