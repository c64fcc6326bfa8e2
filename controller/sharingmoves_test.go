package controller

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
)

// statusLog records every status of one group that the API server sends a watch,
// in order, and checks each as it comes: every Service's address listed by at least
// one instance, no router ID on two instances, and (noReuse) no router ID that the
// previous status had under one key on another key.
type statusLog struct {
	mu      sync.Mutex
	written []v1alpha1.KeepalivedGroupStatus
	at      []time.Time
	errs    []string
}

// watchStatuses starts recording the group's statuses, from its current one, until the
// test ends. vips are the Services' addresses, which every status after one that lists
// them all must list. The watch resumes from the last version seen when the API server
// ends it (a watch cache that has not caught up answers "too large resource version").
func watchStatuses(t *testing.T, ns, name string, vips map[string]netip.Addr) *statusLog {
	t.Helper()
	wc, err := client.NewWithWatch(testConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	g := getGroup(t, ns, name)
	l := &statusLog{}
	l.add(g.Status, vips)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rv := g.ResourceVersion
		for ctx.Err() == nil {
			rv = l.follow(ctx, wc, ns, name, rv, vips)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l
}

// follow records the group's statuses from resource version rv until the watch ends,
// and returns the last version seen.
func (l *statusLog) follow(ctx context.Context, wc client.WithWatch, ns, name, rv string, vips map[string]netip.Addr) string {
	w, err := wc.Watch(ctx, &v1alpha1.KeepalivedGroupList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: false}})
	if err != nil {
		return rv
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		g, ok := ev.Object.(*v1alpha1.KeepalivedGroup)
		if !ok {
			return rv // an error: watch again from rv
		}
		if g.Name != name || g.ResourceVersion == rv {
			continue
		}
		rv = g.ResourceVersion
		l.add(g.Status, vips)
	}
	return rv
}

func (l *statusLog) add(st v1alpha1.KeepalivedGroupStatus, vips map[string]netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var prev *v1alpha1.KeepalivedGroupStatus
	if n := len(l.written); n > 0 {
		prev = &l.written[n-1]
	}
	if err := checkStep(prev, &st, vips); err != nil {
		l.errs = append(l.errs, fmt.Sprintf("status %d: %v", len(l.written), err))
	}
	l.written = append(l.written, st)
	l.at = append(l.at, time.Now())
}

// summary is one line per status: when, how many per-Service instances, the routers
// and how many addresses each lists.
func (l *statusLog) summary(since time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for i, st := range l.written {
		per := 0
		var routers []string
		for _, in := range st.Instances {
			if strings.HasPrefix(in.Key, sharing.RouterKeyPrefix) {
				routers = append(routers, fmt.Sprintf("%s(%d)=%d", in.Key, in.VRID, len(in.VIPs)))
			} else {
				per++
			}
		}
		fmt.Fprintf(&b, "\n  %3d +%v: %d nodes, %d per-Service, routers %v", i, l.at[i].Sub(since).Round(time.Millisecond), len(st.Nodes), per, routers)
	}
	return b.String()
}

// checkStep checks one written status: every address of vips in at least one instance
// (once the previous status had them all: before, the group was still converging), no
// router ID twice, and no router ID the previous status had under another key.
func checkStep(prev, st *v1alpha1.KeepalivedGroupStatus, vips map[string]netip.Addr) error {
	listed := map[netip.Addr]bool{}
	ids := map[int]string{}
	for _, in := range st.Instances {
		if other, dup := ids[in.VRID]; dup {
			return fmt.Errorf("router ID %d on %s and %s", in.VRID, other, in.Key)
		}
		ids[in.VRID] = in.Key
		for _, a := range parseVIPs(in.VIPs) {
			listed[a] = true
		}
	}
	if prev == nil {
		return nil
	}
	prevListed := map[netip.Addr]bool{}
	for _, in := range prev.Instances {
		for _, a := range parseVIPs(in.VIPs) {
			prevListed[a] = true
		}
		if k, ok := ids[in.VRID]; ok && k != in.Key && !adopts(prev, st, in.Key, k) {
			return fmt.Errorf("router ID %d of %s given to %s in the next write", in.VRID, in.Key, k)
		}
	}
	for key, a := range vips {
		if prevListed[a] && !listed[a] {
			return fmt.Errorf("%s's address %s is in no instance", key, a)
		}
	}
	return nil
}

