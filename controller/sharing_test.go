package controller

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
	"github.com/vrrp-operator/vrrp-operator/internal/placement"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
)

// createServices creates n ClusterIP Services s0000.. in ns, each with one
// externalIP (fd00:99::2:<i>), annotated for group, eight at a time.
func createServices(t *testing.T, ns, group string, n int) map[string]netip.Addr {
	t.Helper()
	return createServicesAs(t, ns, group, "s", 2, n)
}

// createServicesAs is createServices with Services named prefix%04d and addresses
// fd00:99::<block>:<i>.
func createServicesAs(t *testing.T, ns, group, prefix string, block, n int) map[string]netip.Addr {
	t.Helper()
	vips := make(map[string]netip.Addr, n)
	for i := range n {
		vips[fmt.Sprintf("%s/%s%04d", ns, prefix, i)] = netip.MustParseAddr(fmt.Sprintf("fd00:99::%x:%x", block, i))
	}
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s%04d", prefix, i), Annotations: map[string]string{v1alpha1.AnnotationGroup: group}},
					Spec: corev1.ServiceSpec{
						Type:        corev1.ServiceTypeClusterIP,
						Ports:       []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
						ExternalIPs: []string{fmt.Sprintf("fd00:99::%x:%x", block, i)},
					},
				}
				if err := k8s.Create(context.Background(), svc); err != nil {
					errs <- fmt.Errorf("create %s: %w", svc.Name, err)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return vips
}

// sharedView checks a shared group's status against the design
// (docs/design/router-sharing.md) and returns each Service's master: the
// node with the highest priority in the router that lists its VIP.
//
//   - exactly wantRouters instances, every one a shared router ("@...")
//     with a router ID in 1..255;
//   - every Service's VIP in exactly one router, and no other address;
//   - routerIDs maps every Service to the ID of the router listing its VIP;
//   - every Service's master is its rendezvous top node over the status'
//     nodes (placement.Top), which the design's 2 exact ranks keep.
func sharedView(g *v1alpha1.KeepalivedGroup, vips map[string]netip.Addr, wantNodes, wantRouters int) (map[string]string, error) {
	if len(g.Status.Nodes) != wantNodes {
		return nil, fmt.Errorf("%d nodes, want %d", len(g.Status.Nodes), wantNodes)
	}
	names := make([]string, len(g.Status.Nodes))
	for i, n := range g.Status.Nodes {
		names[i] = n.Name
	}
	if len(g.Status.Instances) != wantRouters {
		return nil, fmt.Errorf("%d instances, want %d routers", len(g.Status.Instances), wantRouters)
	}
	type holder struct {
		vrid   int
		master string
	}
	by := map[netip.Addr][]holder{}
	ids := map[int]bool{}
	for _, in := range g.Status.Instances {
		if !strings.HasPrefix(in.Key, sharing.RouterKeyPrefix) || in.VRID < 1 || in.VRID > 255 || ids[in.VRID] {
			return nil, fmt.Errorf("instance %s VRID %d: not a shared router with an ID of its own", in.Key, in.VRID)
		}
		ids[in.VRID] = true
		pr, err := v1alpha1.DecodePriorities(in.Priorities, len(names))
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", in.Key, err)
		}
		best := 0
		for i := range pr {
			if pr[i] > pr[best] {
				best = i
			}
		}
		for _, s := range in.VIPs {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("instance %s: %w", in.Key, err)
			}
			by[a] = append(by[a], holder{in.VRID, names[best]})
		}
	}
	if len(by) != len(vips) {
		return nil, fmt.Errorf("%d addresses in the routers, want %d", len(by), len(vips))
	}
	if len(g.Status.RouterIDs) != len(vips) {
		return nil, fmt.Errorf("%d routerIDs entries, want one per Service (%d)", len(g.Status.RouterIDs), len(vips))
	}
	masters := make(map[string]string, len(vips))
	for key, a := range vips {
		h := by[a]
		if len(h) != 1 {
			return nil, fmt.Errorf("%s's VIP %s is in %d routers", key, a, len(h))
		}
		if id := g.Status.RouterIDs[key]; id != h[0].vrid {
			return nil, fmt.Errorf("routerIDs[%s] = %d, its router has %d", key, id, h[0].vrid)
		}
		if top := names[placement.Top(key, names, 1)[0]]; h[0].master != top {
			return nil, fmt.Errorf("%s's master is %s, its rendezvous top is %s", key, h[0].master, top)
		}
		masters[key] = h[0].master
	}
	return masters, nil
}

