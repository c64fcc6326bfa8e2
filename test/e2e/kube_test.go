package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testoperator"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

const (
	// proxyAddr is where the lab reaches the API server: the client host's address.
	proxyAddr = "10.99.0.10:6443"
	// servingName is a name envtest's serving certificate covers (it is made for
	// localhost and 127.0.0.1, not for the proxy's address).
	servingName = "localhost"
	groupName   = "edge"
	nodeLabel   = "e2e.vrrp-operator.io/lb"
)

var nsCounter atomic.Int64

var (
	vipWeb     = netip.MustParseAddr("10.99.0.100")
	vipSpread1 = netip.MustParseAddr("10.99.0.101")
	vipSpread2 = netip.MustParseAddr("10.99.0.102")
)

// TestKubernetesMode runs the product as it runs in a cluster: the operator computes the
// group from Nodes and annotated Services, and vrrpd on each node (started as the operator's
// DaemonSet says, with its ServiceAccount's token) follows it and serves the VIPs over VRRP,
// through a failover, a Service change, an API server outage (with a restart from the cache)
// and the API server's return with a change made meanwhile. Once with multicast
// advertisements and the default router sharing (Shared: the three VIPs in two routers, one
// per master), and once with unicast and routerSharing: PerService (an instance per VIP).
func TestKubernetesMode(t *testing.T) {
	need(t)
	vrrpdBinary(t) // build before the clocks start
	createNodes(t)
	for _, tc := range []struct {
		name          string
		unicast       bool
		deleteService bool                   // step 5: delete the Service, or remove its externalIP
		sharing       v1alpha1.RouterSharing // unset: the CRD's default, Shared
	}{
		{name: "multicast", unicast: false, deleteService: true},
		{name: "unicast", unicast: true, deleteService: false, sharing: v1alpha1.RouterSharingPerService},
	} {
		t.Run(tc.name, func(t *testing.T) { runKubernetesMode(t, tc.unicast, tc.deleteService, tc.sharing) })
	}
}