// adopts reports whether router key to of st took over the previous status'
// per-Service instance from (§5's adoption): from is gone, to is new, lists all of
// from's addresses and has from's top node as its own, so no address changes node.
func adopts(prev, st *v1alpha1.KeepalivedGroupStatus, from, to string) bool {
	_, still := routerIndex(st, from)
	_, had := routerIndex(prev, to)
	if still || had || !strings.HasPrefix(to, sharing.RouterKeyPrefix) || strings.HasPrefix(from, sharing.RouterKeyPrefix) {
		return false
	}
	old, nu := instanceByKey(prev, from), instanceByKey(st, to)
	for _, a := range old.VIPs {
		if !slices.Contains(nu.VIPs, a) {
			return false
		}
	}
	return topOf(prev, old) != "" && topOf(prev, old) == topOf(st, nu)
}

// adoptions are the (per-Service key, router key) pairs of st that adopted an ID of
// prev (adopts).
func adoptions(prev, st *v1alpha1.KeepalivedGroupStatus) [][2]string {
	byID := map[int]string{}
	for _, in := range st.Instances {
		byID[in.VRID] = in.Key
	}
	var out [][2]string
	for _, in := range prev.Instances {
		if k, ok := byID[in.VRID]; ok && k != in.Key && adopts(prev, st, in.Key, k) {
			out = append(out, [2]string{in.Key, k})
		}
	}
	return out
}

func (l *statusLog) snapshot() ([]v1alpha1.KeepalivedGroupStatus, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]v1alpha1.KeepalivedGroupStatus(nil), l.written...), append([]string(nil), l.errs...)
}

// topOf is the node with the highest priority of an instance of st.
func topOf(st *v1alpha1.KeepalivedGroupStatus, in *v1alpha1.Instance) string {
	names := make([]string, len(st.Nodes))
	for i, n := range st.Nodes {
		names[i] = n.Name
	}
	return (&mover{}).top(in, names)
}

// routersOf maps each address to the keys of the instances of st listing it.
func routersOf(st *v1alpha1.KeepalivedGroupStatus) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for _, in := range st.Instances {
		for _, a := range parseVIPs(in.VIPs) {
			out[a] = append(out[a], in.Key)
		}
	}
	return out
}

// setMasters writes the group's KeepalivedMastership as vrrpd would: each of the
// given instances mastered by the node given.
func setMasters(t *testing.T, ns, name string, masters map[string]string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 30*time.Second, func() error {
		var m v1alpha1.KeepalivedMastership
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &m); err != nil {
			return err
		}
		m.Status.Holders = nil
		for inst, node := range masters {
			m.Status.Holders = append(m.Status.Holders, v1alpha1.VIPHolder{Instance: inst, Node: node, Since: metav1.NowMicro()})
		}
		return k8s.Status().Update(ctx, &m)
	})
}

