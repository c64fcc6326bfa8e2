package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// The Service → VIP path (issue 12): from the create request to the API server to the VIP
// held on exactly one node, in parts. Each part is measured where it happens, on the one
// clock of the machine:
//
//   - operator: the create request until the group's status naming the VIP reaches a watch
//     the test holds (the operator's reconcile, allocation and status write, plus one watch
//     delivery);
//   - watch: from there until the master's vrrpd received the event (its watch goes through
//     the lab's proxy; both watches are told at once, so this is the difference between
//     the two deliveries and may be below zero);
//   - cache, translate: vrrpd's cache write and groupsource.Translate, as vrrpd's "group
//     applied" debug line reports them; other: the rest of vrrpd's time between the event
//     and the call of daemon.Reload;
//   - reload: from that call until the daemon's loop started the new instance (its
//     Master_Down_Timer's deadline, which vrrpd logs, less Master_Down_Interval);
//   - startup: from the instance's start until it became MASTER (its /status
//     LastTransition): the protocol's Master_Down_Interval, which a new instance must wait
//     so that it hears an existing master first, and the timer's lateness;
//   - vip: from MASTER until the test saw the VIP on the node (the netlink add, and the
//     test's polling of the hosts every millisecond or so).

// svcSample is one Service's path to its VIP.
type svcSample struct {
	total, operator, watch, cache, translate, reload, other, startup, vip time.Duration
	// armed is from vrrpd's call of daemon.Reload to the deadline of the new instance's
	// first Master_Down_Timer: never less than Master_Down_Interval.
	armed time.Duration
}

// svcParts names the parts of svcSample for reports, in the order of the path.
var svcParts = []struct {
	name string
	of   func(svcSample) time.Duration
}{
	{"operator", func(s svcSample) time.Duration { return s.operator }},
	{"watch", func(s svcSample) time.Duration { return s.watch }},
	{"cache", func(s svcSample) time.Duration { return s.cache }},
	{"translate", func(s svcSample) time.Duration { return s.translate }},
	{"reload", func(s svcSample) time.Duration { return s.reload }},
	{"startup", func(s svcSample) time.Duration { return s.startup }},
	{"vip-add", func(s svcSample) time.Duration { return s.vip }},
}

// svcLab is the group lab with vrrpd running on each node host and a watch of the group's
// status from the test.
type svcLab struct {
	ns      string
	hosts   []*netlab.Host
	daemons map[string]*vrrpd
	seen    *statusSeen
}

// newSvcLab makes the lab with the named node hosts (h1, h2, and h3 if asked: its Node is
// made here), the group at the given advertisement interval, and vrrpd on every node host,
// each having applied the empty group, with routerSharing sharing (unset: the default).
func newSvcLab(t testing.TB, interval time.Duration, sharing v1alpha1.RouterSharing, nodes ...string) *svcLab {
	t.Helper()
	need(t)
	vrrpdBinary(t)
	createNodes(t)
	if slices.Contains(nodes, "h3") {
		createNode(t, "h3", "10.99.0.13")
	}
	lab, ns := groupLabHosts(t, v1alpha1.KeepalivedGroupSpec{VRRPVersion: 3, AdvertInterval: &metav1.Duration{Duration: interval}, RouterSharing: sharing}, nodes...)
	l := &svcLab{ns: ns, daemons: map[string]*vrrpd{}, seen: watchStatus(t, ns)}
	args := daemonSetArgs(t, ns)
	environ := []string{"KUBECONFIG=" + vrrpdKubeconfig(t, ns)}
	for _, n := range nodes {
		h := lab.Host(n)
		l.hosts = append(l.hosts, h)
		l.daemons[n] = startNodeVrrpd(t, h, args, environ)
	}
	for n, d := range l.daemons {
		vrrpdtest.WaitFor(t, 10*time.Second, "vrrpd on "+n+" following the group", func() bool {
			return strings.Contains(d.Output(), "from_cache=false")
		})
	}
	return l
}

