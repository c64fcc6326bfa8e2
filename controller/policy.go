package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// The cluster admin's limits on what a group's author may ask for (the
// operator's flags --group-namespaces, --allowed-vrrpd-images and
// --segment-namespaces; the install's ValidatingAdmissionPolicy enforces the
// same lists in the API server, against the operator itself). Creating a
// KeepalivedGroup runs pods with host networking, NET_ADMIN and NET_RAW on
// the nodes its author selects, so it is as privileged as creating such pods:
//
//   - a group outside the allowed namespaces gets nothing (no DaemonSet,
//     ServiceAccount, Role, RoleBinding, SCC binding or PodMonitor) and
//     Ready=False NamespaceNotAllowed;
//   - spec.image runs only when it is the operator's vrrpd image or on the
//     allow-list; otherwise the operator's image runs and the group says why;
//   - spec.segment, which opens a router-ID space of its own (and so lets
//     the group reuse IDs other groups hold), is honoured only in the
//     namespaces the admin named; elsewhere the group shares the default
//     space.

// AnyNamespace in a namespace list allows every namespace.
const AnyNamespace = "*"

// namespaceList is a list of namespace names, AnyNamespace for all.
type namespaceList []string

func (l namespaceList) allows(ns string) bool {
	return slices.Contains(l, AnyNamespace) || slices.Contains(l, ns)
}

// SplitList splits a comma-separated flag value into its trimmed, non-empty
// entries.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ValidateImagePatterns checks the entries of an image allow-list: each an
// image reference (repository, optionally :tag or @digest) or a repository
// prefix ending in "/". The same forms the admission policy matches.
func ValidateImagePatterns(patterns []string) error {
	for _, p := range patterns {
		if p == "/" || strings.ContainsAny(p, " \t*") {
			return fmt.Errorf("image pattern %q: want an image reference or a repository prefix ending in /", p)
		}
	}
	return nil
}

// imageAllowed reports whether image matches one of the patterns: the same
// reference, the repository with any tag or digest, or a prefix ending in
// "/" (a registry or a path of one). "ghcr.io/x/vrrpd" allows
// "ghcr.io/x/vrrpd:v1" and "ghcr.io/x/vrrpd@sha256:...", not
// "ghcr.io/x/vrrpd-evil". The admission policy's CEL (deploy/operator/policy)
// is the same rule.
func imageAllowed(image string, patterns []string) bool {
	for _, p := range patterns {
		switch {
		case image == p,
			strings.HasSuffix(p, "/") && strings.HasPrefix(image, p),
			strings.HasPrefix(image, p+":"), strings.HasPrefix(image, p+"@"):
			return true
		}
	}
	return false
}

// imageChoice is the image a group's DaemonSet runs and why.
type imageChoice struct {
	image string
	// reason is empty when spec.image (or the default, for none) runs;
	// else ReasonKeepalivedImage or ReasonImageNotAllowed.
	reason string
}

// effectiveImage is the image the DaemonSet runs: spec.image when it is the
// operator's vrrpd image or on the allow-list; the vrrpd image for none, for
// one naming keepalived (the original's images, which take the original's
// manifests over unchanged) and for any other.
func effectiveImage(spec, vrrpd string, allowed []string) imageChoice {
	switch {
	case spec == "" || spec == vrrpd:
		return imageChoice{image: vrrpd}
	case imageAllowed(spec, allowed):
		return imageChoice{image: spec}
	case strings.Contains(strings.ToLower(spec), "keepalived"):
		return imageChoice{image: vrrpd, reason: v1alpha1.ReasonKeepalivedImage}
	}
	return imageChoice{image: vrrpd, reason: v1alpha1.ReasonImageNotAllowed}
}

// groupAllowed reports whether the group's namespace may hold groups
// (Options.GroupNamespaces; nil allows every namespace).
func (r *GroupReconciler) groupAllowed(g *v1alpha1.KeepalivedGroup) bool {
	return r.GroupNamespaces == nil || namespaceList(r.GroupNamespaces).allows(g.Namespace)
}

// segment names the L2 segment a group's VRRP traffic lives on: its
// spec.segment where the admin lets the group's namespace name one
// (Options.SegmentNamespaces), else "" for the cluster's default segment.
// Groups of one segment must not share router IDs (the original's issues 26,
// 32 and 66). The interface name says nothing about the wire: one group may
// name eth0, another interfaceFromIP, and both reach the same switch, so
// without an admin's word every group is on the one default segment; and a
// group author who could pick a segment could pick router IDs that another
// group on the same wire holds (the same VRID is the same virtual router).
func (r *GroupReconciler) segment(g *v1alpha1.KeepalivedGroup) string {
	if !r.segmentAllowed(g) {
		return ""
	}
	return g.Spec.Segment
}

func (r *GroupReconciler) segmentAllowed(g *v1alpha1.KeepalivedGroup) bool {
	return r.SegmentNamespaces == nil || namespaceList(r.SegmentNamespaces).allows(g.Namespace)
}

// refuseGroup handles a group in a namespace that may not hold groups: it
// applies nothing (a DaemonSet, ServiceAccount, Role or binding there would
// be the escalation this refusal is for), and its status says so with
// Ready=False NamespaceNotAllowed and no nodes, instances or router IDs, so
// that a vrrpd left from before the admin narrowed the list announces
// nothing and other groups do not avoid its IDs. A Warning Event goes with
// the condition's first appearance.
func (r *GroupReconciler) refuseGroup(ctx context.Context, g *v1alpha1.KeepalivedGroup) error {
	msg := fmt.Sprintf("namespace %s may not hold KeepalivedGroups (the operator's --group-namespaces): no vrrpd DaemonSet, ServiceAccount or RBAC is created for this group", g.Namespace)
	st := v1alpha1.KeepalivedGroupStatus{ObservedGeneration: g.Generation, Conditions: slices.Clone(g.Status.Conditions)}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNamespaceNotAllowed, Message: msg, ObservedGeneration: g.Generation})
	slices.SortFunc(st.Conditions, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	if was := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); r.Recorder != nil &&
		(was == nil || was.Reason != v1alpha1.ReasonNamespaceNotAllowed || was.Message != msg) {
		r.Recorder.Eventf(groupRef(g), nil, corev1.EventTypeWarning, v1alpha1.ReasonNamespaceNotAllowed, actionReconcile, "%s", msg)
	}
	if equality.Semantic.DeepEqual(g.Status, st) {
		return nil
	}
	g.Status = st
	return r.Client.Status().Update(ctx, g)
}