// TestSharedMovePhasesOnJoin: a 4th node joins a 3-node shared group of 300 Services
// (§4 case 2). Write 1 lists every moving address in its new router B and keeps it
// in its old router A, and each B whose top is the joining node is staged (the node
// holding the addresses through A first); the operator is restarted between the
// writes and carries on from the status alone; when KeepalivedMastership names the
// staged holders as the new routers' masters, write 2 comes (sooner than the timed
// fallback), and the writes after it (the staged routers handed over to the joining
// node one a write, TestSharedJoinHandoversPaced, KeepalivedMastership following each
// as vrrpd would) leave every address in exactly one router with the plan's
// priorities. No status written on the way has an address in no router or a router
// ID twice.
func TestSharedMovePhasesOnJoin(t *testing.T) {
	ns := newNamespace(t, "shmove")
	lbl := map[string]string{"shmove-test": ns}
	newNodes(t, ns, 3, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	})
	const n = 300
	vips := createServices(t, ns, ns+"/g", n)
	tm := startManager(t, ns)
	eventually(t, 2*time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 3, 6)
		return err
	})
	before := getGroup(t, ns, "g").Status
	oldRouter := map[netip.Addr]string{}
	for a, ks := range routersOf(&before) {
		oldRouter[a] = ks[0]
	}
	log := watchStatuses(t, ns, "g", vips)

	joined := newNodes(t, ns+"-j", 1, lbl)[0]
	var step1 v1alpha1.KeepalivedGroupStatus
	eventually(t, time.Minute, func() error {
		st := getGroup(t, ns, "g").Status
		if len(st.Nodes) != 4 {
			return fmt.Errorf("%d nodes", len(st.Nodes))
		}
		step1 = st
		return nil
	})
	written1 := time.Now()
	tm.stop()

	// Write 1: every address still in its old router; the new routers list only
	// addresses their old router lists too.
	by := routersOf(&step1)
	moving := 0
	newRouters := map[string]*v1alpha1.Instance{}
	for i := range step1.Instances {
		in := &step1.Instances[i]
		if _, old := routerIndex(&before, in.Key); !old {
			newRouters[in.Key] = in
		}
	}
	if len(newRouters) == 0 {
		t.Fatal("write 1 created no router")
	}
	for key, a := range vips {
		ks := by[a]
		if !contains(ks, oldRouter[a]) {
			t.Fatalf("write 1: %s's address %s is not in its old router %s any more: %v", key, a, oldRouter[a], ks)
		}
		if len(ks) == 2 {
			moving++
		}
	}
	staged := 0
	for key, in := range newRouters {
		exact := strings.Split(key[strings.Index(key, "/")+1:], ",")
		for _, a := range parseVIPs(in.VIPs) {
			if len(by[a]) != 2 {
				t.Fatalf("write 1: new router %s lists %s, which is in %v", key, a, by[a])
			}
		}
		top := topOf(&step1, in)
		holder := topOf(&before, instanceByKey(&before, oldRouter[parseVIPs(in.VIPs)[0]]))
		if top != holder {
			t.Errorf("write 1: new router %s's top is %s, want the holder %s", key, top, holder)
		}
		if exact[0] == joined {
			staged++
			if top == joined {
				t.Errorf("write 1: router %s is not staged", key)
			}
		}
	}
	t.Logf("write 1: %d new routers (%d staged), %d addresses in two routers", len(newRouters), staged, moving)
	if staged == 0 || moving == 0 {
		t.Fatalf("write 1: %d staged routers, %d moving addresses", staged, moving)
	}

	// A new operator, and vrrpd reporting each router's top in the status as its
	// master (the staged holders for the staged routers).
	startManager(t, ns)
	followMasters(t, ns, "g", 0)
	eventually(t, time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 4, 12)
		return err
	})
	took := time.Since(written1)
	wait := moveWait(groupSettings(getGroup(t, ns, "g")))
	t.Logf("the plan within %v of write 1 (timed fallback %v, with KeepalivedMastership %v)", took.Round(time.Millisecond), wait, mastershipWaitFactor*wait)
	if took >= wait {
		t.Errorf("the plan took %v: not on KeepalivedMastership's word", took)
	}
	written, errs := log.snapshot()
	for _, e := range errs {
		t.Error(e)
	}
	t.Logf("%d statuses written during the join", len(written))
}

// routerIndex finds key among st's instances.
func routerIndex(st *v1alpha1.KeepalivedGroupStatus, key string) (int, bool) {
	for i := range st.Instances {
		if st.Instances[i].Key == key {
			return i, true
		}
	}
	return 0, false
}

func instanceByKey(st *v1alpha1.KeepalivedGroupStatus, key string) *v1alpha1.Instance {
	i, ok := routerIndex(st, key)
	if !ok {
		return &v1alpha1.Instance{}
	}
	return &st.Instances[i]
}

