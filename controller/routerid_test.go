package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

func waitRouterIDs(t testing.TB, ns, name string, want map[string]int) *v1alpha1.KeepalivedGroup {
	t.Helper()
	var g *v1alpha1.KeepalivedGroup
	eventually(t, 30*time.Second, func() error {
		g = getGroup(t, ns, name)
		if !reflect.DeepEqual(g.Status.RouterIDs, want) {
			return fmt.Errorf("group %s routerIDs %v, want %v", name, g.Status.RouterIDs, want)
		}
		return nil
	})
	return g
}

// The tests of this file that give each Service (instance key) its own router ID have
// groups with routerSharing: PerService (perService); TestPlanSharedKeepsRouterIDs,
// TestSharedRoutersPastTheCeiling and the move tests hold the same rules for shared
// routers.

// TestRouterIDsStableAcrossRestartAndChurn: IDs come from the status, not
// memory. A new operator process computes byte-identical status (it does not
// even write it), and Service churn frees and reuses IDs without ever
// renumbering a surviving instance.
func TestRouterIDsStableAcrossRestartAndChurn(t *testing.T) {
	ns := newNamespace(t, "rid")
	newNodes(t, ns, 3, map[string]string{"rid-test": ns})
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = map[string]string{"rid-test": ns} }))
	want := map[string]int{}
	for i := range 8 {
		name := fmt.Sprintf("s%d", i)
		newService(t, ns, name, ns+"/g", withExternalIPs(fmt.Sprintf("10.99.0.%d", 100+i)))
		want[ns+"/"+name] = i + 1
	}
	m := startManager(t, ns)
	before := waitRouterIDs(t, ns, "g", want)
	m.stop()

	// Restart: same inputs, byte-identical status, no write at all.
	m2 := startManager(t, ns)
	ref := types.NamespacedName{Namespace: ns, Name: "g"}
	eventually(t, 10*time.Second, func() error {
		if m2.groups.Reconciles(ref) == 0 {
			return fmt.Errorf("not reconciled yet")
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	after := getGroup(t, ns, "g")
	b1, _ := json.Marshal(before.Status)
	b2, _ := json.Marshal(after.Status)
	if string(b1) != string(b2) || before.ResourceVersion != after.ResourceVersion {
		t.Fatalf("status changed across restart:\n%s\n%s", b1, b2)
	}

	// Churn while the operator is down, then start a third process: s2 and
	// s5 are deleted (IDs 3 and 6 free up) and two Services are added; in
	// sorted key order "a-new" gets 3 and "t-new" gets 6; no survivor moves.
	m2.stop()
	ctx := context.Background()
	for _, name := range []string{"s2", "s5"} {
		if err := k8s.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		delete(want, ns+"/"+name)
	}
	newService(t, ns, "t-new", ns+"/g", withExternalIPs("10.99.0.120"))
	newService(t, ns, "a-new", ns+"/g", withExternalIPs("10.99.0.121"))
	want[ns+"/a-new"] = 3
	want[ns+"/t-new"] = 6
	startManager(t, ns)
	waitRouterIDs(t, ns, "g", want)

	// spreadvips on s0: its key splits per VIP; the new keys get fresh
	// IDs and the others keep theirs.
	var s0 corev1.Service
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "s0"}, &s0); err != nil {
		t.Fatal(err)
	}
	s0.Annotations[v1alpha1.AnnotationSpreadVIPs] = "true"
	s0.Spec.ExternalIPs = []string{"10.99.0.100", "10.99.0.130"}
	if err := k8s.Update(ctx, &s0); err != nil {
		t.Fatal(err)
	}
	delete(want, ns+"/s0")
	want[ns+"/s0/10.99.0.100"] = 1
	want[ns+"/s0/10.99.0.130"] = 9
	waitRouterIDs(t, ns, "g", want)
}

// TestBlacklistTakesEffect: blacklisting an ID in use moves only that
// instance, to the lowest free ID.
func TestBlacklistTakesEffect(t *testing.T) {
	ns := newNamespace(t, "black")
	newGroup(t, ns, "g", perService(func(g *v1alpha1.KeepalivedGroup) { g.Spec.BlacklistRouterIDs = []int{1} }))
	for i := range 3 {
		newService(t, ns, fmt.Sprintf("s%d", i), ns+"/g", withExternalIPs(fmt.Sprintf("10.99.0.%d", 10+i)))
	}
	startManager(t, ns)
	waitRouterIDs(t, ns, "g", map[string]int{ns + "/s0": 2, ns + "/s1": 3, ns + "/s2": 4})

	g := getGroup(t, ns, "g")
	g.Spec.BlacklistRouterIDs = []int{1, 3}
	if err := k8s.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	waitRouterIDs(t, ns, "g", map[string]int{ns + "/s0": 2, ns + "/s1": 5, ns + "/s2": 4})
}