func runKubernetesMode(t *testing.T, unicast, deleteService bool, sharing v1alpha1.RouterSharing) {
	ctx := context.Background()
	k8s := env.Client

	// 1. The lab, the proxy into it, and the operator.
	lab := netlabtest.New(t, "client", "h1", "h2")
	cl, h1, h2 := lab.Host("client"), lab.Host("h1"), lab.Host("h2")
	hosts := map[string]*netlab.Host{"h1": h1, "h2": h2}
	proxy := startProxy(t, cl, proxyAddr, apiAddress(t))
	ns := newNamespace(t)
	startOperator(t, ns)
	logGroupOnFailure(t, ns)

	// 2. The group and its Services.
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groupName},
		Spec: v1alpha1.KeepalivedGroupSpec{
			Interface:      "eth0",
			NodeSelector:   map[string]string{nodeLabel: "true"},
			VRRPVersion:    3,
			AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond},
			UnicastEnabled: unicast,
			RouterSharing:  sharing,
		},
	}
	if err := k8s.Create(ctx, g); err != nil {
		t.Fatalf("create group: %v", err)
	}
	// Unset reads back as the CRD's default: a user sees what the group does.
	wantSharing := cmp.Or(sharing, v1alpha1.RouterSharingShared)
	if g.Spec.RouterSharing != wantSharing {
		t.Fatalf("the group's routerSharing reads %q, want %q", g.Spec.RouterSharing, wantSharing)
	}
	groupRef := ns + "/" + groupName
	web := newService(t, ns, "web", map[string]string{v1alpha1.AnnotationGroup: groupRef}, vipWeb)
	newService(t, ns, "spread", map[string]string{v1alpha1.AnnotationGroup: groupRef, v1alpha1.AnnotationSpreadVIPs: "true"}, vipSpread1, vipSpread2)

	prios := waitPlacement(t, ns, unicast, vipWeb, vipSpread1, vipSpread2)
	masters := prios.masters()
	if masters[vipSpread1] == masters[vipSpread2] {
		t.Fatalf("the spread Service's VIPs are both placed on %s: %v", masters[vipSpread1], masters)
	}
	t.Logf("placement from the group's status: %v", masters)

	// 3. vrrpd on h1 and h2, as the DaemonSet runs it, with the ServiceAccount's token.
	args := daemonSetArgs(t, ns)
	kubeconfig := vrrpdKubeconfig(t, ns)
	environ := []string{"KUBECONFIG=" + kubeconfig}
	stateDirs := map[string]string{"h1": vrrpdtest.NewStateDir(t), "h2": vrrpdtest.NewStateDir(t)}
	run := func(node string) *vrrpd {
		return startVrrpd(t, hosts[node], environ, nodeArgs(args, node, stateDirs[node])...)
	}
	daemons := map[string]*vrrpd{"h1": run("h1"), "h2": run("h2")}
	want := map[netip.Addr]string{vipWeb: masters[vipWeb], vipSpread1: masters[vipSpread1], vipSpread2: masters[vipSpread2]}
	waitHolders(t, 10*time.Second, "vrrpd follows the group's placement", want, h1, h2, cl)
	for node, d := range daemons {
		st, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		// PerService: one instance per VIP. Shared: one router per master (the spread
		// VIPs are on different masters, so both routers are used), web's VIP in one.
		wantInstances, wantVIPs := 3, 1
		if wantSharing == v1alpha1.RouterSharingShared {
			wantInstances, wantVIPs = 2, 0
		}
		if len(st.Instances) != wantInstances {
			t.Fatalf("%s runs %d instances, want %d (routerSharing %s): %+v", node, len(st.Instances), wantInstances, wantSharing, st.Instances)
		}
		seen := map[netip.Addr]int{}
		for _, in := range st.Instances {
			if in.Version != 3 {
				t.Errorf("%s: instance %s runs VRRPv%d, want 3", node, in.Name, in.Version)
			}
			if shared := strings.HasPrefix(in.Name, "@"); shared != (wantSharing == v1alpha1.RouterSharingShared) {
				t.Errorf("%s: instance %s with routerSharing %s", node, in.Name, wantSharing)
			}
			if len(in.VIPs) == 0 || wantVIPs > 0 && len(in.VIPs) != wantVIPs {
				t.Fatalf("%s: instance %s has VIPs %v, want one", node, in.Name, in.VIPs)
			}
			for _, s := range in.VIPs {
				v, err := parseVIP(s)
				if err != nil {
					t.Fatal(err)
				}
				seen[v]++
				if want := prios[v][node]; in.BasePriority != want {
					t.Errorf("%s: instance %s (%v) runs at priority %d, the group's status says %d", node, in.Name, v, in.BasePriority, want)
				}
			}
		}
		for _, v := range []netip.Addr{vipWeb, vipSpread1, vipSpread2} {
			if seen[v] != 1 {
				t.Errorf("%s: VIP %v in %d instances, want 1: %+v", node, v, seen[v], st.Instances)
			}
		}
	}
	// The DaemonSet's own probes, as the kubelet runs them in the container, pass on
	// both nodes: the group is loaded, the sockets open, no instance in INIT.
	for _, which := range []string{"liveness", "readiness"} {
		cmd := daemonSetProbe(t, ns, which)
		for node := range daemons {
			argv := make([]string, len(cmd))
			for i, a := range cmd {
				argv[i] = strings.NewReplacer("/vrrpd", vrrpdBinary(t), "/run/vrrpd", stateDirs[node]).Replace(a)
			}
			vrrpdtest.WaitFor(t, 5*time.Second, which+" probe of "+node, func() bool {
				return exec.Command(argv[0], argv[1:]...).Run() == nil
			})
		}
	}
	for node, d := range daemons {
		if !strings.Contains(d.Output(), "from_cache=false") {
			t.Fatalf("vrrpd on %s did not get its configuration from the API server", node)
		}
	}
	if proxy.accepted.Load() < 2 {
		t.Fatalf("the proxy accepted %d connections; vrrpd must reach the API server through it", proxy.accepted.Load())
	}

	// 4. Cut the master of the web VIP off the segment: the other node takes everything;
	// plug it back: it preempts its VIPs back.
	m := masters[vipWeb]
	other := otherNode(m)
	if err := hosts[m].Cut(); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	vrrpdtest.WaitFor(t, 3*time.Second, other+" holds every VIP while "+m+" is cut off", func() bool {
		for _, v := range []netip.Addr{vipWeb, vipSpread1, vipSpread2} {
			if !vrrpdtest.HasAddr(t, hosts[other], v) {
				return false
			}
		}
		return true
	})
	t.Logf("%s took every VIP %v after %s was cut off", other, time.Since(cutAt).Round(time.Millisecond), m)
	if err := hosts[m].Restore(); err != nil {
		t.Fatal(err)
	}
	waitHolders(t, 3*time.Second, m+" back on the segment preempts", want, h1, h2, cl)
	// vrrpd, with the ServiceAccount's rights only, told the web Service who held its
	// VIP: m, then other while m was cut off, then m again.
	waitServiceEvents(t, ns, "web", []string{
		"nodeAssigned " + m, "nodeAssigned " + other, "nodeUnassigned " + other,
	})

	// 5. The web Service loses its VIP: gone from both nodes, the others stay.
	if deleteService {
		if err := k8s.Delete(ctx, web); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			t.Fatal(err)
		}
		web.Spec.ExternalIPs = nil
		if err := k8s.Update(ctx, web); err != nil {
			t.Fatal(err)
		}
	}
	want[vipWeb] = ""
	waitHolders(t, 5*time.Second, "the web VIP removed everywhere", want, h1, h2, cl)

	// 6. The API server goes away: the VIPs stay served. Both vrrpd must have noticed (a
	// failed request, logged) while the VIPs stay where they were.
	logged := map[string]int{}
	for node, d := range daemons {
		logged[node] = len(d.Output())
	}
	proxy.Close()
	if err := dialFrom(h1, proxyAddr); err == nil {
		t.Fatal("the API server is still reachable from h1 after the proxy closed")
	}
	for node, d := range daemons {
		vrrpdtest.WaitFor(t, 5*time.Second, "vrrpd on "+node+" noticing the API server is away", func() bool {
			return strings.Contains(d.Output()[logged[node]:], `msg="kubernetes API"`)
		})
	}
	waitHoldersSettle(t, time.Second, time.Second, "VIPs served with the API server away", want, h1, h2, cl)

	// The master of a spread VIP restarts while the API server is still away: the other
	// node covers for it, and the restarted vrrpd serves from its cache and takes its VIP
	// back.
	mr := masters[vipSpread1]
	or := otherNode(mr)
	daemons[mr].MustStop(t)
	waitHolders(t, 3*time.Second, or+" covers while "+mr+" restarts",
		map[netip.Addr]string{vipWeb: "", vipSpread1: or, vipSpread2: or}, h1, h2, cl)
	restarted := run(mr)
	waitHolders(t, 5*time.Second, mr+" restarted without the API server takes its VIP back", want, h1, h2, cl)
	logs := restarted.Output()
	if !strings.Contains(logs, "starting from the cached group") || !strings.Contains(logs, "from_cache=true") {
		t.Errorf("the restarted vrrpd did not load the group from its cache:\n%s", logs)
	}
	if strings.Contains(logs, "from_cache=false") {
		t.Errorf("the restarted vrrpd reached the API server though the proxy was closed:\n%s", logs)
	}
	daemons[mr] = restarted

	// 7. While the API server is away the web Service gets its VIP back: the operator
	// places it, but no node can know. When the API server comes back, both vrrpd
	// reconnect (after their backoff) and the VIP appears on its master.
	if deleteService {
		web = newService(t, ns, "web", map[string]string{v1alpha1.AnnotationGroup: groupRef}, vipWeb)
	} else {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			t.Fatal(err)
		}
		web.Spec.ExternalIPs = []string{vipWeb.String()}
		if err := k8s.Update(ctx, web); err != nil {
			t.Fatal(err)
		}
	}
	want[vipWeb] = waitPlacement(t, ns, unicast, vipWeb, vipSpread1, vipSpread2).masters()[vipWeb]
	waitHoldersSettle(t, time.Second, 500*time.Millisecond, "the new VIP unknown to the nodes while the API server is away",
		map[netip.Addr]string{vipWeb: "", vipSpread1: want[vipSpread1], vipSpread2: want[vipSpread2]}, h1, h2, cl)
	for node, d := range daemons {
		logged[node] = len(d.Output())
	}
	startProxy(t, cl, proxyAddr, apiAddress(t))
	// groupsource's backoff is at most a few seconds after an outage this short.
	waitHolders(t, 15*time.Second, "the API server back, the new VIP served", want, h1, h2, cl)
	for node, d := range daemons {
		vrrpdtest.WaitFor(t, 15*time.Second, "vrrpd on "+node+" taking its configuration from the API server again", func() bool {
			return strings.Contains(d.Output()[logged[node]:], "from_cache=false")
		})
	}
}