func contains(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// TestSharedConversionFromPerService: 250 Services served one instance each
// (routerSharing: PerService) switch to Shared (§5). The group reaches the
// full shared plan (6 routers on 3 nodes) in several writes, one router's members
// converting at a time: in no write is an address in no instance, a router ID on
// two instances, or an ID the previous write had on another key; and in no write
// do two routers list addresses that a per-Service instance lists too.
func TestSharedConversionFromPerService(t *testing.T) {
	ns := newNamespace(t, "shconv")
	lbl := map[string]string{"shconv-test": ns}
	newNodes(t, ns, 3, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.AdvertInterval = &metav1.Duration{Duration: 100 * time.Millisecond}
		g.Spec.RouterSharing = v1alpha1.RouterSharingPerService
	})
	const n = 250
	vips := createServices(t, ns, ns+"/g", n)
	startManager(t, ns)
	eventually(t, 2*time.Minute, func() error {
		if c := len(getGroup(t, ns, "g").Status.Instances); c != n {
			return fmt.Errorf("%d per-Service instances, want %d", c, n)
		}
		return nil
	})
	log := watchStatuses(t, ns, "g", vips)

	start := switchToShared(t, ns, "g", log)
	eventually(t, time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 3, 6)
		return err
	})
	t.Logf("converted %d per-Service instances to 6 shared routers in %v; statuses:%s", n, time.Since(start).Round(time.Millisecond), log.summary(start))

	written, errs := log.snapshot()
	for _, e := range errs {
		t.Error(e)
	}
	steps := 0
	for i := range written {
		st := &written[i]
		perService := map[netip.Addr]bool{}
		for _, in := range st.Instances {
			if !strings.HasPrefix(in.Key, sharing.RouterKeyPrefix) {
				for _, a := range parseVIPs(in.VIPs) {
					perService[a] = true
				}
			}
		}
		converting := map[string]bool{}
		for _, in := range st.Instances {
			if !strings.HasPrefix(in.Key, sharing.RouterKeyPrefix) {
				continue
			}
			for _, a := range parseVIPs(in.VIPs) {
				if perService[a] {
					converting[in.Key] = true
				}
			}
		}
		if len(converting) > 1 {
			t.Errorf("status %d: %d routers converting at once: %v", i, len(converting), converting)
		}
		if len(converting) == 1 {
			steps++
		}
	}
	t.Logf("%d statuses written, %d with a router converting", len(written), steps)
	if steps < 6 {
		t.Errorf("%d writes with a router converting, want one at least per router (6)", steps)
	}
}

// stepGroup plans the group's next status from its status (computePlan, then
// stageMoves with the given KeepalivedMastership and instance ages), writes it into
// g.Status and returns the full plan's instances and the step's result.
func stepGroup(g *v1alpha1.KeepalivedGroup, services []corev1.Service, nodes []corev1.Node, masters map[string]string, age time.Duration) ([]v1alpha1.Instance, moveResult) {
	p := computePlan(g, services, nodes, nil)
	full := slices.Clone(p.instances)
	ages := map[string]time.Duration{}
	for _, in := range g.Status.Instances {
		ages[in.Key] = age
	}
	names := make([]string, len(g.Status.Nodes))
	for i, n := range g.Status.Nodes {
		names[i] = n.Name
	}
	var res moveResult
	if p.shared {
		res = stageMoves(&p, moveInputs{status: g.Status.Instances, nodes: names, masters: masters, ages: ages})
	}
	g.Status.Instances, g.Status.RouterIDs, g.Status.Nodes = p.instances, p.routerIDs, p.nodes
	return full, res
}

