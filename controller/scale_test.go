package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// objectLimit is what any object the operator writes must stay under (issue
// 31): well below the API server's request limit (about 1.5 MiB), so that a
// group can grow without its next write being refused.
const objectLimit = 512 << 10

// sharedScale is an operator-at-scale run with shared routers: groups
// KeepalivedGroups (routerSharing: Shared), each on a segment of its own
// unless oneSegment (then every group on one segment with a router budget
// of 255/groups, as a segment of twenty groups must), nodes Nodes in every
// group, and services ClusterIP Services with one externalIP each, spread
// evenly over the groups. All addresses are API data only.
type sharedScale struct {
	groups, nodes, services int
	oneSegment              bool
	// clusterWide runs the operator with a cluster-wide cache, as
	// cmd/operator does (a cache limited to namespaces maps every read
	// through the RESTMapper, 9 % of the operator's CPU at this scale);
	// only where no other test's objects are left (benchmarks).
	clusterWide bool
}

// scaleResult is what a run measured.
type scaleResult struct {
	created    time.Duration // creating the Services, first to last
	converged  time.Duration // from the last Service created until every group serves all its Services
	reconciles int
	// largest is each kind's largest object (its JSON as the API server
	// returns it, metadata and managedFields included).
	largest map[string]objectSize
}

type objectSize struct {
	name  string
	bytes int
}

func (r scaleResult) sizes() string {
	kinds := make([]string, 0, len(r.largest))
	for k := range r.largest {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%s %s %.1f KiB; ", k, r.largest[k].name, float64(r.largest[k].bytes)/1024)
	}
	return b.String()
}

// TestSharedOperatorAtScale is the operator-at-scale figure (issue 31) at a
// size make test affords: 1,000 Services over 4 shared groups of 100 Nodes,
// created while the operator runs. Every group converges (its status
// serves each of its Services in a shared router, routerIDs one entry per
// Service, not Degraded) within a generous deadline, and every object the
// operator writes stays under 512 KiB. BenchmarkConvergence10000SharedServices
// is the full scale.
func TestSharedOperatorAtScale(t *testing.T) {
	res := runSharedScale(t, sharedScale{groups: 4, nodes: 100, services: 1000}, 2*time.Minute)
	t.Logf("1,000 Services over 4 shared groups and 100 Nodes: created in %v, converged %v after the last, %d group reconciles; largest: %s",
		res.created.Round(time.Millisecond), res.converged.Round(time.Millisecond), res.reconciles, res.sizes())
}

// BenchmarkConvergence10000SharedServices is issue 31's operator at scale:
// 10,000 Services (one externalIP each) over 20 KeepalivedGroups with
// routerSharing: Shared and 500 Nodes, created while the operator runs
// with its own client limits. The figure is the time from the last Service
// created until every group's status serves all its Services; every object
// the operator writes must stay under 512 KiB.
func BenchmarkConvergence10000SharedServices(b *testing.B) {
	benchSharedScale(b, sharedScale{groups: 20, nodes: 500, services: 10000})
}

// BenchmarkConvergence10000SharedServicesOneSegment is the same with the 20
// groups on one segment (one router-ID space), each with a router budget
// of 12, so their 240 routers fit its 255 IDs: their reconciles take turns
// (segmentLocks).
func BenchmarkConvergence10000SharedServicesOneSegment(b *testing.B) {
	benchSharedScale(b, sharedScale{groups: 20, nodes: 500, services: 10000, oneSegment: true})
}

func benchSharedScale(b *testing.B, sc sharedScale) {
	sc.clusterWide = true
	for range b.N {
		res := runSharedScale(b, sc, 5*time.Minute)
		b.Logf("%d Services over %d shared groups and %d Nodes (one segment: %v): created in %v, converged %v after the last, %d group reconciles; largest: %s",
			sc.services, sc.groups, sc.nodes, sc.oneSegment, res.created.Round(time.Millisecond), res.converged.Round(time.Millisecond), res.reconciles, res.sizes())
		suffix := ""
		if sc.oneSegment {
			suffix = "-onesegment"
		}
		b.ReportMetric(res.converged.Seconds(), fmt.Sprintf("operator-converge-%d-shared%s-s", sc.services, suffix))
		b.ReportMetric(float64(res.largest["KeepalivedGroup"].bytes)/1024, fmt.Sprintf("operator-group-max-%d-shared%s-KiB", sc.services, suffix))
		if res.converged > 10*time.Second {
			b.Logf("converged %v after the last Service: over issue 31's 10 s", res.converged)
		}
	}
}

