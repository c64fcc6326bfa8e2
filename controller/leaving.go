package controller

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// A node leaving a group whose Services share routers (docs/design/router-sharing.md,
// §4, "A node leaving is drained first"): spec.nodeSelector no longer matches it, or its
// Node is gone. Dropped from status.nodes in one write, its routers (@c/m1,x and
// @c/x,m1) vanish and their members join routers of the remaining nodes in that same
// write: the leaving node resigns while the nodes that take its members over add them
// through routers they master, after vrrpd's reload hold-back and a reload of hundreds
// of addresses (§4 case 3 for all of them at once; the movement lab measured 798 of
// 2,000 addresses unheld longer than a failover). So it goes in two writes instead:
//
//   - write 1 keeps the node in status.nodes, excluded (v1alpha1.ExclusionLeaving): it
//     keeps its rank, so no router changes key and no member changes router, and it
//     gets, in each router it masters, a priority one under the router's next
//     node's (excludedPriorities, leavingPriority), and 0 in the others: the next
//     node preempts it and takes the router over whole, breaking before it makes,
//     while the node after that keeps hearing a master above it (a resignation,
//     priority 0 everywhere, made those two race a Skew_Time apart, and the
//     movement lab saw both take a router on a loaded host);
//   - write 2, once KeepalivedMastership names the node master of none of the group's
//     instances (and names a master of each), or after the timed fallback, drops it:
//     at 2 exact ranks a member of @c/m1,x then moves to @c/x,y, both mastered by x
//     (§4 case 1: one write, bridged on x by vrrpd, no gap).
//
// The state in flight is the status (the node is in status.nodes and not a selected
// member); only when the leave began is remembered (leaveClocks), for the fallback,
// and an operator that restarts starts that clock anew, which can delay write 2 by
// one fallback and never hastens it. PerService groups drop a leaving node in one
// write as before: their instances are per Service and no member changes instance.

// leaveClocks remembers, per group, when each leaving node was first kept.
type leaveClocks struct {
	since map[types.NamespacedName]map[string]time.Time
}

// leavingNodes returns the nodes of g's status that are no longer selected members
// (members: memberNodes) and must stay one more write, excluded as leaving, and when to
// reconcile again to look at them (0: none stays). Only groups with shared routers
// drain (sharingApplies).
func (r *GroupReconciler) leavingNodes(ctx context.Context, g *v1alpha1.KeepalivedGroup, members []v1alpha1.GroupNode) ([]v1alpha1.GroupNode, time.Duration, error) {
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	var leaving []v1alpha1.GroupNode
	if sharingApplies(g) {
		for _, n := range g.Status.Nodes {
			if !slices.ContainsFunc(members, func(m v1alpha1.GroupNode) bool { return m.Name == n.Name }) {
				leaving = append(leaving, n)
			}
		}
	}
	if len(leaving) == 0 {
		r.mu.Lock()
		delete(r.leaveClocks.since, key)
		r.mu.Unlock()
		return nil, 0, nil
	}
	masters, err := r.masters(ctx, g)
	if err != nil {
		return nil, 0, err
	}
	now := time.Now()
	r.mu.Lock()
	ages := r.leaveClocks.observe(key, leaving, now)
	r.mu.Unlock()
	keep, wait := drainStep(g.Status.Instances, leaving, masters, ages, groupSettings(g))
	return keep, wait, nil
}

// observe returns how long each leaving node has been kept (a node first seen now:
// zero) and forgets the nodes not leaving any more. The caller holds the reconciler's
// lock.
func (c *leaveClocks) observe(group types.NamespacedName, leaving []v1alpha1.GroupNode, now time.Time) map[string]time.Duration {
	if c.since == nil {
		c.since = map[types.NamespacedName]map[string]time.Time{}
	}
	names := make([]string, len(leaving))
	for i, n := range leaving {
		names[i] = n.Name
	}
	next := carryClocks(c.since[group], names, now)
	c.since[group] = next
	ages := make(map[string]time.Duration, len(next))
	for k, t := range next {
		ages[k] = now.Sub(t)
	}
	return ages
}

// carryClocks is seen's start times for keys, a key not in seen starting at now; the
// keys not listed are forgotten (leaveClocks, moveClocks.written).
func carryClocks(seen map[string]time.Time, keys []string, now time.Time) map[string]time.Time {
	next := make(map[string]time.Time, len(keys))
	for _, k := range keys {
		t, ok := seen[k]
		if !ok {
			t = now
		}
		next[k] = t
	}
	return next
}

// drainStep decides which leaving nodes stay (excluded as v1alpha1.ExclusionLeaving)
// in the next write, and when to look again. A node is dropped once masters (the
// group's KeepalivedMastership; nil when not served) names it master of none of the
// status' instances and names a master for each family of every instance listing
// addresses (an empty or partial object, as when vrrpd does not publish, proves
// nothing), or once it has been kept for the timed fallback: moveWait of the group's
// settings, times mastershipWaitFactor when KeepalivedMastership is served (its
// vrrpd was cut off, say, and its entries never change). With mastership served, the
// group is polled every advertisement interval (at least minMovePoll, at most a
// second), as moves in flight are; without it, when the fallback is due.
func drainStep(status []v1alpha1.Instance, leaving []v1alpha1.GroupNode, masters map[string]string, ages map[string]time.Duration, s v1alpha1.InstanceSettings) ([]v1alpha1.GroupNode, time.Duration) {
	limit := moveWait(s)
	poll := min(max(s.AdvertInterval.Duration, minMovePoll), time.Second)
	if masters != nil {
		limit *= mastershipWaitFactor
	}
	complete, named := masterNamed(status, masters)
	var keep []v1alpha1.GroupNode
	var wait time.Duration
	for _, n := range leaving {
		age := ages[n.Name]
		if age >= limit || (masters != nil && complete && !named[n.Name]) {
			continue
		}
		n.Excluded = v1alpha1.ExclusionLeaving
		keep = append(keep, n)
		d := limit - age
		if masters != nil {
			d = min(d, poll)
		}
		if wait == 0 || d < wait {
			wait = max(d, 50*time.Millisecond)
		}
	}
	return keep, wait
}

// masterNamed reads KeepalivedMastership for the status' instances: whether it names
// a master of each family of every instance that lists addresses (vrrpd's names:
// key, or key/ipv4 and key/ipv6 for a dual-stack one), and the nodes it names.
func masterNamed(status []v1alpha1.Instance, masters map[string]string) (complete bool, named map[string]bool) {
	complete, named = true, map[string]bool{}
	for _, in := range status {
		var v4, v6 bool
		for _, a := range parseVIPs(in.VIPs) {
			v4, v6 = v4 || a.Is4(), v6 || a.Is6()
		}
		names := []string{in.Key}
		if v4 && v6 {
			names = []string{in.Key + "/ipv4", in.Key + "/ipv6"}
		}
		for _, k := range names {
			node, ok := masters[k]
			switch {
			case ok && node != "":
				named[node] = true
			case v4 || v6:
				complete = false
			}
		}
	}
	return complete, named
}

// planNodes are the nodes of a group's plan: the Nodes matching its nodeSelector
// (memberNodes) and the leaving nodes kept, sorted by name as memberNodes sorts them,
// so a leaving node keeps its place in the ranking.
func planNodes(g *v1alpha1.KeepalivedGroup, nodes []corev1.Node, leaving []v1alpha1.GroupNode) []v1alpha1.GroupNode {
	members := memberNodes(g, nodes)
	if len(leaving) == 0 {
		return members
	}
	out := append(members, leaving...)
	slices.SortFunc(out, func(a, b v1alpha1.GroupNode) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