// TestStageMovesConditions: the step function alone (no API server). After a 4th node
// joins 3, write 1 keeps every address in its old router and lists the moving ones in
// their new routers too; the step is repeated unchanged, with the timed condition due
// at moveWait, until that wait has passed (KeepalivedMastership not served) or
// KeepalivedMastership names the staged holders (served), and then write 2 is the
// full plan. The state in flight is the status alone: a restarted operator (ages 0)
// takes the same step.
func TestStageMovesConditions(t *testing.T) {
	var nodes []corev1.Node
	for _, n := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	var services []corev1.Service
	for i := range 120 {
		services = append(services, sharedTestService("ns", fmt.Sprintf("s%03d", i), fmt.Sprintf("10.99.0.%d", i+1), false))
	}
	base := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared}}
	if full, res := stepGroup(base, services, nodes[:3], nil, 0); res.pending || !reflect.DeepEqual(full, base.Status.Instances) {
		t.Fatalf("a new group's first write is not its plan (pending %v)", res.pending)
	}
	wait := moveWait(groupSettings(base))
	for _, served := range []bool{false, true} {
		g := base.DeepCopy()
		var masters map[string]string
		if served {
			masters = map[string]string{}
		}
		full, res := stepGroup(g, services, nodes, masters, time.Hour)
		write1 := g.DeepCopy()
		if !res.pending || reflect.DeepEqual(full, g.Status.Instances) {
			t.Fatalf("served %v: the join was written whole", served)
		}
		by := routersOf(&g.Status)
		dual := 0
		for _, ks := range by {
			if len(ks) == 2 {
				dual++
			}
		}
		if dual == 0 || len(by) != len(services) {
			t.Fatalf("served %v: write 1 lists %d addresses, %d of them in two routers", served, len(by), dual)
		}
		limit := wait
		if served {
			limit *= mastershipWaitFactor
		}
		if got := res.requeue(served); served && got != time.Second || !served && got != limit {
			t.Errorf("served %v: requeue after %v", served, got)
		}
		// Not ready yet: the same step again, also for a restarted operator.
		for _, age := range []time.Duration{0, limit - time.Millisecond} {
			g2 := write1.DeepCopy()
			if _, res := stepGroup(g2, services, nodes, masters, age); !res.pending || !reflect.DeepEqual(g2.Status, write1.Status) {
				t.Fatalf("served %v, age %v: write 1 did not stay as it was", served, age)
			}
		}
		age := limit
		if served {
			// vrrpd names each staged holder master of its new router.
			for _, in := range write1.Status.Instances {
				masters[in.Key] = topOf(&write1.Status, &in)
			}
			age = 0
		}
		// Write 2, then the staged routers' handovers one a write
		// (TestStageMovesHandoversPaced), vrrpd's view following each write.
		for w := 2; ; w++ {
			prev := g.Status.DeepCopy()
			_, res := stepGroup(g, services, nodes, masters, age)
			if h := handedOver(prev, &g.Status, full); len(h) > 1 {
				t.Fatalf("served %v: write %d handed over %v at once", served, w, h)
			}
			if !res.pending {
				if !reflect.DeepEqual(g.Status.Instances, full) {
					t.Fatalf("served %v: write %d, the last, is not the plan", served, w)
				}
				break
			}
			if w > 6 {
				t.Fatalf("served %v: not the plan after %d writes", served, w)
			}
			if served {
				maps.Copy(masters, statusTops(&g.Status))
			}
		}
	}
}

// TestStageMovesConversionPaced: the step function converting 250 per-Service
// instances: one router's members at a time, in router key order, each step valid
// (checkStep), until the full shared plan.
func TestStageMovesConversionPaced(t *testing.T) {
	g, services, nodes, vips := perServiceGroup(t, 250, 250)
	var started []string
	for step := 0; ; step++ {
		prev := g.Status.DeepCopy()
		full, res := stepGroup(g, services, nodes, nil, time.Hour)
		if err := checkStep(prev, &g.Status, vips); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for _, in := range g.Status.Instances {
			if _, had := routerIndex(prev, in.Key); !had {
				started = append(started, in.Key)
			}
		}
		if !res.pending {
			if !reflect.DeepEqual(g.Status.Instances, full) {
				t.Fatal("the last step is not the plan")
			}
			t.Logf("converted in %d writes", step+1)
			break
		}
		if step > 12 {
			t.Fatalf("not converted after %d writes", step+1)
		}
	}
	if len(started) != 6 || !slices.IsSorted(started) {
		t.Fatalf("routers started %v, want 6 one a write in key order", started)
	}
}

// TestStageMovesDepthChangePaced: a 9th node joining 8 changes the depth from 2 exact
// ranks to 1 (56 routers become 9, every member changes router). The step function
// paces it like a conversion: in no write do two new routers list addresses that a
// router of the old depth lists too, each write is valid (checkStep), and the last is
// the full plan.
func TestStageMovesDepthChangePaced(t *testing.T) {
	var nodes []corev1.Node
	for i := range 9 {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}})
	}
	var services []corev1.Service
	vips := map[string]netip.Addr{}
	for i := range 300 {
		a := fmt.Sprintf("fd00:99::2:%x", i)
		services = append(services, sharedTestService("ns", fmt.Sprintf("s%03d", i), a, false))
		vips[fmt.Sprintf("ns/s%03d", i)] = netip.MustParseAddr(a)
	}
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared}}
	stepGroup(g, services, nodes[:8], nil, 0)
	writes := 0
	for ; ; writes++ {
		prev := g.Status.DeepCopy()
		full, res := stepGroup(g, services, nodes, nil, time.Hour)
		if err := checkStep(prev, &g.Status, vips); err != nil {
			t.Fatalf("write %d: %v", writes, err)
		}
		old := map[netip.Addr]bool{}
		for _, in := range g.Status.Instances {
			if d, _ := routerDepth(in.Key); d == 2 {
				for _, a := range parseVIPs(in.VIPs) {
					old[a] = true
				}
			}
		}
		converting := 0
		for _, in := range g.Status.Instances {
			if d, _ := routerDepth(in.Key); d == 1 && slices.ContainsFunc(parseVIPs(in.VIPs), func(a netip.Addr) bool { return old[a] }) {
				converting++
			}
		}
		if converting > 1 {
			t.Fatalf("write %d: %d routers converting at once", writes, converting)
		}
		if !res.pending {
			if !reflect.DeepEqual(g.Status.Instances, full) || len(full) != 9 {
				t.Fatalf("the last write is not the plan of 9 routers (%d)", len(full))
			}
			break
		}
		if writes > 40 {
			t.Fatalf("not done after %d writes", writes)
		}
	}
	t.Logf("depth change 2 -> 1 exact ranks (8 -> 9 nodes, 300 Services) in %d writes", writes+1)
	if writes < 9 {
		t.Fatalf("%d writes: not paced one router a write", writes+1)
	}
}