// logGroupOnFailure logs the group's status when the test fails.
func logGroupOnFailure(t *testing.T, ns string) {
	t.Cleanup(func() {
		if t.Failed() {
			var g v1alpha1.KeepalivedGroup
			if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: groupName}, &g); err == nil {
				st, _ := yaml.Marshal(g.Status)
				t.Logf("---- group %s/%s status ----\n%s", ns, groupName, st)
			}
		}
	})
}

// nodeArgs are the DaemonSet's vrrpd arguments as the pod on node runs them, plus the lab's
// state directory, metrics address and debug logging.
func nodeArgs(args []string, node, stateDir string, replace ...string) []string {
	// The kubelet expands the pod's env; the lab host's loopback stands for its
	// status.hostIP, where the suite reads /status. replace maps further pod paths
	// (a Secret volume's file) to the lab's.
	expand := strings.NewReplacer(append([]string{"$(NODE_NAME)", node, "$(HOST_IP)", "127.0.0.1"}, replace...)...)
	a := make([]string, 0, len(args)+6)
	for _, s := range args {
		a = append(a, expand.Replace(s))
	}
	return append(a, "--state-dir", stateDir, "--metrics-address", vrrpdtest.MetricsAddress, "--log-level", "debug")
}

// apiAddress is the API server's host:port in the root namespace.
func apiAddress(t testing.TB) string {
	t.Helper()
	host := env.Config.Host
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil {
			t.Fatalf("API server address %q: %v", host, err)
		}
		host = u.Host
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		t.Fatalf("API server address %q: %v", env.Config.Host, err)
	}
	return host
}