// TestSharedRoutersAtScale: 2,000 Services with one externalIP each in one
// shared group of 3 nodes converge to the design's 6 routers (2 exact
// ranks: one per ordered pair of nodes), each Service's VIP in exactly one
// of them, mastered by its rendezvous top node, each node mastering 20-47 %
// of them. A 4th node joining makes 12 routers and moves exactly the
// Services whose rendezvous master is the new node, nothing else.
func TestSharedRoutersAtScale(t *testing.T) {
	ns := newNamespace(t, "share")
	lbl := map[string]string{"share-test": ns}
	newNodes(t, ns, 3, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	})
	const n = 2000
	vips := createServices(t, ns, ns+"/g", n)
	start := time.Now()
	startManager(t, ns)

	var before map[string]string
	eventually(t, 5*time.Minute, func() error {
		g := getGroup(t, ns, "g")
		m, err := sharedView(g, vips, 3, 6)
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Degraded %+v", c)
		}
		before = m
		return nil
	})
	t.Logf("%d Services converged to 6 shared routers in %v", n, time.Since(start).Round(time.Millisecond))
	per := map[string]int{}
	for _, node := range before {
		per[node]++
	}
	if len(per) != 3 {
		t.Fatalf("masters on %d nodes, want 3: %v", len(per), per)
	}
	for node, c := range per {
		share := float64(c) / n
		t.Logf("%s masters %d Services (%.1f %%)", node, c, 100*share)
		if share < 0.20 || share > 0.47 {
			t.Errorf("%s masters %.1f %% of the Services, want 20-47 %%", node, 100*share)
		}
	}

	joined := newNodes(t, ns+"-j", 1, lbl)[0]
	var after map[string]string
	eventually(t, 5*time.Minute, func() error {
		m, err := sharedView(getGroup(t, ns, "g"), vips, 4, 12)
		after = m
		return err
	})
	moved, ideal := 0, 0
	for key, was := range before {
		if after[key] != was {
			moved++
			if after[key] != joined {
				t.Errorf("%s moved from %s to %s, not to the joining node %s", key, was, after[key], joined)
			}
		}
	}
	// The ideal: the Services whose rendezvous master over the four nodes
	// is the new one (sharedView checked each master is its rendezvous top).
	for _, m := range after {
		if m == joined {
			ideal++
		}
	}
	t.Logf("node join: %d of %d Services changed master, rendezvous ideal %d", moved, n, ideal)
	if moved != ideal || moved == 0 || moved > n/2 {
		t.Fatalf("node join moved %d Services, ideal %d", moved, ideal)
	}
}

// TestPlanSharedKeepsLocalAndTakeoverPerService: in a shared group a
// Service with a health check (externalTrafficPolicy: Local) keeps an
// instance of its own with placement.HealthChecked priorities, exactly as a
// per-Service group plans it, while the others share one router; and a
// group being taken over from keepalived-operator (status.migration) plans
// one instance per Service, byte-identical to routerSharing: PerService.
func TestPlanSharedKeepsLocalAndTakeoverPerService(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	svc := func(name, ip string, local bool) corev1.Service { return sharedTestService("ns", name, ip, local) }
	services := []corev1.Service{svc("local", "10.99.0.50", true)}
	for i := range 40 {
		services = append(services, svc(fmt.Sprintf("s%02d", i), fmt.Sprintf("10.99.0.%d", 100+i), false))
	}
	group := func(sharing v1alpha1.RouterSharing) *v1alpha1.KeepalivedGroup {
		return &v1alpha1.KeepalivedGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
			Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: sharing},
		}
	}
	per := computePlan(group(v1alpha1.RouterSharingPerService), services, nodes, nil)
	if per.shared || len(per.instances) != 41 {
		t.Fatalf("PerService: shared %v, %d instances, want 41", per.shared, len(per.instances))
	}
	var perLocal *v1alpha1.Instance
	for i := range per.instances {
		if per.instances[i].Key == "ns/local" {
			perLocal = &per.instances[i]
		}
	}
	if perLocal == nil || perLocal.Settings.HealthCheck == nil {
		t.Fatalf("PerService: no health-checked instance ns/local: %+v", perLocal)
	}

	sh := computePlan(group(v1alpha1.RouterSharingShared), services, nodes, nil)
	if !sh.shared {
		t.Fatal("Shared: plan not shared")
	}
	var local *v1alpha1.Instance
	routers := 0
	for i := range sh.instances {
		in := &sh.instances[i]
		switch {
		case in.Key == "ns/local":
			local = in
		case strings.HasPrefix(in.Key, sharing.RouterKeyPrefix):
			routers++
			if in.Settings.HealthCheck != nil {
				t.Errorf("router %s carries a health check", in.Key)
			}
		default:
			t.Errorf("Shared: unexpected instance %s", in.Key)
		}
	}
	if local == nil || local.Priorities != perLocal.Priorities || local.Settings.HealthCheck == nil || local.VIPs[0] != "10.99.0.50" {
		t.Fatalf("Shared: Local Service's instance %+v, want it as planned per Service %+v", local, perLocal)
	}
	if routers < 1 || routers > 6 || len(sh.routerIDs) != 41 || sh.routerIDs["ns/local"] != local.VRID {
		t.Fatalf("Shared: %d routers (want 1..6), %d routerIDs (want 41), local %d", routers, len(sh.routerIDs), sh.routerIDs["ns/local"])
	}

	taking := group(v1alpha1.RouterSharingShared)
	taking.Status.Migration = &v1alpha1.Migration{Phase: v1alpha1.MigrationShadowing}
	mig := computePlan(taking, services, nodes, nil)
	if mig.shared || !reflect.DeepEqual(mig.instances, per.instances) || !reflect.DeepEqual(mig.routerIDs, per.routerIDs) {
		t.Fatalf("takeover: shared %v; instances differ from PerService's: %v", mig.shared, mig.instances)
	}
}