// createNode makes one more labelled Node, as createNodes does.
func createNode(t testing.TB, name, addr string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nodeLabel: "true"}}}
	if err := env.Client.Create(ctx, n); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}}
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatalf("node %s status: %v", name, err)
	}
}

// statusSeen records when the group's status first named each VIP, as a watch of the
// test's saw it, and each VIP's ranked master (highest priority) from that status.
type statusSeen struct {
	mu     sync.Mutex
	at     map[netip.Addr]time.Time
	master map[netip.Addr]string
}

func watchStatus(t testing.TB, ns string) *statusSeen {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, &v1alpha1.KeepalivedGroupList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &statusSeen{at: map[netip.Addr]time.Time{}, master: map[netip.Addr]string{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			now := time.Now()
			g, ok := ev.Object.(*v1alpha1.KeepalivedGroup)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			s.record(g, now)
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return s
}

func (s *statusSeen) record(g *v1alpha1.KeepalivedGroup, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range g.Status.Instances {
		prios, err := v1alpha1.DecodePriorities(in.Priorities, len(g.Status.Nodes))
		if err != nil {
			continue
		}
		top := slices.Index(prios, slices.Max(prios))
		for _, v := range in.VIPs {
			a, err := parseVIP(v)
			if err != nil {
				continue
			}
			if _, ok := s.at[a]; !ok {
				s.at[a] = now
			}
			s.master[a] = g.Status.Nodes[top].Name
		}
	}
}

func (s *statusSeen) get(a netip.Addr) (time.Time, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.at[a]
	return at, s.master[a], ok
}

// stepDownRE matches a MASTER that a higher priority's advertisement sent back to BACKUP.
var stepDownRE = regexp.MustCompile(`msg="\(([^)]*)\) Entering BACKUP STATE" from=MASTER reason="` + string(vrrp.ReasonPreempted) + `"`)

// stepDowns counts the step-downs in a daemon's log.
func stepDowns(log string) int { return len(stepDownRE.FindAllStringIndex(log, -1)) }

// appliedRE matches vrrpd's "group applied" line (cmd/vrrpd/kube.go).
var appliedRE = regexp.MustCompile(`msg="group applied" resource_version=\S+ instances=(\d+) received=(\S+) applied=(\S+) cache_us=(\d+) translate_us=(\d+) reload_us=(\d+)`)

// masterDownRE matches vrrpd's debug line of a Master_Down_Timer that fired.
var masterDownRE = regexp.MustCompile(`msg="\(([^)]*)\) Master_Down_Timer handled" .* deadline=(\S+)`)

// masterDownDeadline finds, in log, the deadline of instance's first Master_Down_Timer.
func masterDownDeadline(log, instance string) (time.Time, bool) {
	for _, m := range masterDownRE.FindAllStringSubmatch(log, -1) {
		if m[1] != instance {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[2])
		return at, err == nil
	}
	return time.Time{}, false
}

// applied finds, in log, the first "group applied" line with the given instance count.
func applied(log string, instances int) (received, at time.Time, cache, translate, reload time.Duration, ok bool) {
	for _, m := range appliedRE.FindAllStringSubmatch(log, -1) {
		if n, _ := strconv.Atoi(m[1]); n != instances {
			continue
		}
		r, err1 := time.Parse(time.RFC3339Nano, m[2])
		a, err2 := time.Parse(time.RFC3339Nano, m[3])
		if err1 != nil || err2 != nil {
			return
		}
		us := func(s string) time.Duration { v, _ := strconv.Atoi(s); return time.Duration(v) * time.Microsecond }
		return r, a, us(m[4]), us(m[5]), us(m[6]), true
	}
	return
}

// svcVIP is the VIP of the i-th Service of a run.
func svcVIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 99, 0, byte(120 + i)}) }