// createNodes makes Nodes h1 and h2 with the lab hosts' addresses, as kubelets would.
func createNodes(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for i, name := range []string{"h1", "h2"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nodeLabel: "true"}}}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.99.0.%d", 11+i)}}
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatalf("node %s status: %v", name, err)
		}
	}
}

func otherNode(n string) string {
	if n == "h1" {
		return "h2"
	}
	return "h1"
}

func newNamespace(t testing.TB) string {
	t.Helper()
	// envtest runs no namespace controller, so a namespace is never really deleted: each
	// run of the test (-count) needs names of its own.
	name := fmt.Sprintf("e2e-%s-%d-%d", strings.ToLower(filepath.Base(t.Name())), os.Getpid(), nsCounter.Add(1))
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

func newService(t testing.TB, ns, name string, annotations map[string]string, vips ...netip.Addr) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	for _, v := range vips {
		svc.Spec.ExternalIPs = append(svc.Spec.ExternalIPs, v.String())
	}
	if err := env.Client.Create(context.Background(), svc); err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	return svc
}

// startOperator runs the operator's controllers in the test process, watching only ns (and
// the Nodes).
func startOperator(t testing.TB, ns string) {
	t.Helper()
	testoperator.Start(t, env.Config, env.Scheme, ns, "example.com/vrrpd:e2e")
}

// priorities is, for each VIP, each node's VRRP priority for the instance carrying it, as
// the group's status says.
type priorities map[netip.Addr]map[string]uint8

// masters is, for each VIP, the node its instance ranks first (the highest priority).
func (p priorities) masters() map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for v, byNode := range p {
		var best uint8
		for node, prio := range byNode {
			if prio > best {
				best, out[v] = prio, node
			}
		}
	}
	return out
}