// TestSharedRoutersPastTheCeiling: a shared group whose segment has two
// free router IDs (the rest blacklisted) and whose 60 Services need 6
// routers gives the IDs to the 2 routers first in key order; the Services
// of the other 4 get no VIP, each one RouterIDsExhausted Event, and the
// group is Degraded counting the routers and Services left out and naming
// the remedies. Nothing is dropped silently.
func TestSharedRoutersPastTheCeiling(t *testing.T) {
	ns := newNamespace(t, "shceil")
	lbl := map[string]string{"shceil-test": ns}
	newNodes(t, ns, 3, lbl)
	newTwoIDSharedGroup(t, ns, lbl)
	const n = 60
	vips := createServices(t, ns, ns+"/g", n)
	startManager(t, ns)

	var served map[string]bool
	eventually(t, 60*time.Second, func() error {
		g := getGroup(t, ns, "g")
		if len(g.Status.Instances) != 2 {
			return fmt.Errorf("%d instances, want the 2 routers that fit", len(g.Status.Instances))
		}
		served = map[string]bool{}
		listed := map[string]bool{}
		for i, in := range g.Status.Instances {
			if in.VRID != 254+i || !strings.HasPrefix(in.Key, sharing.RouterKeyPrefix) {
				return fmt.Errorf("instance %s has VRID %d, want the free IDs in key order", in.Key, in.VRID)
			}
			for _, v := range in.VIPs {
				listed[v] = true
			}
		}
		for key, a := range vips {
			if listed[a.String()] {
				served[key] = true
				if g.Status.RouterIDs[key] < 254 {
					return fmt.Errorf("served %s has routerIDs %d", key, g.Status.RouterIDs[key])
				}
			} else if _, ok := g.Status.RouterIDs[key]; ok {
				return fmt.Errorf("left-out %s is in routerIDs", key)
			}
		}
		if len(served) == 0 || len(served) == n {
			return fmt.Errorf("%d of %d Services served, want some left out", len(served), n)
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded)
		want := fmt.Sprintf("4 shared router(s) and 0 other instance(s) got no router ID, leaving %d Service(s) without VIPs", n-len(served))
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRouterIDsExhausted ||
			!strings.HasPrefix(c.Message, want) || !strings.Contains(c.Message, "spec.routerBudget") {
			return fmt.Errorf("Degraded %+v, want %q", c, want)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		ev := serviceEvents(t, ns, ReasonRouterIDsExhausted)
		if len(ev) != n-len(served) {
			return fmt.Errorf("%d Services with RouterIDsExhausted Events, want %d", len(ev), n-len(served))
		}
		for name, e := range ev {
			if served[ns+"/"+name] || len(e) != 1 {
				return fmt.Errorf("%s: %d Events, served %v", name, len(e), served[ns+"/"+name])
			}
		}
		return nil
	})
}

// TestPlanSharedFollowsFirstHolder: two Services sharing an address
// (allow-shared-ip) are in one router, the one of the address's first
// holder (the anchor the vetter names), even when the other's key sorts
// first; without an anchor, the key sorting first decides.
func TestPlanSharedFollowsFirstHolder(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	names := []string{"a", "b", "c"}
	// A holder whose rendezvous top differs from ns/first's.
	holder := ""
	for i := range 50 {
		k := fmt.Sprintf("ns/later%d", i)
		if placement.Top(k, names, 1)[0] != placement.Top("ns/first", names, 1)[0] {
			holder = k
			break
		}
	}
	if holder == "" {
		t.Fatal("no key with another top node")
	}
	svc := func(key string) corev1.Service {
		ns, name, _ := strings.Cut(key, "/")
		return corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
				v1alpha1.AnnotationGroup: "ns/g", v1alpha1.AnnotationSharedIP: "x"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalIPs: []string{"10.99.0.77"}},
		}
	}
	services := []corev1.Service{svc("ns/first"), svc(holder)}
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared},
	}
	masterOf := func(p plan) string {
		t.Helper()
		if len(p.instances) != 1 || len(p.routerIDs) != 2 {
			t.Fatalf("%d instances, routerIDs %v: want one router for both", len(p.instances), p.routerIDs)
		}
		pr, err := v1alpha1.DecodePriorities(p.instances[0].Priorities, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range pr {
			if v == 254 {
				return names[i]
			}
		}
		t.Fatalf("no node at 254: %v", pr)
		return ""
	}
	anchors := sharedAnchors(services, map[types.NamespacedName][]netip.Addr{
		{Namespace: "ns", Name: "first"}:                           {netip.MustParseAddr("10.99.0.77")},
		{Namespace: "ns", Name: strings.TrimPrefix(holder, "ns/")}: {netip.MustParseAddr("10.99.0.77")},
	}, map[netip.Addr][]types.NamespacedName{
		netip.MustParseAddr("10.99.0.77"): {{Namespace: "ns", Name: strings.TrimPrefix(holder, "ns/")}, {Namespace: "ns", Name: "first"}},
	})
	if got := masterOf(planVetted(g, services, nil, anchors, nodes, nil, nil)); got != names[placement.Top(holder, names, 1)[0]] {
		t.Errorf("with the first holder %s as anchor the master is %s, want its top", holder, got)
	}
	if got := masterOf(planVetted(g, services, nil, nil, nodes, nil, nil)); got != names[placement.Top("ns/first", names, 1)[0]] {
		t.Errorf("without an anchor the master is %s, want ns/first's top", got)
	}
}