// TestGroupsOnOneSegmentDoNotCollide: two groups on the same segment
// never share a router ID (the original's issues 26, 32, 66), a group on
// another segment may reuse them, and a collision carried in from
// outside is resolved by the later group alone.
func TestGroupsOnOneSegmentDoNotCollide(t *testing.T) {
	ns := newNamespace(t, "seg")
	newGroup(t, ns, "a", func(g *v1alpha1.KeepalivedGroup) { g.Spec.Interface = "eth1" })
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
	newGroup(t, ns, "b", func(g *v1alpha1.KeepalivedGroup) { g.Spec.Interface = "eth1" })
	// a and b share routers (the default); c is per Service, so that it reuses both IDs 1
	// and 2 of the default segment.
	newGroup(t, ns, "c", perService(func(g *v1alpha1.KeepalivedGroup) { g.Spec.Interface = "eth2"; g.Spec.Segment = "other" }))
	for _, grp := range []string{"a", "b", "c"} {
		for i := range 2 {
			newService(t, ns, fmt.Sprintf("%s%d", grp, i), ns+"/"+grp, withExternalIPs(fmt.Sprintf("10.99.0.%d", 10*(1+int(grp[0]-'a'))+i)))
		}
	}
	startManager(t, ns)
	// Which of a and b reconciles first (and takes 1 and 2) is up to the
	// work queue; what matters is that they never share an ID.
	disjoint := func(wantA int) error {
		a, b := getGroup(t, ns, "a").Status.RouterIDs, getGroup(t, ns, "b").Status.RouterIDs
		if len(a) != wantA || len(b) != 2 {
			return fmt.Errorf("a %v, b %v", a, b)
		}
		used := map[int]string{}
		for k, id := range a {
			used[id] = k
		}
		for k, id := range b {
			if other, ok := used[id]; ok {
				return fmt.Errorf("router ID %d used by %s and %s on one segment", id, other, k)
			}
		}
		return nil
	}
	eventually(t, 30*time.Second, func() error { return disjoint(2) })
	waitRouterIDs(t, ns, "c", map[string]int{ns + "/c0": 1, ns + "/c1": 2})

	// A new Service in a takes an ID free on the whole segment.
	newService(t, ns, "a2", ns+"/a", withExternalIPs("10.99.0.12"))
	eventually(t, 30*time.Second, func() error { return disjoint(3) })
}

// TestLaterGroupYieldsOnCollision: two groups on one segment whose status
// already share IDs (carried over from the original operator, which
// numbered every group from 1): the later group renumbers, the earlier one
// keeps its IDs.
func TestLaterGroupYieldsOnCollision(t *testing.T) {
	ns := newNamespace(t, "coll")
	ctx := context.Background()
	for i, name := range []string{"early", "late"} {
		if i == 1 {
			time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
		}
		g := newGroup(t, ns, name, nil)
		g.Status.RouterIDs = map[string]int{ns + "/" + name: 1}
		if err := k8s.Status().Update(ctx, g); err != nil {
			t.Fatal(err)
		}
		newService(t, ns, name, ns+"/"+name, withExternalIPs(fmt.Sprintf("10.99.0.%d", 60+i)))
	}
	startManager(t, ns)
	waitRouterIDs(t, ns, "early", map[string]int{ns + "/early": 1})
	waitRouterIDs(t, ns, "late", map[string]int{ns + "/late": 2})
}

// TestRouterIDExhaustion: 300 single-VIP Services in one group: 255 get IDs
// 1..255 in sorted key order, the other 45 are left out with one
// RouterIDsExhausted Event each, and the group is Degraded saying so.
func TestRouterIDExhaustion(t *testing.T) {
	ns := newNamespace(t, "exhaust")
	newGroup(t, ns, "g", perService(nil))
	for i := range 300 {
		newService(t, ns, fmt.Sprintf("s%03d", i), ns+"/g", withExternalIPs(fmt.Sprintf("fd00:99::1:%x", i)))
	}
	startManager(t, ns)
	eventually(t, 60*time.Second, func() error {
		g := getGroup(t, ns, "g")
		if len(g.Status.RouterIDs) != 255 || len(g.Status.Instances) != 255 {
			return fmt.Errorf("%d router IDs, %d instances", len(g.Status.RouterIDs), len(g.Status.Instances))
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRouterIDsExhausted ||
			!strings.HasPrefix(c.Message, "45 instance(s) got no router ID") {
			return fmt.Errorf("Degraded %+v", c)
		}
		return nil
	})
	g := getGroup(t, ns, "g")
	for i := range 255 {
		if id := g.Status.RouterIDs[fmt.Sprintf("%s/s%03d", ns, i)]; id != i+1 {
			t.Fatalf("s%03d has ID %d, want %d", i, id, i+1)
		}
	}
	eventually(t, 30*time.Second, func() error {
		ev := serviceEvents(t, ns, ReasonRouterIDsExhausted)
		if len(ev) != 45 {
			return fmt.Errorf("%d Services with RouterIDsExhausted events, want 45", len(ev))
		}
		for i := 255; i < 300; i++ {
			if len(ev[fmt.Sprintf("s%03d", i)]) != 1 {
				return fmt.Errorf("s%03d: %d events", i, len(ev[fmt.Sprintf("s%03d", i)]))
			}
		}
		if ev := groupEvents(t, ns, "g", v1alpha1.ReasonRouterIDsExhausted); len(ev) != 1 || !strings.HasPrefix(ev[0].Note, "45 instance(s)") {
			return fmt.Errorf("group events %v", ev)
		}
		return nil
	})
}
