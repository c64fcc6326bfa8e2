package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// The scale lab of issue 31: thousands of Services in one group whose Services share
// virtual routers, on three or four vrrpd hosts in Kubernetes mode, and the instruments
// that watch it (a netlink sampler of every host's addresses, a client that pings, and a
// capture of the announcements on the client's wire).
//
// The Services' addresses are IPv6, from fd00:99::2:1 up. The lab's IPv4 subnet is a /24
// (netlab.Prefix4) of which the hosts and the ARP watch's tags take a part: about 230
// addresses, far from 2,000, and the lab may use no other IPv4 range. fd00:99::/64 holds
// any number. IPv6 also makes the failover's announcements neighbour advertisements,
// which the capture reads like gratuitous ARPs.

// scaleServices is the 2,000, or E2E_SCALE_SERVICES (a measurement aid: the
// figures at smaller scales show where the time goes; the tests' assertions are the same).
var scaleServices = func() int {
	if n, err := strconv.Atoi(os.Getenv("E2E_SCALE_SERVICES")); err == nil && n > 0 {
		return n
	}
	return 2000
}()

const (
	scaleLabel  = "e2e.vrrp-operator.io/scale"
	scaleAdvert = 100 * time.Millisecond
	scaleBatch  = 250
)

// scaleVIP is the address of Service i (0-based).
func scaleVIP(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("fd00:99::2:%x", i+1)) }

// scaleLab is a lab of a client and node hosts, the operator, a group (routerSharing
// from the caller, VRRPv3, 100 ms adverts) over the Nodes labelled scaleLabel, and
// scaleServices Services with one externalIP each.
type scaleLab struct {
	lab    *netlab.Lab
	ns     string
	client *netlab.Host
	hosts  map[string]*netlab.Host
	// vips maps each Service's key (ns/name) to its one address; keys its keys, sorted.
	vips map[string]netip.Addr
	keys []string
	args []string
	env  []string
}

// newScaleLab builds the lab with node hosts names, the first members of them with their
// Node (labelled), the others in the lab without one, the operator and the group, and no
// Service yet (grow makes them).
func newScaleLab(t *testing.T, sharing v1alpha1.RouterSharing, members int, names ...string) *scaleLab {
	t.Helper()
	need(t)
	vrrpdBinary(t)
	lab := netlabtest.New(t, append([]string{"client"}, names...)...)
	startProxy(t, lab.Host("client"), proxyAddr, apiAddress(t))
	l := &scaleLab{lab: lab, ns: newNamespace(t), client: lab.Host("client"), hosts: map[string]*netlab.Host{}, vips: map[string]netip.Addr{}}
	var nodes []*netlab.Host
	for i, n := range names {
		l.hosts[n] = lab.Host(n)
		if i < members {
			nodes = append(nodes, lab.Host(n))
		}
	}
	labNodes(t, scaleLabel, nodes...)
	startOperator(t, l.ns)
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: groupName}, Spec: v1alpha1.KeepalivedGroupSpec{
		Interface: "eth0", NodeSelector: map[string]string{scaleLabel: "true"},
		VRRPVersion: 3, AdvertInterval: &metav1.Duration{Duration: scaleAdvert}, RouterSharing: sharing,
	}}
	if err := env.Client.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	l.args = daemonSetArgs(t, l.ns)
	l.env = []string{"KUBECONFIG=" + vrrpdKubeconfig(t, l.ns)}
	return l
}

// scaleAll is every Service's address the lab makes, for the sampler, which watches them
// from the start.
func scaleAll() []netip.Addr {
	out := make([]netip.Addr, scaleServices)
	for i := range out {
		out[i] = scaleVIP(i)
	}
	return out
}

// grow makes the Services up to n, a batch at a time, and after each batch waits until
// the group's status satisfies served (allListed: lists every Service made so far) and the running nodes
// hold each listed address on the node its instance ranks highest, for 2 s. It returns
// the last plan.
//
// In batches rather than all at once: vrrpd adds a new master's addresses in chunks with
// its adverts between, but on a loaded 2-core machine a chunk of IPv6 adds (the kernel's
// cost of one grows with the addresses the interface has: 0.5 ms each at 2,000) outlasts
// the others' Master_Down_Interval, they take over, and three daemons starting with 2,000
// addresses take them from each other for minutes. Batches keep each reload small.
func (l *scaleLab) grow(t *testing.T, smp *holderSampler, running []string, n, batch int, served func(p scalePlan) bool) scalePlan {
	t.Helper()
	start := time.Now()
	var p scalePlan
	for made := len(l.vips); made < n; made = len(l.vips) {
		l.createServices(t, made, min(made+batch, n))
		p = l.waitPlanWith(t, 2*time.Minute, served, running)
		want := map[netip.Addr]string{}
		for v := range p.router {
			want[v] = p.bestOf(v, running)
		}
		smp.waitSettled(t, 2*time.Minute, 2*time.Second, fmt.Sprintf("the first %d Services' addresses on their top node", len(l.vips)), want)
	}
	t.Logf("%d Services made, planned and held, %d at a time, in %v", n, batch, time.Since(start).Round(time.Millisecond))
	return p
}