// TestPlanSharedKeepsRouterIDs: a shared router keeps its ID from one plan
// to the next, also when a member that sorts before every router key
// ("0ns/x" < "@...") leaves it to become Local: the Service's routerIDs
// entry (its router's ID) is no claim on that ID.
func TestPlanSharedKeepsRouterIDs(t *testing.T) {
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}
	svc := sharedTestService
	var services []corev1.Service
	for i := range 20 {
		services = append(services, svc("ns", fmt.Sprintf("s%02d", i), fmt.Sprintf("10.99.0.%d", 100+i), false))
	}
	services = append(services, svc("0ns", "x", "10.99.0.99", false))
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared},
	}
	p1 := computePlan(g, services, nodes, nil)
	g.Status.Instances, g.Status.RouterIDs = p1.instances, p1.routerIDs
	ids := map[string]int{}
	for _, in := range p1.instances {
		ids[in.Key] = in.VRID
	}
	if len(ids) != 2 {
		t.Fatalf("first plan: %d routers, want 2 (2 nodes, 2 exact ranks)", len(ids))
	}
	services[len(services)-1] = svc("0ns", "x", "10.99.0.99", true)
	p2 := computePlan(g, services, nodes, nil)
	if len(p2.renumbered) != 0 {
		t.Errorf("renumbered %v", p2.renumbered)
	}
	for _, in := range p2.instances {
		if want, ok := ids[in.Key]; ok && in.VRID != want {
			t.Errorf("router %s: VRID %d, had %d", in.Key, in.VRID, want)
		}
		if in.Key == "0ns/x" && (in.VRID == ids[p1.instances[0].Key] || in.VRID == ids[p1.instances[1].Key]) {
			t.Errorf("Local 0ns/x took router ID %d", in.VRID)
		}
	}
	if len(p2.instances) != 3 {
		t.Errorf("second plan: %d instances, want 2 routers and 0ns/x", len(p2.instances))
	}
}

