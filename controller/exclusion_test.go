package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/placement"
)

// TestExclusionUnitRules: the label (any value) and the two taints (any effect) exclude a
// node; a cordon does not.
func TestExclusionUnitRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		node corev1.Node
		want string
	}{
		{"plain", corev1.Node{}, ""},
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}, ""},
		{"label, empty value", nodeWith(map[string]string{v1alpha1.ExclusionLabel: ""}), v1alpha1.ExclusionLabel},
		{"label, false", nodeWith(map[string]string{v1alpha1.ExclusionLabel: "false"}), v1alpha1.ExclusionLabel},
		{"autoscaler", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1alpha1.TaintToBeDeleted, Value: "1700000000", Effect: corev1.TaintEffectNoSchedule}}}}, v1alpha1.TaintToBeDeleted},
		{"out of service", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1alpha1.TaintOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}}}, v1alpha1.TaintOutOfService},
		{"other taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}}}}, ""},
	} {
		if got := exclusion(&tc.node); got != tc.want {
			t.Errorf("%s: exclusion %q, want %q", tc.name, got, tc.want)
		}
	}
	prios := []uint8{254, 204, 79}
	memo := slices.Clone(prios)
	got := excludedPriorities(prios, []v1alpha1.GroupNode{{Name: "a", Excluded: v1alpha1.ExclusionLabel}, {Name: "b"}, {Name: "c"}})
	if !slices.Equal(got, []uint8{0, 204, 79}) || !slices.Equal(prios, memo) {
		t.Errorf("excludedPriorities: %v (input now %v), want [0 204 79] and the input untouched", got, prios)
	}
}

func nodeWith(labels map[string]string) corev1.Node {
	var n corev1.Node
	n.Labels = labels
	return n
}

// TestExclusionTakesNodeOut runs the operator against the API server: labelling a member
// node node.kubernetes.io/exclude-from-external-load-balancers (or tainting it
// ToBeDeletedByClusterAutoscaler or out-of-service) gives it priority 0 in every instance
// of every group and names the reason in status.nodes, without changing any other node's
// priority; a cordon changes nothing; taking the label off restores the placement.
// g1 is routerSharing: PerService (an instance per Service, each at its rendezvous
// placement), g2 has the default, shared routers (the exclusion zeroes the node in every
// router and moves no Service between routers).
func TestExclusionTakesNodeOut(t *testing.T) {
	ns := newNamespace(t, "exclude")
	startManager(t, ns)
	ctx := context.Background()
	sel := map[string]string{"exclude": ns}
	nodes := newNodes(t, ns, 3, sel)
	for _, g := range []string{"g1", "g2"} {
		newGroup(t, ns, g, func(grp *v1alpha1.KeepalivedGroup) {
			grp.Spec.NodeSelector = sel
			if g == "g1" {
				grp.Spec.RouterSharing = v1alpha1.RouterSharingPerService
			}
		})
		for i := range 4 {
			newService(t, ns, fmt.Sprintf("%s-svc%d", g, i), ns+"/"+g, withExternalIPs(fmt.Sprintf("10.99.%d.%d", map[string]int{"g1": 1, "g2": 2}[g], 10+i)))
		}
	}
	prioritiesOf := func(g string) (map[string][]uint8, []v1alpha1.GroupNode, error) {
		grp := getGroup(t, ns, g)
		vips := 0
		for _, in := range grp.Status.Instances {
			vips += len(in.VIPs)
			if shared := strings.HasPrefix(in.Key, "@"); shared != (g == "g2") {
				return nil, nil, fmt.Errorf("group %s: instance %s", g, in.Key)
			}
		}
		if len(grp.Status.Nodes) != 3 || vips != 4 || g == "g1" && len(grp.Status.Instances) != 4 || len(grp.Status.RouterIDs) != 4 {
			return nil, nil, fmt.Errorf("group %s: %d nodes, %d instances, %d VIPs, %d routerIDs", g, len(grp.Status.Nodes), len(grp.Status.Instances), vips, len(grp.Status.RouterIDs))
		}
		out := map[string][]uint8{}
		for _, in := range grp.Status.Instances {
			p, err := v1alpha1.DecodePriorities(in.Priorities, 3)
			if err != nil {
				return nil, nil, err
			}
			out[in.Key] = p
		}
		return out, grp.Status.Nodes, nil
	}
	// The placement each instance gets with every node taking part.
	placed := map[string]map[string][]uint8{}
	for _, g := range []string{"g1", "g2"} {
		eventually(t, 10*time.Second, func() error {
			p, _, err := prioritiesOf(g)
			placed[g] = p
			return err
		})
		for key, p := range placed[g] {
			if g == "g2" {
				// A shared router's priorities: its exact ranks (254, 204) and its
				// shared tail, each node once (TestSharedRoutersAtScale checks the rest).
				if s := slices.Sorted(slices.Values(p)); !slices.Equal(s, []uint8{79, 204, 254}) {
					t.Fatalf("%s: priorities %v, want 254, 204 and 79 in some order", key, p)
				}
				continue
			}
			if want := placement.Priorities(key, nodes); !slices.Equal(p, want) {
				t.Fatalf("%s: priorities %v, want the placement's %v", key, p, want)
			}
		}
	}
	// The node that masters the most instances of g1.
	count := map[int]int{}
	for _, p := range placed["g1"] {
		count[slices.Index(p, placement.MasterPriority)]++
	}
	victim := 0
	for i := range nodes {
		if count[i] > count[victim] {
			victim = i
		}
	}
	wantExcluded := func(reason string) error {
		for _, g := range []string{"g1", "g2"} {
			got, st, err := prioritiesOf(g)
			if err != nil {
				return err
			}
			for i, n := range st {
				want := ""
				if i == victim {
					want = reason
				}
				if n.Excluded != want {
					return fmt.Errorf("group %s: node %s excluded %q, want %q", g, n.Name, n.Excluded, want)
				}
			}
			for key, p := range got {
				want := slices.Clone(placed[g][key])
				if reason != "" {
					want[victim] = v1alpha1.PriorityNotMember
				}
				if !slices.Equal(p, want) {
					return fmt.Errorf("%s: priorities %v, want %v", key, p, want)
				}
			}
		}
		return nil
	}
	update := func(mutate func(*corev1.Node)) {
		t.Helper()
		var n corev1.Node
		if err := k8s.Get(ctx, types.NamespacedName{Name: nodes[victim]}, &n); err != nil {
			t.Fatal(err)
		}
		mutate(&n)
		if err := k8s.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}

	// A cordon moves nothing.
	update(func(n *corev1.Node) { n.Spec.Unschedulable = true })
	time.Sleep(500 * time.Millisecond) // a reconcile would have happened by now
	if err := wantExcluded(""); err != nil {
		t.Fatalf("after a cordon: %v", err)
	}
	// The label takes the node out of every instance of both groups.
	update(func(n *corev1.Node) { n.Labels[v1alpha1.ExclusionLabel] = "" })
	eventually(t, 10*time.Second, func() error { return wantExcluded(v1alpha1.ExclusionLabel) })
	update(func(n *corev1.Node) { delete(n.Labels, v1alpha1.ExclusionLabel) })
	eventually(t, 10*time.Second, func() error { return wantExcluded("") })
	// So do the autoscaler's and the out-of-service taints (a change of spec.taints
	// alone must wake the groups).
	for _, taint := range []corev1.Taint{
		{Key: v1alpha1.TaintToBeDeleted, Value: "1700000000", Effect: corev1.TaintEffectNoSchedule},
		{Key: v1alpha1.TaintOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute},
	} {
		update(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} })
		eventually(t, 10*time.Second, func() error { return wantExcluded(taint.Key) })
		update(func(n *corev1.Node) { n.Spec.Taints = nil })
		eventually(t, 10*time.Second, func() error { return wantExcluded("") })
	}
}