// runServiceToVIP creates n Services one after another, each with one VIP, and measures
// each one's path to its VIP. It waits between Services until the group has settled
// (three advertisement intervals after the VIP appeared), so that a step-down would show.
// It returns the samples and the step-downs both daemons logged.
func (l *svcLab) runServiceToVIP(t testing.TB, n int, interval time.Duration) ([]svcSample, int) {
	t.Helper()
	var out []svcSample
	groupRef := l.ns + "/" + groupName
	before := map[string]opFigures{"keepalivedgroup": operatorFigures(t, "keepalivedgroup"), "service": operatorFigures(t, "service")}
	defer logOperator(t, before, n)
	for i := range n {
		v := svcVIP(i)
		offsets := map[string]int{}
		for name, d := range l.daemons {
			offsets[name] = len(d.Output())
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: fmt.Sprintf("s%d", i), Annotations: map[string]string{v1alpha1.AnnotationGroup: groupRef}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}, ExternalIPs: []string{v.String()}},
		}
		t0 := time.Now()
		if err := env.Client.Create(context.Background(), svc); err != nil {
			t.Fatalf("create service %d: %v", i, err)
		}
		var holder string
		for {
			if hs := vrrpdtest.Holders(t, v, l.hosts...); len(hs) == 1 {
				holder = hs[0]
				break
			}
			if time.Since(t0) > 10*time.Second {
				t.Fatalf("Service %d: VIP %v not held on exactly one node within 10s", i, v)
			}
			time.Sleep(500 * time.Microsecond)
		}
		held := time.Now()
		time.Sleep(3*interval + 50*time.Millisecond)
		seenAt, master, ok := l.seen.get(v)
		if !ok {
			t.Fatalf("Service %d: the test's watch never saw VIP %v in the status", i, v)
		}
		if hs := vrrpdtest.Holders(t, v, l.hosts...); len(hs) != 1 || hs[0] != master {
			t.Fatalf("Service %d: VIP %v held by %v after settling, its ranked master is %s (first held by %s)", i, v, hs, master, holder)
		}
		d := l.daemons[master]
		received, appliedAt, cache, translate, reload, ok := applied(d.Output()[offsets[master]:], i+1)
		if !ok {
			t.Fatalf("Service %d: no \"group applied\" line with %d instances from vrrpd on %s", i, i+1, master)
		}
		st, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		name := svc.Namespace + "/" + svc.Name
		var mastered time.Time
		for _, in := range st.Instances {
			if in.Name == name && in.State == "MASTER" {
				mastered = in.LastTransition
			}
		}
		if mastered.IsZero() {
			t.Fatalf("Service %d: vrrpd on %s does not run %s as MASTER: %+v", i, master, name, st.Instances)
		}
		deadline, ok := masterDownDeadline(d.Output()[offsets[master]:], name)
		if !ok {
			t.Fatalf("Service %d: no Master_Down_Timer line for %s from vrrpd on %s", i, name, master)
		}
		started := deadline.Add(-vrrp.Version3.MasterDownInterval(v1alpha1.PriorityHighest, interval))
		reloadCalled := appliedAt.Add(-reload)
		s := svcSample{
			total: held.Sub(t0), operator: seenAt.Sub(t0), watch: received.Sub(seenAt),
			cache: cache, translate: translate, reload: started.Sub(reloadCalled),
			startup: mastered.Sub(started), vip: held.Sub(mastered), armed: deadline.Sub(reloadCalled),
		}
		s.other = reloadCalled.Sub(received) - cache - translate
		if holder != master {
			t.Logf("Service %d: %v first held by %s, its ranked master is %s", i, v, holder, master)
		}
		out = append(out, s)
	}
	steps := 0
	for name, d := range l.daemons {
		k := stepDowns(d.Output())
		if k > 0 {
			t.Logf("vrrpd on %s stepped down %d times", name, k)
		}
		steps += k
	}
	return out, steps
}

// quantile is the q-quantile (nearest rank) of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func partOf(samples []svcSample, f func(svcSample) time.Duration) []time.Duration {
	out := make([]time.Duration, len(samples))
	for i, s := range samples {
		out[i] = f(s)
	}
	return out
}