// TestSharedGrantRecordKeepsFirstHolder: the vetter's record of who was
// granted an address when Services share routers, in the hard case: both
// Services are members of the SAME router, whose list of addresses then
// names fd00:99::81's holder no more than any other member (one node: every
// Service of the default class lands in one router, asserted below).
// b/new holds fd00:99::81; the older a/old then adds it. Without the record
// the older Service would win; with it b/new keeps the address and a/old
// gets AddressInUse, also after the operator restarts (a new process, with
// nothing in memory, reads only the group's status).
func TestSharedGrantRecordKeepsFirstHolder(t *testing.T) {
	admin := newNamespace(t, "shgrant-adm")
	a := newNamespace(t, "shgrant-a")
	b := newNamespace(t, "shgrant-b")
	c := newNamespace(t, "shgrant-c")
	lbl := map[string]string{"shgrant-test": admin}
	newNodes(t, admin, 1, lbl)
	newGroup(t, admin, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	})
	newService(t, a, "old", admin+"/g", withExternalIPs("fd00:99::80"))
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
	newService(t, b, "new", admin+"/g", withExternalIPs("fd00:99::81"))
	tm := startManager(t, admin, a, b, c)

	// check: each member is in routerIDs, and its address in exactly one
	// router, the one with the member's ID; an address not wanted is in none.
	check := func(want map[string]string) error {
		g := getGroup(t, admin, "g")
		for member, addr := range want {
			id, ok := g.Status.RouterIDs[member]
			if !ok {
				return fmt.Errorf("%s not in routerIDs %v", member, g.Status.RouterIDs)
			}
			in := 0
			for _, r := range g.Status.Instances {
				for _, v := range r.VIPs {
					if v != addr {
						continue
					}
					in++
					if r.VRID != id {
						return fmt.Errorf("%s is in router %s (VRID %d), routerIDs[%s] = %d", addr, r.Key, r.VRID, member, id)
					}
				}
			}
			if in != 1 {
				return fmt.Errorf("%s is in %d routers", addr, in)
			}
		}
		if len(g.Status.RouterIDs) != len(want) {
			return fmt.Errorf("routerIDs %v, want %d members", g.Status.RouterIDs, len(want))
		}
		return nil
	}
	want := map[string]string{a + "/old": "fd00:99::80", b + "/new": "fd00:99::81"}
	eventually(t, 30*time.Second, func() error { return check(want) })
	ids := getGroup(t, admin, "g").Status.RouterIDs
	if ids[a+"/old"] != ids[b+"/new"] {
		t.Fatalf("routerIDs %v: a/old and b/new are in different routers, not the case under test", ids)
	}

	old := getService(t, a, "old")
	old.Spec.ExternalIPs = append(old.Spec.ExternalIPs, "fd00:99::81")
	if err := k8s.Update(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, a, "old", ReasonAddressInUse, "fd00:99::81 is held by Service "+b+"/new", "granted first")
	steady := func() {
		t.Helper()
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			if err := check(want); err != nil {
				t.Fatal(err)
			}
		}
	}
	steady()
	// The durable record: only the contested address, with its first holder.
	eventually(t, 30*time.Second, func() error {
		if got := getGroup(t, admin, "g").Status.ContestedGrants; !maps.Equal(got, map[string]string{"fd00:99::81": b + "/new"}) {
			return fmt.Errorf("contestedGrants %v, want fd00:99::81 held by %s/new", got, b)
		}
		return nil
	})

	// A new operator process: nothing in memory, only the group's status.
	// A third Service makes it write the status, so the check below sees
	// what the new process decided, not what the old one left.
	tm.stop()
	startManager(t, admin, a, b, c)
	newService(t, c, "third", admin+"/g", withExternalIPs("fd00:99::82"))
	want[c+"/third"] = "fd00:99::82"
	eventually(t, 30*time.Second, func() error { return check(want) })
	steady()
}