// createServices makes Services s<from>... s<to-1> with one address each, eight at a time.
func (l *scaleLab) createServices(t *testing.T, from, to int) {
	t.Helper()
	cfg := *env.Config
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(&cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	work := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: fmt.Sprintf("s%04d", i),
						Annotations: map[string]string{v1alpha1.AnnotationGroup: l.ns + "/" + groupName}},
					Spec: corev1.ServiceSpec{
						Ports:       []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
						ExternalIPs: []string{scaleVIP(i).String()},
					},
				}
				if err := c.Create(context.Background(), svc); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("create %s: %w", svc.Name, err))
					mu.Unlock()
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		l.vips[fmt.Sprintf("%s/s%04d", l.ns, i)] = scaleVIP(i)
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	l.keys = l.keys[:0]
	for k := range l.vips {
		l.keys = append(l.keys, k)
	}
	sort.Strings(l.keys)
}

// startDaemon runs the group's vrrpd on host name, as its DaemonSet's pod would.
func (l *scaleLab) startDaemon(t *testing.T, name string) *vrrpd {
	t.Helper()
	return startNodeVrrpd(t, l.hosts[name], l.args, l.env)
}

// hostList is the named hosts, in that order.
func (l *scaleLab) hostList(names ...string) []*netlab.Host {
	var out []*netlab.Host
	for _, n := range names {
		out = append(out, l.hosts[n])
	}
	return out
}

// scalePlan is what the group's status says of the Services' addresses.
type scalePlan struct {
	nodes []string
	// router is each address's instance key, master the node its instance ranks first.
	router map[netip.Addr]string
	master map[netip.Addr]string
	// routers counts the instances; prio is each instance's priority on each node.
	routers int
	prio    map[string]map[string]uint8
	// missing counts the Services whose address no instance lists.
	missing int
}

// waitPlan waits until the group's status has exactly nodes (in any order) and lists every
// Service's address in exactly one instance, routers instances in all (0: any number).
func (l *scaleLab) waitPlan(t *testing.T, timeout time.Duration, routers int, nodes ...string) scalePlan {
	t.Helper()
	return l.waitPlanWith(t, timeout, func(p scalePlan) bool { return p.missing == 0 && (routers == 0 || p.routers == routers) }, nodes)
}

// waitPlanWith waits until the group's status has exactly nodes, lists no address twice,
// and satisfies served.
func (l *scaleLab) waitPlanWith(t *testing.T, timeout time.Duration, served func(scalePlan) bool, nodes []string) scalePlan {
	t.Helper()
	var p scalePlan
	var why error
	deadline := time.Now().Add(timeout)
	for {
		var g v1alpha1.KeepalivedGroup
		if why = env.Client.Get(context.Background(), types.NamespacedName{Namespace: l.ns, Name: groupName}, &g); why == nil {
			p, why = l.planOf(&g, nodes)
			if why == nil && !served(p) {
				why = fmt.Errorf("%d instances list %d addresses, %d Services' addresses in none: not what the test waits for", p.routers, len(p.router), p.missing)
			}
		}
		if why == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group's status did not list the %d addresses on %v within %v: %v", len(l.vips), nodes, timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// planOf reads the status: an error if its nodes are not nodes or an address is listed
// twice.
func (l *scaleLab) planOf(g *v1alpha1.KeepalivedGroup, nodes []string) (scalePlan, error) {
	p := scalePlan{router: map[netip.Addr]string{}, master: map[netip.Addr]string{}, prio: map[string]map[string]uint8{}}
	for _, n := range g.Status.Nodes {
		p.nodes = append(p.nodes, n.Name)
	}
	if got, want := slices.Sorted(slices.Values(p.nodes)), slices.Sorted(slices.Values(nodes)); !slices.Equal(got, want) {
		return p, fmt.Errorf("status nodes %v, want %v", got, want)
	}
	for _, in := range g.Status.Instances {
		prios, err := v1alpha1.DecodePriorities(in.Priorities, len(p.nodes))
		if err != nil {
			return p, fmt.Errorf("instance %s: %w", in.Key, err)
		}
		p.prio[in.Key] = map[string]uint8{}
		best := 0
		for i, pr := range prios {
			p.prio[in.Key][p.nodes[i]] = pr
			if pr > prios[best] {
				best = i
			}
		}
		for _, s := range in.VIPs {
			v, err := parseVIP(s)
			if err != nil {
				return p, err
			}
			if _, dup := p.router[v]; dup {
				return p, fmt.Errorf("%v in two instances (%s, %s)", v, p.router[v], in.Key)
			}
			p.router[v], p.master[v] = in.Key, p.nodes[best]
		}
	}
	p.routers = len(g.Status.Instances)
	for _, v := range l.vips {
		if _, ok := p.router[v]; !ok {
			p.missing++
		}
	}
	return p, nil
}

// durations summarises a set of durations: count, minimum, median, 99th percentile, maximum.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(ds))
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("%d: min %v, median %v, p99 %v, max %v", len(s), r(s[0]), r(s[len(s)/2]), r(s[min(len(s)-1, len(s)*99/100)]), r(s[len(s)-1]))
}

// bestOf is the node, of running, that the plan's instance carrying v ranks highest: its
// master once those nodes' vrrpd have settled.
func (p scalePlan) bestOf(v netip.Addr, running []string) string {
	best, bp := "", -1
	for _, n := range running {
		if pr, ok := p.prio[p.router[v]][n]; ok && int(pr) > bp && pr > 0 {
			best, bp = n, int(pr)
		}
	}
	return best
}

// allListed is a plan that lists every Service's address.
func allListed(p scalePlan) bool { return p.missing == 0 }
