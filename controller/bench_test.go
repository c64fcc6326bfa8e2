package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// BenchmarkConvergence1000Services: 1000 Services over 4 groups and 50
// Nodes, created before the operator starts; the time from manager start
// until every group's status lists all its instances and every LoadBalancer
// Service has its address. Per group: 64 LoadBalancer Services allocated
// from a /26 pool and 186 Services with externalIPs (all addresses are
// API data only; nothing is sent anywhere).
func BenchmarkConvergence1000Services(b *testing.B) {
	needAPIServer(b)
	for range b.N {
		b.StopTimer()
		ns := newNamespace(b, "bench")
		newNodes(b, ns, 50, map[string]string{"bench": ns})
		for gi := range 4 {
			newGroup(b, ns, fmt.Sprintf("g%d", gi), func(g *v1alpha1.KeepalivedGroup) {
				g.Spec.Interface = fmt.Sprintf("eth%d", gi)
				g.Spec.Segment = fmt.Sprintf("seg%d", gi) // 250 instances each: one router-ID space apiece
				g.Spec.NodeSelector = map[string]string{"bench": ns}
				// 64 addresses apart from the nodes' 10.99.0.1-50 (API data only).
				g.Spec.AddressPool = &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{v1alpha1.AddressRange(fmt.Sprintf("10.99.1.%d-10.99.1.%d", 64*gi, 64*gi+63))}}
			})
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range 1000 {
			gi, j := i%4, i/4
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				name := fmt.Sprintf("svc-%04d", i)
				group := fmt.Sprintf("%s/g%d", ns, gi)
				if j < 64 {
					newService(b, ns, name, group, asLoadBalancer)
				} else {
					newService(b, ns, name, group, withExternalIPs(fmt.Sprintf("fd00:99::%x:%x", gi, j)))
				}
			})
		}
		wg.Wait()

		b.StartTimer()
		start := time.Now()
		m := startManager(b, ns)
		for {
			if converged(b, ns) {
				break
			}
			if time.Since(start) > 5*time.Minute {
				b.Fatal("not converged after 5 minutes")
			}
			time.Sleep(100 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(elapsed.Seconds(), "s/converge")
		total := 0
		for gi := range 4 {
			total += m.r.Groups.Reconciles(types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("g%d", gi)})
		}
		b.ReportMetric(float64(total), "group-reconciles")
		m.stop()
	}
}

func converged(b *testing.B, ns string) bool {
	ctx := context.Background()
	var groups v1alpha1.KeepalivedGroupList
	if err := k8s.List(ctx, &groups, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	if len(groups.Items) != 4 {
		return false
	}
	for _, g := range groups.Items {
		if len(g.Status.Instances) != 250 || len(g.Status.Nodes) != 50 {
			return false
		}
	}
	var svcs corev1.ServiceList
	if err := k8s.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	for _, s := range svcs.Items {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
			return false
		}
	}
	return true
}
