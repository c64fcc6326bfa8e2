package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// settle waits until neither group has been reconciled for quiet, and
// returns their counts.
func settle(t testing.TB, m *testManager, quiet time.Duration, groups ...types.NamespacedName) []int {
	t.Helper()
	counts := func() []int {
		out := make([]int, len(groups))
		for i, g := range groups {
			out[i] = m.groups.Reconciles(g)
		}
		return out
	}
	prev := counts()
	deadline := time.Now().Add(20 * time.Second)
	for {
		time.Sleep(quiet)
		now := counts()
		if fmt.Sprint(now) == fmt.Sprint(prev) {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("reconciles never stop (hot loop?): %v then %v", prev, now)
		}
		prev = now
	}
}

// TestServiceChangeReconcilesOnlyItsGroup: changing a Service's VIPs
// reconciles its own group a bounded number of times and the other group not
// at all; a change the status does not depend on (a port) reconciles
// nothing; and everything comes to rest (no hot loop from our own writes).
// The groups have the default, shared routers.
func TestServiceChangeReconcilesOnlyItsGroup(t *testing.T) {
	ns := newNamespace(t, "count")
	newGroup(t, ns, "a", nil)
	newGroup(t, ns, "b", nil)
	for i := range 5 {
		newService(t, ns, fmt.Sprintf("a%d", i), ns+"/a", withExternalIPs(fmt.Sprintf("10.99.0.%d", 10+i)))
		newService(t, ns, fmt.Sprintf("b%d", i), ns+"/b", withExternalIPs(fmt.Sprintf("10.99.0.%d", 20+i)))
	}
	m := startManager(t, ns)
	a, b := types.NamespacedName{Namespace: ns, Name: "a"}, types.NamespacedName{Namespace: ns, Name: "b"}
	// routerVIPs is the VIPs of the router a member's routerIDs entry names.
	routerVIPs := func(g *v1alpha1.KeepalivedGroup, member string) []string {
		id, ok := g.Status.RouterIDs[member]
		for _, in := range g.Status.Instances {
			if ok && in.VRID == id {
				return in.VIPs
			}
		}
		return nil
	}
	eventually(t, 20*time.Second, func() error {
		for _, name := range []string{"a", "b"} {
			g := getGroup(t, ns, name)
			listed := 0
			for _, in := range g.Status.Instances {
				listed += len(in.VIPs)
			}
			if len(g.Status.RouterIDs) != 5 || listed != 5 {
				return fmt.Errorf("group %s not converged: %d routerIDs, %d VIPs listed", name, len(g.Status.RouterIDs), listed)
			}
			for i := range 5 {
				member := fmt.Sprintf("%s/%s%d", ns, name, i)
				if !slices.Contains(routerVIPs(g, member), fmt.Sprintf("10.99.0.%d", map[string]int{"a": 10, "b": 20}[name]+i)) {
					return fmt.Errorf("group %s: %s's VIP not in its router", name, member)
				}
			}
		}
		return nil
	})
	base := settle(t, m, 500*time.Millisecond, a, b)
	t.Logf("reconciles to converge from scratch: a=%d b=%d", base[0], base[1])

	ctx := context.Background()
	svc := getService(t, ns, "a3")
	svc.Spec.ExternalIPs = append(svc.Spec.ExternalIPs, "10.99.0.99")
	if err := k8s.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if slices.Contains(routerVIPs(getGroup(t, ns, "a"), ns+"/a3"), "10.99.0.99") {
			return nil
		}
		return fmt.Errorf("a3's new VIP not in its router")
	})
	retries := m.groups.Retries(a)
	after := settle(t, m, 500*time.Millisecond, a, b)
	retries = m.groups.Retries(a) - retries
	t.Logf("one Service change: group a reconciled %d times (%d retried after an error)", after[0]-base[0], retries)
	if d := after[0] - base[0] - retries; d != 1 {
		t.Errorf("group a reconciled %d times (not counting %d retries) for one Service change, want 1", d, retries)
	}
	if after[1] != base[1] {
		t.Errorf("group b reconciled %d times for a Service of group a", after[1]-base[1])
	}

	svc = getService(t, ns, "a3")
	svc.Spec.Ports[0].Port = 8080
	if err := k8s.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	final := settle(t, m, 500*time.Millisecond, a, b)
	if final[0] != after[0] || final[1] != after[1] {
		t.Errorf("a port change reconciled groups: %v -> %v", after, final)
	}
}

// TestNodeChanges: nodes joining and leaving the selector change the
// group's member list and priorities; a kubelet-style status heartbeat
// (conditions only) reconciles nothing.
func TestNodeChanges(t *testing.T) {
	ns := newNamespace(t, "nodes")
	sel := map[string]string{"nodes-test": ns}
	names := newNodes(t, ns, 3, sel)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = sel })
	newService(t, ns, "s", ns+"/g", withExternalIPs("10.99.0.80"))
	m := startManager(t, ns)
	ref := types.NamespacedName{Namespace: ns, Name: "g"}
	waitNodes := func(want ...string) {
		t.Helper()
		// The group shares routers (unset routerSharing): a node leaving is drained first
		// (leaving.go), and with no vrrpd publishing KeepalivedMastership here both the
		// drain and the move of the Service's router wait their timed fallbacks
		// (mastershipWaitFactor times moveWait, 15 s each at 1 s adverts).
		eventually(t, time.Minute, func() error {
			g := getGroup(t, ns, "g")
			var got []string
			for _, n := range g.Status.Nodes {
				got = append(got, n.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("nodes %v, want %v", got, want)
			}
			if len(g.Status.Instances) != 1 {
				return fmt.Errorf("instances %v", g.Status.Instances)
			}
			prios, err := v1alpha1.DecodePriorities(g.Status.Instances[0].Priorities, len(want))
			if err != nil {
				return err
			}
			// Every member takes part: the operator writes 0 only for an excluded node.
			if slices.Contains(prios, v1alpha1.PriorityNotMember) {
				return fmt.Errorf("priorities %v: a member left out", prios)
			}
			return nil
		})
	}
	waitNodes(names...)

	ctx := context.Background()
	var n corev1.Node
	if err := k8s.Get(ctx, types.NamespacedName{Name: names[1]}, &n); err != nil {
		t.Fatal(err)
	}
	delete(n.Labels, "nodes-test")
	if err := k8s.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	waitNodes(names[0], names[2])

	before := settle(t, m, 500*time.Millisecond, ref)
	if err := k8s.Get(ctx, types.NamespacedName{Name: names[0]}, &n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if err := k8s.Status().Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if after := settle(t, m, 500*time.Millisecond, ref); after[0] != before[0] {
		t.Errorf("a Node heartbeat reconciled the group %d times", after[0]-before[0])
	}
}