// fullSegment is a group of 260 Services on 3 nodes, per Service, on a segment
// its 255 instances fill, switched to Shared.
func fullSegment(t *testing.T) (*v1alpha1.KeepalivedGroup, []corev1.Service, []corev1.Node, map[string]netip.Addr) {
	t.Helper()
	return perServiceGroup(t, 260, 255)
}

// perServiceGroup is a group of n Services (ns/s000..., one IPv6 address each) on the
// nodes a, b and c, planned per Service (want instances, or the test fails), then
// switched to Shared: the start of a conversion.
func perServiceGroup(t *testing.T, n, want int) (*v1alpha1.KeepalivedGroup, []corev1.Service, []corev1.Node, map[string]netip.Addr) {
	t.Helper()
	var nodes []corev1.Node
	for _, name := range []string{"a", "b", "c"} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	var services []corev1.Service
	vips := map[string]netip.Addr{}
	for i := range n {
		a := fmt.Sprintf("fd00:99::2:%x", i)
		services = append(services, sharedTestService("ns", fmt.Sprintf("s%03d", i), a, false))
		vips[fmt.Sprintf("ns/s%03d", i)] = netip.MustParseAddr(a)
	}
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}, Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingPerService}}
	stepGroup(g, services, nodes, nil, 0)
	if len(g.Status.Instances) != want {
		t.Fatalf("%d per-Service instances, want %d", len(g.Status.Instances), want)
	}
	g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	return g, services, nodes, vips
}

// TestStageMovesFullSegmentAdopts: a segment with no free router ID (one group's 255
// per-Service instances, 5 more Services without one) converts (§5's adoption). The
// first write creates the first router in key order with the ID of one of its
// members' per-Service instances, which it drops in the same write (the lowest
// member key of those held by the router's top: all are here), every later router
// takes an ID freed a write earlier, each write is valid (checkStep: no address
// dropped, no ID twice, no ID passed to another key except by an adoption), and the
// last one is the plan, serving all 260 Services.
func TestStageMovesFullSegmentAdopts(t *testing.T) {
	g, services, nodes, vips := fullSegment(t)
	var adopted [][2]string
	var started []string
	for step := 0; ; step++ {
		prev := g.Status.DeepCopy()
		full, res := stepGroup(g, services, nodes, nil, time.Hour)
		if err := checkStep(prev, &g.Status, vips); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		ad := adoptions(prev, &g.Status)
		if step == 0 && len(ad) != 1 {
			t.Fatalf("write 1 adopted %v, want one per-Service instance", ad)
		}
		adopted = append(adopted, ad...)
		for _, in := range g.Status.Instances {
			if _, had := routerIndex(prev, in.Key); !had {
				started = append(started, in.Key)
			}
		}
		if !res.pending {
			if !reflect.DeepEqual(g.Status.Instances, full) {
				t.Fatal("the last step is not the plan")
			}
			t.Logf("converted in %d writes, adopting %v", step+1, adopted)
			break
		}
		if step > 14 {
			t.Fatalf("not converted after %d writes", step+1)
		}
	}
	if len(adopted) != 1 || len(started) != 6 || !slices.IsSorted(started) || adopted[0][1] != started[0] {
		t.Fatalf("adopted %v, routers started %v; want one adoption by the first of 6 routers started one a write in key order", adopted, started)
	}
	// The adopted member is the lowest member key of its router.
	p := computePlan(g, services, nodes, nil)
	var first string
	for mem, rk := range p.memberRouter {
		if rk == adopted[0][1] && (first == "" || mem < first) {
			first = mem
		}
	}
	if adopted[0][0] != first {
		t.Errorf("adopted %s, want the router's lowest member key %s", adopted[0][0], first)
	}
	if len(g.Status.RouterIDs) != 260 || len(p.leftOut) != 0 {
		t.Errorf("%d Services with a router ID, %d left out; want all 260", len(g.Status.RouterIDs), len(p.leftOut))
	}
}

