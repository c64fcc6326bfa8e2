package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// agedServices are n Services of group ns/g with one externalIP each, named
// with realistic lengths (a 19-byte namespace, a 25-byte name); Service i was
// created at second i/perSecond, so perSecond of them share a timestamp.
func agedServices(n, perSecond int) []corev1.Service {
	out := make([]corev1.Service, n)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range out {
		s := sharedTestService(fmt.Sprintf("team-%02d-production", i%20), fmt.Sprintf("checkout-service-%08d", i),
			fmt.Sprintf("fd00:99:%x::%x", i>>16, i&0xffff), false)
		s.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i/perSecond) * time.Second))
		out[i] = s
	}
	return out
}

func longNodeObjects(n int) []corev1.Node {
	out := make([]corev1.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("worker-%03d.rack-%02d.dc1.example.com", i, i%40), fmt.Sprintf("10.99.%d.%d", i/250, 1+i%250))
	}
	return out
}

func sharedGroup() *v1alpha1.KeepalivedGroup {
	return &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared},
	}
}

// byAge is services sorted oldest first: creationTimestamp, then key.
func byAge(services []corev1.Service) []corev1.Service {
	out := slices.Clone(services)
	slices.SortFunc(out, func(a, b corev1.Service) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// TestFitStatus: a plan whose status is over statusBudget keeps exactly the
// longest run of oldest Services (creationTimestamp, then key) whose status
// fits, and names the others in statusFull; one more Service would not fit.
// Both with shared routers and one instance per Service; a plan that fits
// is returned as it is.
func TestFitStatus(t *testing.T) {
	defer func(b int) { statusBudget = b }(statusBudget)
	nodes := longNodeObjects(5)
	for _, mode := range []v1alpha1.RouterSharing{v1alpha1.RouterSharingShared, v1alpha1.RouterSharingPerService} {
		g := sharedGroup()
		g.Spec.RouterSharing = mode
		// Scrambled, so that the order of the list is not the order of age.
		services := agedServices(120, 7)
		slices.Reverse(services[40:])
		replan := func(kept []corev1.Service) plan { return computePlan(g, kept, nodes, nil) }
		oldest := byAge(services)
		for _, keep := range []int{1, 37, 83, 119} {
			statusBudget = statusBytes(replan(oldest[:keep]))
			p := fitStatus(replan(services), services, replan)
			if got := len(servedServices(p)); got != keep {
				t.Fatalf("%s, budget of %d Services: %d served", mode, keep, got)
			}
			for _, s := range oldest[:keep] {
				if !servedServices(p)[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] {
					t.Fatalf("%s: old Service %s/%s left out", mode, s.Namespace, s.Name)
				}
			}
			if len(p.statusFull) != len(services)-keep || statusBytes(p) > statusBudget {
				t.Fatalf("%s: %d left out (want %d), status %d bytes over %d", mode, len(p.statusFull), len(services)-keep, statusBytes(p), statusBudget)
			}
			if statusBytes(replan(oldest[:keep+1])) <= statusBudget {
				t.Fatalf("%s: %d Services would fit too", mode, keep+1)
			}
		}
		statusBudget = statusBytes(replan(services))
		if p := fitStatus(replan(services), services, replan); len(p.statusFull) != 0 || len(servedServices(p)) != len(services) {
			t.Fatalf("%s: a status that fits lost %d Services", mode, len(p.statusFull))
		}
	}
}

// TestStatusBudget: the default statusBudget holds one of the issue's 20
// groups (500 Services on 500 Nodes, names of realistic length) with room to
// spare and leaves nothing out; a group of 10,000 Services on 3 Nodes does
// not fit, keeps its oldest Services up to the budget and no more, and the
// figure is the one the README states as the per-group ceiling.
func TestStatusBudget(t *testing.T) {
	g := sharedGroup()
	issue := agedServices(500, 50)
	nodes := longNodeObjects(500)
	replan := func(kept []corev1.Service) plan { return computePlan(g, kept, nodes, nil) }
	p := fitStatus(replan(issue), issue, replan)
	size := statusBytes(p)
	t.Logf("500 Services, 500 Nodes: %d routers, status %d KiB of a budget of %d KiB", len(p.instances), size>>10, statusBudget>>10)
	if len(p.statusFull) != 0 || len(servedServices(p)) != 500 || size > statusBudget/2 {
		t.Fatalf("the issue's group: %d left out, status %d bytes (budget %d)", len(p.statusFull), size, statusBudget)
	}

	big := agedServices(10000, 50)
	three := longNodeObjects(3)
	replan = func(kept []corev1.Service) plan { return computePlan(g, kept, three, nil) }
	start := time.Now()
	p = fitStatus(replan(big), big, replan)
	served := len(servedServices(p))
	t.Logf("10,000 Services, 3 Nodes: %d served in %d routers (status %d KiB), %d left out; fitted in %v",
		served, len(p.instances), statusBytes(p)>>10, len(p.statusFull), time.Since(start).Round(time.Millisecond))
	if served < 5000 || served+len(p.statusFull) != len(big) || statusBytes(p) > statusBudget {
		t.Fatalf("10,000 Services: %d served, %d left out, status %d bytes", served, len(p.statusFull), statusBytes(p))
	}
	if statusBytes(replan(byAge(big)[:served+1])) <= statusBudget {
		t.Fatalf("%d Services would fit", served+1)
	}
}

// TestGroupStatusFull: a group whose status would outgrow the budget (lowered
// here to what its 45 oldest Services need) serves exactly those 45, leaves
// the 15 newest out with one GroupStatusFull Event each, and is Degraded
// with reason GroupStatusFull and a message that counts them and says what
// to do. Its status is written (it is under the budget), never refused.
func TestGroupStatusFull(t *testing.T) {
	ns := newNamespace(t, "stfull")
	lbl := map[string]string{"stfull-test": ns}
	newNodes(t, ns, 3, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	})
	// Two batches a second apart: the newest are the second batch, and
	// within one second the keys sorting last.
	createServices(t, ns, ns+"/g", 30)
	time.Sleep(1100 * time.Millisecond)
	for i := 30; i < 60; i++ {
		newService(t, ns, fmt.Sprintf("s%04d", i), ns+"/g", withExternalIPs(fmt.Sprintf("fd00:99::2:%x", i)))
	}
	var list corev1.ServiceList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := k8s.List(context.Background(), &nodes, client.MatchingLabels(lbl)); err != nil {
		t.Fatal(err)
	}
	g := getGroup(t, ns, "g")
	oldest := byAge(list.Items)
	// Restored after the manager stops: cleanups run last registered first.
	saved := statusBudget
	t.Cleanup(func() { statusBudget = saved })
	statusBudget = statusBytes(computePlan(g, oldest[:45], nodes.Items, nil))
	startManager(t, ns)

	newest := map[string]bool{}
	for _, s := range oldest[45:] {
		newest[s.Name] = true
	}
	eventually(t, 60*time.Second, func() error {
		g := getGroup(t, ns, "g")
		if len(g.Status.RouterIDs) != 45 {
			return fmt.Errorf("%d Services served, want the 45 oldest", len(g.Status.RouterIDs))
		}
		for key := range g.Status.RouterIDs {
			if newest[strings.TrimPrefix(key, ns+"/")] {
				return fmt.Errorf("new Service %s served", key)
			}
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonGroupStatusFull ||
			!strings.HasPrefix(c.Message, "15 Service(s), the newest, left out") || !strings.Contains(c.Message, "more KeepalivedGroups") {
			return fmt.Errorf("Degraded %+v", c)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		ev := serviceEvents(t, ns, ReasonGroupStatusFull)
		if len(ev) != 15 {
			return fmt.Errorf("%d Services with GroupStatusFull Events, want 15", len(ev))
		}
		for name, e := range ev {
			if !newest[name] || len(e) != 1 {
				return fmt.Errorf("%s: %d Events, newest %v", name, len(e), newest[name])
			}
		}
		return nil
	})
}