// waitPlacement waits until the operator has written the group's status with both nodes
// and an instance for every VIP, and returns the priorities it assigned.
func waitPlacement(t *testing.T, ns string, unicast bool, vips ...netip.Addr) priorities {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var g v1alpha1.KeepalivedGroup
		var prios priorities
		err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: groupName}, &g)
		if err == nil {
			prios, err = placementOf(&g, unicast)
		}
		if err == nil {
			missing := slices.DeleteFunc(slices.Clone(vips), func(v netip.Addr) bool { _, ok := prios[v]; return ok })
			if len(missing) == 0 && len(prios) == len(vips) {
				return prios
			}
			err = fmt.Errorf("instances for %v, want %v", prios, vips)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operator did not place the group's VIPs in 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// placementOf decodes the group's status with internal/placement.
func placementOf(g *v1alpha1.KeepalivedGroup, unicast bool) (priorities, error) {
	st := g.Status
	var names []string
	for _, n := range st.Nodes {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"h1", "h2"}) {
		return nil, fmt.Errorf("status nodes %v, want [h1 h2]", names)
	}
	out := priorities{}
	for _, in := range st.Instances {
		if in.Settings.Unicast != unicast || in.Settings.Version != 3 || in.Settings.AdvertInterval.Duration != 100*time.Millisecond {
			return nil, fmt.Errorf("instance %s settings %+v, want VRRPv3, 100ms, unicast %v", in.Key, in.Settings, unicast)
		}
		prios, err := v1alpha1.DecodePriorities(in.Priorities, len(st.Nodes))
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", in.Key, err)
		}
		for _, s := range in.VIPs {
			v, err := parseVIP(s)
			if err != nil {
				return nil, fmt.Errorf("instance %s: %w", in.Key, err)
			}
			out[v] = map[string]uint8{}
			for i, p := range prios {
				out[v][st.Nodes[i].Name] = p
			}
		}
	}
	return out, nil
}

// parseVIP reads a VIP as the status and vrrpd's /status write it: an address, with or
// without a prefix length.
func parseVIP(s string) (netip.Addr, error) {
	a, _, _ := strings.Cut(s, "/")
	v, err := netip.ParseAddr(a)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("VIP %q: %w", s, err)
	}
	return v, nil
}

// daemonSetArgs are the vrrpd arguments of the DaemonSet the operator made for the group.
func daemonSetArgs(t testing.TB, ns string) []string {
	t.Helper()
	var ds appsv1.DaemonSet
	vrrpdtest.WaitFor(t, 10*time.Second, "the group's DaemonSet", func() bool {
		return env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: groupName + "-vrrpd"}, &ds) == nil
	})
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("DaemonSet has %d containers, want 1", len(cs))
	}
	args := cs[0].Args
	if !slices.Contains(args, ns+"/"+groupName) || !slices.Contains(args, "$(NODE_NAME)") {
		t.Fatalf("DaemonSet args %q do not name the group and the node", args)
	}
	return args
}

// daemonSetProbe is the command of the group's DaemonSet's liveness or readiness probe,
// which must be an exec probe (never an HTTP GET of the port remote hosts reach).
func daemonSetProbe(t testing.TB, ns, which string) []string {
	t.Helper()
	var ds appsv1.DaemonSet
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: groupName + "-vrrpd"}, &ds); err != nil {
		t.Fatal(err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	p := c.LivenessProbe
	if which == "readiness" {
		p = c.ReadinessProbe
	}
	if p == nil || p.Exec == nil || len(p.Exec.Command) == 0 {
		t.Fatalf("the DaemonSet's %s probe %+v is not an exec probe", which, p)
	}
	return p.Exec.Command
}

// vrrpdKubeconfig writes a kubeconfig for vrrpd inside the lab: the API server through the
// proxy, authenticated as the group's ServiceAccount (a token from the TokenRequest API),
// so that only the Role the operator made for the group lets vrrpd in. It also checks that
// the token is no more than that.
func vrrpdKubeconfig(t testing.TB, ns string) string {
	t.Helper()
	ctx := context.Background()
	sa := groupName + "-vrrpd"
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	var token string
	vrrpdtest.WaitFor(t, 10*time.Second, "the group's ServiceAccount, Role and RoleBinding", func() bool {
		if _, err := cs.RbacV1().RoleBindings(ns).Get(ctx, sa, metav1.GetOptions{}); err != nil {
			return false
		}
		if _, err := cs.RbacV1().Roles(ns).Get(ctx, sa, metav1.GetOptions{}); err != nil {
			return false
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
		}, metav1.CreateOptions{})
		if err != nil {
			return false
		}
		token = tr.Status.Token
		return true
	})

	// The token reads the group, and nothing else.
	asSA := &rest.Config{Host: env.Config.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	c, err := client.New(asSA, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var g v1alpha1.KeepalivedGroup
	vrrpdtest.WaitFor(t, 5*time.Second, "the ServiceAccount's token reading its group (RBAC)", func() bool {
		return c.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupName}, &g) == nil
	})
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount's token lists Services (err %v); it must only read its group", err)
	}

	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{
		Server:                   "https://" + proxyAddr,
		TLSServerName:            servingName,
		CertificateAuthorityData: env.Config.CAData,
	}
	kc.AuthInfos["vrrpd"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "vrrpd", Namespace: ns}
	kc.CurrentContext = "lab"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// holdersMatch reports whether each VIP is held by exactly its named host ("" = by none).