// runSharedScale makes sc's cluster with the operator running, creates the
// Services (32 at a time), waits until every group serves all its Services
// (failing after timeout), checks every object in the namespace against
// objectLimit, and deletes what it made.
func runSharedScale(tb testing.TB, sc sharedScale, timeout time.Duration) scaleResult {
	needAPIServer(tb)
	ns := newNamespace(tb, "scale")
	perGroup := sc.services / sc.groups
	newNodes(tb, ns, sc.nodes, map[string]string{"scale": ns})
	for gi := range sc.groups {
		newGroup(tb, ns, fmt.Sprintf("g%d", gi), func(g *v1alpha1.KeepalivedGroup) {
			g.Spec.Interface = fmt.Sprintf("eth%d", gi)
			g.Spec.NodeSelector = map[string]string{"scale": ns}
			g.Spec.RouterSharing = v1alpha1.RouterSharingShared
			if sc.oneSegment {
				g.Spec.Segment = ns
				g.Spec.RouterBudget = ptr.To(int32(255 / sc.groups))
			} else {
				g.Spec.Segment = fmt.Sprintf("%s-%d", ns, gi)
			}
		})
	}
	defer deleteBenchObjects(tb, ns, sc.groups)

	// The operator with the client limits cmd/operator gives it, its cache
	// limited to the run's namespace (and the cluster-scoped Nodes) unless
	// clusterWide.
	cfg := rest.CopyConfig(testConfig)
	cfg.QPS, cfg.Burst = DefaultClientQPS, DefaultClientBurst
	var namespaces []string
	if !sc.clusterWide {
		namespaces = []string{ns}
	}
	m := startManagerAs(tb, cfg, namespaces...)
	defer m.stop()
	// The groups with their nodes and no Services yet: what the run
	// measures is the Services' arrival.
	eventually(tb, timeout, func() error {
		_, why := sharedConverged(m.r.Groups.Client, ns, sc.groups, 0, sc.nodes)
		return why
	})

	if out := os.Getenv("OPERATOR_PPROF"); out != "" {
		f, err := os.Create(out)
		if err != nil {
			tb.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			tb.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	var res scaleResult
	began := time.Now()
	createScaleServices(tb, ns, sc.groups, sc.services)
	last := time.Now()
	res.created = last.Sub(began)
	for {
		ok, why := sharedConverged(m.r.Groups.Client, ns, sc.groups, perGroup, sc.nodes)
		if ok {
			break
		}
		if time.Since(last) > timeout {
			tb.Fatalf("not converged %v after the last Service: %v", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res.converged = time.Since(last)
	for gi := range sc.groups {
		res.reconciles += m.groups.Reconciles(types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("g%d", gi)})
	}
	res.largest = largestObjects(tb, ns)
	for kind, o := range res.largest {
		if o.bytes >= objectLimit {
			tb.Errorf("%s %s is %d bytes, over 512 KiB", kind, o.name, o.bytes)
		}
	}
	if _, ok := res.largest["KeepalivedGroup"]; !ok {
		tb.Error("no KeepalivedGroup measured")
	}
	return res
}

// createScaleServices creates n Services in ns, Service i in group
// g<i mod groups> with the externalIP fd00:99:<group>::<i>, 32 at a time.
func createScaleServices(tb testing.TB, ns string, groups, n int) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	for i := range n {
		gi := i % groups
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc-%05d", i),
					Annotations: map[string]string{v1alpha1.AnnotationGroup: fmt.Sprintf("%s/g%d", ns, gi)}},
				Spec: corev1.ServiceSpec{
					Type:        corev1.ServiceTypeClusterIP,
					Ports:       []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
					ExternalIPs: []string{fmt.Sprintf("fd00:99:%x::%x", gi, i)},
				},
			}
			if err := k8s.Create(context.Background(), svc); err != nil {
				errs <- fmt.Errorf("create %s: %w", svc.Name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// sharedConverged reports whether every group in ns serves perGroup
// Services on nodes nodes: its status observes its generation, lists the
// nodes, has one routerIDs entry per Service and perGroup addresses in its
// shared routers, and is not Degraded. It reads the operator's cache (what
// the API server sent it), as converged does.
func sharedConverged(c client.Reader, ns string, groups, perGroup, nodes int) (bool, error) {
	var list v1alpha1.KeepalivedGroupList
	if err := c.List(context.Background(), &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	if len(list.Items) != groups {
		return false, fmt.Errorf("%d groups", len(list.Items))
	}
	for i := range list.Items {
		g := &list.Items[i]
		vips := 0
		for _, in := range g.Status.Instances {
			vips += len(in.VIPs)
		}
		d := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded)
		if g.Status.ObservedGeneration != g.Generation || len(g.Status.Nodes) != nodes || len(g.Status.RouterIDs) != perGroup ||
			vips != perGroup || d == nil || d.Status != metav1.ConditionFalse {
			return false, fmt.Errorf("group %s: %d nodes, %d routerIDs, %d VIPs in %d routers, generation %d/%d, Degraded %v",
				g.Name, len(g.Status.Nodes), len(g.Status.RouterIDs), vips, len(g.Status.Instances), g.Status.ObservedGeneration, g.Generation, d)
		}
	}
	return true, nil
}

// largestObjects reads, from the API server, every kind of object the
// operator writes in ns (the groups with their status, their
// KeepalivedMastership, DaemonSet, ServiceAccount, Roles, RoleBindings and
// any ConfigMap) and returns the largest of each kind.
func largestObjects(tb testing.TB, ns string) map[string]objectSize {
	out := map[string]objectSize{}
	lists := map[string]client.ObjectList{
		"KeepalivedGroup":      &v1alpha1.KeepalivedGroupList{},
		"KeepalivedMastership": &v1alpha1.KeepalivedMastershipList{},
		"DaemonSet":            &appsv1.DaemonSetList{},
		"ServiceAccount":       &corev1.ServiceAccountList{},
		"ConfigMap":            &corev1.ConfigMapList{},
		"Role":                 &rbacv1.RoleList{},
		"RoleBinding":          &rbacv1.RoleBindingList{},
	}
	for kind, list := range lists {
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			tb.Fatalf("list %s: %v", kind, err)
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			tb.Fatal(err)
		}
		for _, o := range objs {
			raw, err := json.Marshal(o)
			if err != nil {
				tb.Fatal(err)
			}
			if len(raw) > out[kind].bytes {
				out[kind] = objectSize{name: o.(client.Object).GetName(), bytes: len(raw)}
			}
		}
	}
	return out
}
