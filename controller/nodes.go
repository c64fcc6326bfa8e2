package controller

import (
	"cmp"
	"context"
	"net/netip"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// memberNodes are the Nodes matching the group's nodeSelector, sorted by
// name, with the addresses unicast peers use.
func memberNodes(g *v1alpha1.KeepalivedGroup, nodes []corev1.Node) []v1alpha1.GroupNode {
	sel := labels.SelectorFromSet(g.Spec.NodeSelector)
	var out []v1alpha1.GroupNode
	for i := range nodes {
		n := &nodes[i]
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		out = append(out, v1alpha1.GroupNode{Name: n.Name, Addresses: nodeAddresses(n), Excluded: exclusion(n)})
	}
	slices.SortFunc(out, func(a, b v1alpha1.GroupNode) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// nodeAddresses: the first InternalIP of each family, IPv4 first; a family
// without an InternalIP falls back to its first ExternalIP.
func nodeAddresses(n *corev1.Node) []string {
	pick := func(want func(netip.Addr) bool) string {
		for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
			for _, a := range n.Status.Addresses {
				if a.Type != typ {
					continue
				}
				if ip, err := netip.ParseAddr(a.Address); err == nil && want(ip) {
					return ip.String()
				}
			}
		}
		return ""
	}
	var out []string
	if v4 := pick(netip.Addr.Is4); v4 != "" {
		out = append(out, v4)
	}
	if v6 := pick(func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }); v6 != "" {
		out = append(out, v6)
	}
	return out
}

// exclusion names the label or taint that takes n out of every instance
// (v1alpha1.ExclusionLabel, v1alpha1.ExclusionTaints), or "" when n takes
// part. The label counts whatever its value, as for Kubernetes' service
// controller and MetalLB; a taint whatever its effect. spec.unschedulable
// (a cordon) is not among them: a cordon says where new pods go, and a drain
// that moved VIPs for it would move them for every routine drain.
func exclusion(n *corev1.Node) string {
	if _, ok := n.Labels[v1alpha1.ExclusionLabel]; ok {
		return v1alpha1.ExclusionLabel
	}
	for _, t := range n.Spec.Taints {
		if slices.Contains(v1alpha1.ExclusionTaints, t.Key) {
			return t.Key
		}
	}
	return ""
}

// excludedPriorities returns prios with PriorityNotMember for every excluded
// node (nodes[i].Excluded), leaving the others' priorities as they are: the
// node's vrrpd then resigns (priority 0), the next-ranked node takes over
// after its Skew_Time at the priority it already had, and nobody else's
// configuration changes with the exclusion. prios is not modified (it may be
// the priority memo's).
//
// A node leaving a shared group (v1alpha1.ExclusionLeaving) that ranks first
// is handed over instead (leavingPriority): it steps down to just under the
// next node, which preempts it.
func excludedPriorities(prios []uint8, nodes []v1alpha1.GroupNode) []uint8 {
	var out []uint8
	top, leavingTop := -1, false
	for i, n := range nodes {
		if i >= len(prios) {
			break
		}
		if top < 0 || prios[i] > prios[top] {
			top, leavingTop = i, n.Excluded == v1alpha1.ExclusionLeaving
		}
		if n.Excluded == "" {
			continue
		}
		if out == nil {
			out = slices.Clone(prios)
		}
		out[i] = v1alpha1.PriorityNotMember
	}
	if out == nil {
		return prios
	}
	if leavingTop {
		out[top] = leavingPriority(out)
	}
	return out
}

// leavingPriority is the priority of a leaving node that ranks first in an
// instance whose other priorities (the leaving node's 0 among them) are
// prios: one under the next node's, when that stays above the third's. A
// resignation (priority 0) made the next node and the one after it race, a
// Skew_Time apart: issue 31's leave lab saw the third take a router of 350
// addresses beside the second on a loaded host. Preempted instead, the
// leaving node serves its addresses until the next node's takeover, which
// breaks before it makes (vrrp.Config.BreakFirstPreempt), and the third keeps
// hearing a master above it throughout. Without room between the two (a
// countdown of adjacent priorities, or no next node) it resigns as before.
func leavingPriority(prios []uint8) uint8 {
	var second, third uint8
	for _, p := range prios {
		switch {
		case p > second:
			second, third = p, second
		case p > third:
			third = p
		}
	}
	if second == 0 || second-1 <= third {
		return v1alpha1.PriorityNotMember
	}
	return second - 1
}

// nodeToGroups enqueues the groups whose nodeSelector matches a Node (before
// or after the change), and only when its labels, addresses or exclusion
// (an exclusion taint) changed:
// kubelets update Node status every few seconds, which must not reconcile
// every group.
type nodeToGroups struct{ c client.Client }

func (h nodeToGroups) enqueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], nodes ...*corev1.Node) {
	var groups v1alpha1.KeepalivedGroupList
	if err := h.c.List(ctx, &groups); err != nil {
		return
	}
	for i := range groups.Items {
		g := &groups.Items[i]
		sel := labels.SelectorFromSet(g.Spec.NodeSelector)
		for _, n := range nodes {
			if sel.Matches(labels.Set(n.Labels)) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
				break
			}
		}
	}
}

// handler enqueues on every Node event but an update that changed neither its labels,
// its addresses nor its exclusion (a taint: exclusion).
func (h nodeToGroups) handler() handler.Funcs {
	return objectHandler(h.enqueue, func(o, n *corev1.Node) bool {
		return !reflect.DeepEqual(o.Labels, n.Labels) || !reflect.DeepEqual(nodeAddresses(o), nodeAddresses(n)) || exclusion(o) != exclusion(n)
	})
}