func holdersMatch(t testing.TB, want map[netip.Addr]string, hosts ...*netlab.Host) (bool, string) {
	t.Helper()
	var got []string
	ok := true
	for v, w := range want {
		hs := vrrpdtest.Holders(t, v, hosts...)
		got = append(got, fmt.Sprintf("%v on %v", v, hs))
		if (w == "" && len(hs) != 0) || (w != "" && (len(hs) != 1 || hs[0] != w)) {
			ok = false
		}
	}
	slices.Sort(got)
	return ok, strings.Join(got, ", ")
}

// waitHolders waits until the VIPs are held as want says, then checks for 300 ms (three
// advertisement intervals) that it stays so: no VIP on two hosts once settled.
func waitHolders(t testing.TB, timeout time.Duration, what string, want map[netip.Addr]string, hosts ...*netlab.Host) {
	t.Helper()
	waitHoldersSettle(t, timeout, 300*time.Millisecond, what, want, hosts...)
}

// waitHoldersSettle is waitHolders with a settling time of its own.
func waitHoldersSettle(t testing.TB, timeout, settle time.Duration, what string, want map[netip.Addr]string, hosts ...*netlab.Host) {
	t.Helper()
	start := time.Now()
	var last string
	for {
		ok, got := holdersMatch(t, want, hosts...)
		last = got
		if ok {
			break
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v; want %v, have %s", what, timeout, want, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	end := time.Now().Add(settle)
	for time.Now().Before(end) {
		if ok, got := holdersMatch(t, want, hosts...); !ok {
			t.Fatalf("%s: settled after %v, then changed: want %v, have %s", what, took, want, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%s: %v", what, took.Round(time.Millisecond))
}

// dialFrom opens (and closes) a TCP connection to addr from inside h.
func dialFrom(h *netlab.Host, addr string) error {
	return h.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// waitServiceEvents waits until the Service ns/name has, from vrrpd, an Event for each
// "reason node" of want (the node named in the Event's note), up to 30 s: an Event of the
// node that was cut off waits for its link to come back.
func waitServiceEvents(t *testing.T, ns, name string, want []string) {
	t.Helper()
	var have []string
	vrrpdtest.WaitFor(t, 30*time.Second, fmt.Sprintf("Events %v on Service %s/%s", want, ns, name), func() bool {
		var events eventsv1.EventList
		if err := env.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		have = have[:0]
		for _, e := range events.Items {
			if e.Regarding.Kind != "Service" || e.Regarding.Name != name || !strings.HasSuffix(e.ReportingController, "/vrrpd") {
				continue
			}
			for _, node := range []string{"h1", "h2"} {
				if strings.Contains(e.Note, fmt.Sprintf("%q", node)) {
					have = append(have, e.Reason+" "+node)
				}
			}
		}
		for _, w := range want {
			if !slices.Contains(have, w) {
				return false
			}
		}
		return true
	})
	t.Logf("Events on Service %s/%s from vrrpd: %v", ns, name, have)
}