// TestStageMovesFullSegmentStalls: a full segment where no member's per-Service
// instance is held by its router's top node (KeepalivedMastership names another node
// for every one: their top nodes were down and preempt is off) has nothing to adopt
// without moving addresses: nothing moves, the routers are left out and reported,
// and the group is not requeued.
func TestStageMovesFullSegmentStalls(t *testing.T) {
	g, services, nodes, _ := fullSegment(t)
	before := g.Status.DeepCopy()
	masters := map[string]string{}
	for i := range g.Status.Instances {
		in := &g.Status.Instances[i]
		other := "a"
		if topOf(&g.Status, in) == "a" {
			other = "b"
		}
		masters[in.Key] = other
	}
	p := computePlan(g, services, nodes, nil)
	ages := map[string]time.Duration{}
	for _, in := range g.Status.Instances {
		ages[in.Key] = time.Hour
	}
	res := stageMoves(&p, moveInputs{status: g.Status.Instances, nodes: []string{"a", "b", "c"}, masters: masters, ages: ages})
	if res.pending || res.requeue(true) != 0 {
		t.Fatalf("a stalled conversion asks to be run again (%+v)", res)
	}
	if !sameInstances(p.instances, before.Instances) {
		t.Fatal("the per-Service instances did not stay as they were")
	}
	if len(p.leftOut) == 0 || len(p.leftOutServices) != 5 {
		t.Fatalf("left out: %d keys, %d Services (want the routers and 5)", len(p.leftOut), len(p.leftOutServices))
	}
	for k, id := range before.RouterIDs {
		if p.routerIDs[k] != id {
			t.Fatalf("routerIDs[%s] = %d, was %d", k, p.routerIDs[k], id)
		}
	}
}

// TestStagedStatusContract: vrrpd's translation (groupsource.Translate) takes the
// steps in flight whole on every node: write 1 of a join (addresses in two routers,
// staged priorities) and a conversion step (addresses in a router and their
// per-Service instances). Every status instance runs, at the priority the step gives
// the node, and an address listed twice is in both virtual routers.
func TestStagedStatusContract(t *testing.T) {
	nodes := []corev1.Node{node("n1", "10.99.0.1"), node("n2", "10.99.0.2"), node("n3", "10.99.0.3"), node("n4", "10.99.0.4")}
	var services []corev1.Service
	for i := range 200 {
		services = append(services, sharedTestService("ns", fmt.Sprintf("s%03d", i), fmt.Sprintf("10.99.1.%d", i+1), false))
	}
	join := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingShared}}
	stepGroup(join, services, nodes[:3], nil, 0)
	stepGroup(join, services, nodes, nil, time.Hour)
	conv := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}, Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingPerService}}
	stepGroup(conv, services, nodes[:3], nil, 0)
	conv.Spec.RouterSharing = v1alpha1.RouterSharingShared
	stepGroup(conv, services, nodes[:3], nil, time.Hour)
	for name, g := range map[string]*v1alpha1.KeepalivedGroup{"join write 1": join, "conversion step 1": conv} {
		listed := map[netip.Addr]int{}
		for _, in := range g.Status.Instances {
			for _, a := range parseVIPs(in.VIPs) {
				listed[a]++
			}
		}
		twice := 0
		for _, c := range listed {
			if c == 2 {
				twice++
			}
		}
		if twice == 0 {
			t.Fatalf("%s: no address in two instances", name)
		}
		for self, n := range g.Status.Nodes {
			cfg, _, err := groupsource.Translate(g, n.Name, nil, nil)
			if err != nil {
				t.Fatalf("%s, %s: vrrpd rejects the step: %v", name, n.Name, err)
			}
			if len(cfg.Instances) != len(g.Status.Instances) {
				t.Fatalf("%s, %s: vrrpd runs %d virtual routers, want %d", name, n.Name, len(cfg.Instances), len(g.Status.Instances))
			}
			seen := map[netip.Addr]int{}
			for _, ci := range cfg.Instances {
				st := instanceByKey(&g.Status, groupsource.InstanceKey(ci.Name))
				pr, err := v1alpha1.DecodePriorities(st.Priorities, len(g.Status.Nodes))
				if err != nil || ci.Priority != pr[self] || int(ci.VRID) != st.VRID {
					t.Fatalf("%s, %s: %s priority %d VRID %d, status %v VRID %d (%v)", name, n.Name, ci.Name, ci.Priority, ci.VRID, pr, st.VRID, err)
				}
				for _, v := range append(ci.VIPs, ci.ExcludedVIPs...) {
					seen[v.Prefix.Addr()]++
				}
			}
			for a, c := range listed {
				if seen[a] != c {
					t.Fatalf("%s, %s: %s in %d virtual routers, the step lists it in %d", name, n.Name, a, seen[a], c)
				}
			}
		}
		t.Logf("%s: %d instances, %d addresses in two", name, len(g.Status.Instances), twice)
	}
}