// TestSharedStatusContract: vrrpd's translation (groupsource.Translate)
// takes a shared group's status whole on every node: no router dropped,
// one virtual router per family of each router (IPv4 and IPv6 under one
// VRID), every address of the group in exactly one of them (advertised, or
// excluded past what fits an advert), each node at the priority the status
// gives it, the verbatim class's settings applied, and a Local Service's
// instance with its health check.
func TestSharedStatusContract(t *testing.T) {
	nodes := []corev1.Node{node("n1", "10.99.0.1"), node("n2", "10.99.0.2"), node("n3", "10.99.0.3")}
	var services []corev1.Service
	want := map[netip.Addr]bool{}
	for i := range 600 {
		s := corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s%03d", i), Annotations: map[string]string{v1alpha1.AnnotationGroup: "ns/g"}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP},
		}
		a := netip.MustParseAddr(fmt.Sprintf("fd00:99::3:%x", i))
		if i%2 == 0 {
			a = netip.AddrFrom4([4]byte{10, 99, byte(1 + i/250), byte(i % 250)})
		}
		if i%50 == 0 {
			s.Annotations[v1alpha1.AnnotationVerbatimConfig] = `{"garp_master_repeat":"4"}`
		}
		if i == 7 {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 30007
		}
		s.Spec.ExternalIPs = []string{a.String()}
		want[a] = true
		services = append(services, s)
	}
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared},
	}
	p := computePlan(g, services, nodes, nil)
	g.Status.Nodes, g.Status.Instances, g.Status.RouterIDs = p.nodes, p.instances, p.routerIDs
	families := 0
	for _, in := range p.instances {
		v4, v6 := false, false
		for _, s := range in.VIPs {
			a := netip.MustParseAddr(s)
			v4, v6 = v4 || a.Is4(), v6 || a.Is6()
		}
		families += map[bool]int{true: 1}[v4] + map[bool]int{true: 1}[v6]
	}
	for self, n := range nodes {
		cfg, _, err := groupsource.Translate(g, n.Name, nil, nil)
		if err != nil {
			t.Fatalf("%s: vrrpd rejects the shared status: %v", n.Name, err)
		}
		if len(cfg.Instances) != families {
			t.Fatalf("%s: vrrpd runs %d virtual routers, want %d (%d status instances by family)", n.Name, len(cfg.Instances), families, len(p.instances))
		}
		seen := map[netip.Addr]int{}
		health, garp := 0, 0
		for _, ci := range cfg.Instances {
			key := groupsource.InstanceKey(ci.Name)
			var st *v1alpha1.Instance
			for i := range p.instances {
				if p.instances[i].Key == key {
					st = &p.instances[i]
				}
			}
			if st == nil || int(ci.VRID) != st.VRID {
				t.Fatalf("%s: virtual router %s (VRID %d) matches no status instance", n.Name, ci.Name, ci.VRID)
			}
			pr, _ := v1alpha1.DecodePriorities(st.Priorities, len(nodes))
			if ci.Priority != pr[self] {
				t.Errorf("%s: %s priority %d, status %d", n.Name, ci.Name, ci.Priority, pr[self])
			}
			for _, v := range append(ci.VIPs, ci.ExcludedVIPs...) {
				seen[v.Prefix.Addr()]++
			}
			if st.Settings.HealthCheck != nil {
				health++
			}
			if ci.GARP.MasterRepeat == 4 {
				garp++
			}
		}
		for a := range want {
			if seen[a] != 1 {
				t.Fatalf("%s: %s in %d virtual routers", n.Name, a, seen[a])
			}
		}
		if len(seen) != len(want) || health != 1 || garp == 0 {
			t.Errorf("%s: %d addresses (want %d), %d health-checked routers (want 1), %d with the verbatim class's garp_master_repeat", n.Name, len(seen), len(want), health, garp)
		}
	}
}

// sharedTestService is a Service of group ns/g with one externalIP; local makes it a
// LoadBalancer with externalTrafficPolicy: Local and a health check port.
func sharedTestService(ns, name, ip string, local bool) corev1.Service {
	s := corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{v1alpha1.AnnotationGroup: "ns/g"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalIPs: []string{ip}},
	}
	if local {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 30001
	}
	return s
}

// newTwoIDSharedGroup creates the shared group ns/g on the nodes labelled lbl with every
// router ID but 254 and 255 blacklisted: a segment with room for two routers.
func newTwoIDSharedGroup(t *testing.T, ns string, lbl map[string]string) {
	t.Helper()
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
		for id := 1; id <= 253; id++ {
			g.Spec.BlacklistRouterIDs = append(g.Spec.BlacklistRouterIDs, id)
		}
	})
}