// TestLeavingPriorities: a node leaving a shared group that ranks first in an instance
// steps down to one under the next node (which preempts it), above the third; ranked
// lower, or without room between the next two, or with nobody left, it resigns (0). An
// excluded node that ranks first still resigns.
func TestLeavingPriorities(t *testing.T) {
	leaving := func(excl ...string) []v1alpha1.GroupNode {
		var out []v1alpha1.GroupNode
		for i, e := range excl {
			out = append(out, v1alpha1.GroupNode{Name: fmt.Sprintf("n%d", i), Excluded: e})
		}
		return out
	}
	L, X := v1alpha1.ExclusionLeaving, v1alpha1.ExclusionLabel
	for _, c := range []struct {
		name  string
		prios []uint8
		nodes []v1alpha1.GroupNode
		want  []uint8
	}{
		{"leaving top", []uint8{254, 204, 79}, leaving(L, "", ""), []uint8{203, 204, 79}},
		{"leaving top, ranked last in the slice", []uint8{79, 204, 254, 29}, leaving("", "", L, ""), []uint8{79, 204, 203, 29}},
		{"leaving second", []uint8{254, 204, 79}, leaving("", L, ""), []uint8{254, 0, 79}},
		{"leaving top, adjacent next two", []uint8{254, 120, 119}, leaving(L, "", ""), []uint8{0, 120, 119}},
		{"leaving top, one node left", []uint8{254, 204}, leaving(L, ""), []uint8{203, 204}},
		{"leaving top, nobody left", []uint8{254}, leaving(L), []uint8{0}},
		{"leaving top, the next excluded", []uint8{254, 204, 79}, leaving(L, X, ""), []uint8{78, 0, 79}},
		{"excluded top", []uint8{254, 204, 79}, leaving(X, "", ""), []uint8{0, 204, 79}},
	} {
		prios := slices.Clone(c.prios)
		if got := excludedPriorities(prios, c.nodes); !slices.Equal(got, c.want) || !slices.Equal(prios, c.prios) {
			t.Errorf("%s: %v (input now %v), want %v and the input untouched", c.name, got, prios, c.want)
		}
	}
}