// TestSharedMovePhasesWithoutMastership: on an API server without the
// KeepalivedMastership CRD (a Helm upgrade leaves new CRDs out) a join's write 2 comes
// on the timed condition: moveWait after write 1 (1.4 s at 100 ms adverts), without
// anything else happening to the group; the staged routers' handovers then follow one
// a moveWait, so the last address leaves its old router no sooner than that.
func TestSharedMovePhasesWithoutMastership(t *testing.T) {
	withoutMastershipCRD(t)
	ns := newNamespace(t, "shmovet")
	lbl := map[string]string{"shmovet-test": ns}
	newNodes(t, ns, 3, lbl)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = lbl
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
		g.Spec.AdvertInterval = &metav1.Duration{Duration: 100 * time.Millisecond}
	})
	vips := createServices(t, ns, ns+"/g", 100)
	startManager(t, ns)
	eventually(t, time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 3, 6)
		return err
	})
	log := watchStatuses(t, ns, "g", vips)
	newNodes(t, ns+"-j", 1, lbl)
	eventually(t, time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 4, 12)
		return err
	})
	wait := moveWait(groupSettings(getGroup(t, ns, "g")))
	var first, last time.Time
	eventually(t, 10*time.Second, func() error {
		written, errs := log.snapshot()
		for _, e := range errs {
			t.Error(e)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		first, last = time.Time{}, time.Time{}
		for i := range written {
			st := &written[i]
			if len(st.Nodes) != 4 {
				continue
			}
			twice := false
			for _, ks := range routersOf(st) {
				twice = twice || len(ks) == 2
			}
			if twice && first.IsZero() {
				first = log.at[i]
			}
			if !twice && !first.IsZero() {
				last = log.at[i]
				return nil
			}
		}
		return fmt.Errorf("no write 1 then write 2 among %d statuses", len(written))
	})
	t.Logf("no address in two routers %v after write 1 (moveWait %v)", last.Sub(first).Round(time.Millisecond), wait)
	// The operator's clock starts before write 1 reaches the watch, so the gap seen here
	// may be shorter than the wait by a watch delivery's difference: 200 ms of room.
	if last.Sub(first) < wait-200*time.Millisecond {
		t.Fatalf("write 2 came %v after write 1, before the timed condition (%v)", last.Sub(first), wait)
	}
}

// switchToShared sets ns/name's routerSharing to Shared and returns when it did; the
// statuses log is printed if the test fails.
func switchToShared(t *testing.T, ns, name string, log *statusLog) time.Time {
	t.Helper()
	start := time.Now()
	eventually(t, 30*time.Second, func() error {
		g := getGroup(t, ns, name)
		g.Spec.RouterSharing = v1alpha1.RouterSharingShared
		return k8s.Update(context.Background(), g)
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("statuses:%s", log.summary(start))
		}
	})
	return start
}
