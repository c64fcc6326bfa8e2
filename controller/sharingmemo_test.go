package controller

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPlanSharedMemo: a shared plan made with the previous plan's memo is
// identical to one made without, also after the nodes changed (the memo is
// then not used), and the memo holds each router's priorities.
func TestPlanSharedMemo(t *testing.T) {
	g := sharedGroup()
	services := agedServices(500, 50)
	nodes := longNodeObjects(100)
	fresh := planVetted(g, services, nil, nil, nodes, nil, nil)
	again := planVetted(g, services, nil, nil, nodes, nil, fresh.memo)
	if !reflect.DeepEqual(fresh.instances, again.instances) || !reflect.DeepEqual(fresh.routerIDs, again.routerIDs) {
		t.Fatal("a plan with the memo differs from one without")
	}
	for _, in := range fresh.instances {
		if len(fresh.memo.byKey[in.Key]) != len(nodes) {
			t.Fatalf("router %s: memo has %d priorities, want %d", in.Key, len(fresh.memo.byKey[in.Key]), len(nodes))
		}
	}
	fewer := nodes[1:]
	if a, b := planVetted(g, services, nil, nil, fewer, nil, again.memo), planVetted(g, services, nil, nil, fewer, nil, nil); !reflect.DeepEqual(a.instances, b.instances) {
		t.Fatal("after a node left, the memo's priorities were used")
	}
}

// BenchmarkPlanShared500x500 is one reconcile's plan of one of the 20
// groups (500 Services, 500 Nodes, default budget: 64 routers), with the
// previous plan's memo (memo) and without (fresh).
func BenchmarkPlanShared500x500(b *testing.B) {
	g := sharedGroup()
	services := agedServices(500, 50)
	nodes := longNodeObjects(500)
	prev := planVetted(g, services, nil, nil, nodes, nil, nil)
	b.Run("fresh", func(b *testing.B) {
		for range b.N {
			planVetted(g, services, nil, nil, nodes, nil, nil)
		}
	})
	b.Run("memo", func(b *testing.B) {
		for range b.N {
			planVetted(g, services, nil, nil, nodes, nil, prev.memo)
		}
	})
}

// TestEventsRBACOfSharedGroup: the events Roles of a shared group name its
// members' Services, per namespace, and no namespace from a router key
// ("@default/..."), which made every shared group's RBAC apply fail.
func TestEventsRBACOfSharedGroup(t *testing.T) {
	services := []corev1.Service{
		sharedTestService("a", "web", "10.99.0.10", false),
		sharedTestService("a", "db", "10.99.0.11", false),
		sharedTestService("b", "api", "10.99.0.12", false),
		sharedTestService("b", "local", "10.99.0.13", true),
	}
	p := computePlan(sharedGroup(), services, longNodeObjects(3), nil)
	got := servicesByNamespace(servedKeys(p.instances, p.routerIDs))
	want := map[string][]string{"a": {"db", "web"}, "b": {"api", "local"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events Roles for %v, want %v", got, want)
	}
}