// logBreakdown logs each part's p50 and p99 and the total's.
func logBreakdown(t testing.TB, samples []svcSample) {
	t.Helper()
	total := partOf(samples, func(s svcSample) time.Duration { return s.total })
	var b strings.Builder
	fmt.Fprintf(&b, "Service → VIP over %d Services: p50 %v, p99 %v\n", len(samples), ms3(quantile(total, .5)), ms3(quantile(total, .99)))
	for _, p := range svcParts {
		d := partOf(samples, p.of)
		fmt.Fprintf(&b, "  %-10s p50 %8v  p99 %8v\n", p.name, ms3(quantile(d, .5)), ms3(quantile(d, .99)))
	}
	d := partOf(samples, func(s svcSample) time.Duration { return s.other })
	fmt.Fprintf(&b, "  %-10s p50 %8v  p99 %8v (vrrpd between the event and the reload, besides the parts above)", "other", ms3(quantile(d, .5)), ms3(quantile(d, .99)))
	t.Log(b.String())
}

func ms3(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

// serviceToVIPGoal is issue 12's goal for the p99 at 100 ms advertisements:
// Master_Down_Interval + 100 ms.
const serviceToVIPGoal = 450 * time.Millisecond

// TestServiceToVIPNoStepDown creates 20 Services one at a time in a two-node group at
// 100 ms advertisements and fails if any new instance's first master is not its ranked
// master (a step-down: MASTER, then BACKUP on the ranked master's higher priority), or if
// the p99 from the create request to the VIP exceeds twice issue 12's goal. The goal itself
// (450 ms) is held by BenchmarkServiceToVIP: a loaded CI machine's scheduling delays are
// not the product's. routerSharing: PerService, since each Service must be a new instance
// (with shared routers the third Service onwards joins a router already master: no
// election, and a hold-back instead, internal/daemon/holdback.go).
func TestServiceToVIPNoStepDown(t *testing.T) {
	const interval = 100 * time.Millisecond
	l := newSvcLab(t, interval, v1alpha1.RouterSharingPerService, "h1", "h2")
	before := operatorFigures(t, "keepalivedgroup")
	samples, steps := l.runServiceToVIP(t, 20, interval)
	logBreakdown(t, samples)
	// Each new Service rewrites the group's events Role after the status, which reconciles
	// the group again at once, from a cache that has usually not seen the status yet: that
	// reconcile must find its own write (GroupReconciler.catchUp), not write over the stale
	// version and be refused (7 such errors in 20 Services without it). Two are allowed
	// for a cache two writes behind on a loaded machine.
	if e := operatorFigures(t, "keepalivedgroup").errors - before.errors; e > 2 {
		t.Errorf("%v of the group's reconciles failed (status write conflicts) over 20 new Services, want at most 2", e)
	}
	if steps > 0 {
		t.Errorf("%d step-downs over 20 new Services, want 0", steps)
	}
	if p99 := quantile(partOf(samples, func(s svcSample) time.Duration { return s.total }), .99); p99 > 2*serviceToVIPGoal {
		t.Errorf("Service → VIP p99 %v, more than twice the goal %v", p99, serviceToVIPGoal)
	}
	// The startup wait is the protocol's, never shorter: a new instance must be able to
	// hear an existing master before it claims the VIP.
	mdi := vrrp.Version3.MasterDownInterval(v1alpha1.PriorityHighest, interval)
	for i, s := range samples {
		if s.armed < mdi {
			t.Errorf("Service %d: first Master_Down_Timer due %v after the reload began, before Master_Down_Interval %v", i, s.armed, mdi)
		}
	}
}

// BenchmarkServiceToVIP measures the path from a Service's create request to its VIP held
// on one node (20 Services one after another, two nodes, 100 ms advertisements), with each
// part of it, and the step-downs of new instances (routerSharing: PerService, as
// TestServiceToVIPNoStepDown).
func BenchmarkServiceToVIP(b *testing.B) {
	const interval = 100 * time.Millisecond
	var all []svcSample
	steps := 0
	for range b.N {
		l := newSvcLab(b, interval, v1alpha1.RouterSharingPerService, "h1", "h2")
		s, k := l.runServiceToVIP(b, 20, interval)
		all = append(all, s...)
		steps += k
	}
	logBreakdown(b, all)
	total := partOf(all, func(s svcSample) time.Duration { return s.total })
	b.ReportMetric(ms(quantile(total, .5)), "svc-to-vip-p50-vrrpd-ms")
	b.ReportMetric(ms(quantile(total, .99)), "svc-to-vip-p99-vrrpd-ms")
	for _, p := range svcParts {
		d := partOf(all, p.of)
		b.ReportMetric(ms(quantile(d, .5)), "svc-to-vip-"+p.name+"-p50-vrrpd-ms")
		b.ReportMetric(ms(quantile(d, .99)), "svc-to-vip-"+p.name+"-p99-vrrpd-ms")
	}
	b.ReportMetric(float64(steps), "svc-new-step-downs-vrrpd-count")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// opFigures are the operator's controller-runtime metrics for one controller, summed: its
// work queue's wait, its reconciles' time, and their count and errors (each error is a
// retry, a status write conflict among them).
type opFigures struct {
	queueSum, reconcileSum float64 // seconds
	queued, reconciles     float64
	errors                 float64
}

// operatorFigures reads ctrl's figures from the process' controller-runtime registry, where
// the in-process operator (testoperator) records them.
func operatorFigures(t testing.TB, ctrl string) opFigures {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var f opFigures
	label := func(m *dto.Metric, name, value string) bool {
		for _, l := range m.GetLabel() {
			if l.GetName() == name && l.GetValue() == value {
				return true
			}
		}
		return false
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "workqueue_queue_duration_seconds":
				if label(m, "name", ctrl) {
					f.queueSum += m.GetHistogram().GetSampleSum()
					f.queued += float64(m.GetHistogram().GetSampleCount())
				}
			case "controller_runtime_reconcile_time_seconds":
				if label(m, "controller", ctrl) {
					f.reconcileSum += m.GetHistogram().GetSampleSum()
					f.reconciles += float64(m.GetHistogram().GetSampleCount())
				}
			case "controller_runtime_reconcile_total":
				if label(m, "controller", ctrl) && label(m, "result", "error") {
					f.errors += m.GetCounter().GetValue()
				}
			}
		}
	}
	return f
}

// logOperator logs, for the group controller and the Service controller, the mean queue
// wait and reconcile time and the reconciles and errors per Service between two readings.
func logOperator(t testing.TB, before map[string]opFigures, services int) {
	t.Helper()
	for _, c := range []string{"keepalivedgroup", "service"} {
		a, b := before[c], operatorFigures(t, c)
		n := b.reconciles - a.reconciles
		q := b.queued - a.queued
		if n == 0 || q == 0 {
			continue
		}
		t.Logf("operator %s: %.2f reconciles per Service (%.0f errors), mean queue wait %.2f ms, mean reconcile %.2f ms",
			c, n/float64(services), b.errors-a.errors, 1000*(b.queueSum-a.queueSum)/q, 1000*(b.reconcileSum-a.reconcileSum)/n)
	}
}

// runFailovers makes one Service in the lab's group (three nodes), then n times cuts the
// VIP's ranked master off the segment, waits until the next-ranked node holds the VIP and
// the third node's Master_Down_Interval has passed, and plugs the master back (it preempts
// its VIP back). It returns the step-downs logged while a master was cut off (a backup
// that took over before a better-ranked one and gave the VIP back to it), and each
// failover's time from the cut to the VIP held by the next-ranked node.
func (l *svcLab) runFailovers(t testing.TB, n int, interval time.Duration) (int, []time.Duration) {
	t.Helper()
	v := svcVIP(0)
	groupRef := l.ns + "/" + groupName
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: "f", Annotations: map[string]string{v1alpha1.AnnotationGroup: groupRef}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}, ExternalIPs: []string{v.String()}},
	}
	if err := env.Client.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	var g v1alpha1.KeepalivedGroup
	var ranked []string
	vrrpdtest.WaitFor(t, 10*time.Second, "the Service's instance in the group's status", func() bool {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: l.ns, Name: groupName}, &g); err != nil || len(g.Status.Instances) != 1 {
			return false
		}
		prios, err := v1alpha1.DecodePriorities(g.Status.Instances[0].Priorities, len(g.Status.Nodes))
		if err != nil || len(prios) != len(l.hosts) {
			return false
		}
		idx := make([]int, len(prios))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return int(prios[b]) - int(prios[a]) })
		ranked = ranked[:0]
		for _, i := range idx {
			ranked = append(ranked, g.Status.Nodes[i].Name)
		}
		return true
	})
	host := map[string]*netlab.Host{}
	for _, h := range l.hosts {
		host[h.Name] = h
	}
	m, next := ranked[0], ranked[1]
	settle := vrrp.Version3.MasterDownInterval(1, interval) + 5*interval
	waitHolders(t, 10*time.Second, "the ranked master "+m+" holds the VIP", map[netip.Addr]string{v: m}, l.hosts...)
	steps := 0
	var took []time.Duration
	for range n {
		offsets := map[string]int{}
		for name, d := range l.daemons {
			offsets[name] = len(d.Output())
		}
		cutAt := time.Now()
		if err := host[m].Cut(); err != nil {
			t.Fatal(err)
		}
		vrrpdtest.WaitFor(t, 5*time.Second, next+" taking over from "+m, func() bool {
			hs := vrrpdtest.Holders(t, v, host[next])
			return len(hs) == 1
		})
		took = append(took, time.Since(cutAt))
		time.Sleep(settle)
		for name, d := range l.daemons {
			steps += stepDowns(d.Output()[offsets[name]:])
		}
		if hs := vrrpdtest.Holders(t, v, l.hosts...); !slices.Contains(hs, next) || slices.Contains(hs, ranked[2]) {
			t.Fatalf("with %s cut off: VIP on %v, want %s", m, hs, next)
		}
		if err := host[m].Restore(); err != nil {
			t.Fatal(err)
		}
		waitHolders(t, 10*time.Second, m+" back preempts", map[netip.Addr]string{v: m}, l.hosts...)
	}
	return steps, took
}

// TestFailoverNoStepDown: 20 failovers of a three-node group at 100 ms and at 10 ms
// advertisements, each taken by the next-ranked node with no step-down: the third node's
// Skew_Time is 125/256 of an interval longer (placement.TopPriorities), more than a takeover
// and hearing it take.
func TestFailoverNoStepDown(t *testing.T) {
	for _, interval := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		t.Run(interval.String(), func(t *testing.T) {
			l := newSvcLab(t, interval, "", "h1", "h2", "h3")
			steps, took := l.runFailovers(t, 20, interval)
			t.Logf("failover at %v: p50 %v, p99 %v from the cut", interval, ms3(quantile(took, .5)), ms3(quantile(took, .99)))
			if steps > 0 {
				t.Errorf("%d step-downs over 20 failovers at %v, want 0", steps, interval)
			}
		})
	}
}

// BenchmarkFailoverStepDowns reports the step-downs over 20 failovers of a three-node
// group at 100 ms and at 10 ms advertisements (TestFailoverNoStepDown's run).
func BenchmarkFailoverStepDowns(b *testing.B) {
	for _, interval := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		b.Run(interval.String(), func(b *testing.B) {
			steps := 0
			for range b.N {
				l := newSvcLab(b, interval, "", "h1", "h2", "h3")
				k, _ := l.runFailovers(b, 20, interval)
				steps += k
			}
			b.ReportMetric(float64(steps), fmt.Sprintf("failover-3-nodes-%dms-step-downs-vrrpd-count", interval.Milliseconds()))
		})
	}
}
