package controller

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// One API server (kube-apiserver + etcd) for the whole package; each test
// works in namespaces of its own.
var (
	testEnv    *testenv.Env
	testConfig *rest.Config
	testScheme *runtime.Scheme
	k8s        client.Client // direct client, no cache: what a user's kubectl sees
	nsCounter  atomic.Int64
)

// apiServerDebugSocket serves the API server's pprof without authentication.
const apiServerDebugSocket = "/tmp/vrrp-operator-apiserver-debug.sock"

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(env *envtest.Environment) {
		// Room for the thousands of Services the tests and the benchmark make
		// (envtest's default range is small). The API server only hands these
		// out as data; nothing routes them.
		env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
		if os.Getenv("APISERVER_PPROF") != "" {
			// The benchmark's API-server profile (BenchmarkConvergence*).
			// (a socket of its own: envtest's admin user gets 404 on the web path).
			env.ControlPlane.GetAPIServer().Configure().Set("debug-socket-path", apiServerDebugSocket)
		}
	}, func(e *testenv.Env) {
		e.Config.QPS, e.Config.Burst = 500, 1000
		testEnv, testConfig, testScheme = e, e.Config, e.Scheme
		var err error
		if k8s, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
			panic(err)
		}
	}))
}

// needAPIServer skips a test that needs envtest when it is not available
// (TestMain has already failed the run if CI=true).
func needAPIServer(t testing.TB) {
	t.Helper()
	testenv.Require(t, testEnv)
}

// newNamespace creates a namespace unique to this test.
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	needAPIServer(t)
	name := fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// testManager is a running operator (manager + both controllers) whose
// cache sees only the given namespaces (and cluster-scoped Nodes), so tests
// do not reconcile each other's objects.
type testManager struct {
	r      *Reconcilers
	groups *reconcileCounts // the group reconciles that computed a status
	cache  cache.Cache      // the manager's informers
	stop   func()
}

// reconcileCounts counts, per group, the reconciles that computed its status
// (GroupReconciler.reconcileStatus; tests assert no hot loops), and retries those of
// them that ended in an error (a write conflict after a stale cache read, an API error),
// which the work queue retries.
type reconcileCounts struct {
	mu                  sync.Mutex
	reconciles, retries map[types.NamespacedName]int
	errs                map[types.NamespacedName][]string // the retried reconciles' errors
}

// wrap counts the runs of next.
func (c *reconcileCounts) wrap(next reconcileFunc) reconcileFunc {
	return func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		c.mu.Lock()
		c.reconciles[req.NamespacedName]++
		c.mu.Unlock()
		res, err := next(ctx, req)
		if err != nil {
			c.mu.Lock()
			c.retries[req.NamespacedName]++
			c.errs[req.NamespacedName] = append(c.errs[req.NamespacedName], err.Error())
			c.mu.Unlock()
		}
		return res, err
	}
}

// Reconciles returns how many times the group's status has been computed.
func (c *reconcileCounts) Reconciles(group types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconciles[group]
}

// Errors returns the errors of the group's retried reconciles.
func (c *reconcileCounts) Errors(group types.NamespacedName) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs[group])
}

// Retries returns how many of the group's reconciles ended in an error and were
// retried.
func (c *reconcileCounts) Retries(group types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retries[group]
}

const testImage = "example.com/vrrpd:test"

func startManager(t testing.TB, namespaces ...string) *testManager {
	t.Helper()
	return startManagerAs(t, testConfig, namespaces...)
}

// startManagerAs runs the operator with the given credentials.
func startManagerAs(t testing.TB, cfg *rest.Config, namespaces ...string) *testManager {
	t.Helper()
	return startManagerWith(t, cfg, Options{VrrpdImage: testImage}, namespaces...)
}

// startManagerWith runs the operator with the given credentials and options.
func startManagerWith(t testing.TB, cfg *rest.Config, opts Options, namespaces ...string) *testManager {
	t.Helper()
	return startManagerMapped(t, cfg, opts, nil, namespaces...)
}

// startManagerMapped is startManagerWith whose manager's RESTMapper (the API server's
// discovery, as the operator's) is wrapped by wrap, when not nil: a test counts lookups.
func startManagerMapped(t testing.TB, cfg *rest.Config, opts Options, wrap func(meta.RESTMapper) meta.RESTMapper, namespaces ...string) *testManager {
	t.Helper()
	var mapper func(*rest.Config, *http.Client) (meta.RESTMapper, error)
	if wrap != nil {
		mapper = func(c *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
			m, err := apiutil.NewDynamicRESTMapper(c, hc)
			if err != nil {
				return nil, err
			}
			return wrap(m), nil
		}
	}
	defaults := map[string]cache.Config{}
	for _, ns := range namespaces {
		defaults[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Cache:                  cache.Options{DefaultNamespaces: defaults},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		MapperProvider:         mapper,
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := &reconcileCounts{reconciles: map[types.NamespacedName]int{}, retries: map[types.NamespacedName]int{},
		errs: map[types.NamespacedName][]string{}}
	r, err := setup(mgr, opts, counts.wrap)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		t.Fatal("cache did not sync")
	}
	m := &testManager{r: r, groups: counts, cache: mgr.GetCache()}
	var once sync.Once
	m.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(m.stop)
	return m
}

// eventually polls cond until it returns nil or the timeout passes, then
// fails with cond's last error.
func eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	poll.Until(t, timeout, cond)
}

// waitReadyNotDegraded waits until the group is Ready and not Degraded.
func waitReadyNotDegraded(t testing.TB, ns, name string) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		g := getGroup(t, ns, name)
		ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		degraded := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded)
		if ready == nil || ready.Status != metav1.ConditionTrue || degraded == nil || degraded.Status != metav1.ConditionFalse {
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		}
		return nil
	})
}

func getGroup(t testing.TB, ns, name string) *v1alpha1.KeepalivedGroup {
	t.Helper()
	var g v1alpha1.KeepalivedGroup
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

func newGroup(t testing.TB, ns, name string, mutate func(*v1alpha1.KeepalivedGroup)) *v1alpha1.KeepalivedGroup {
	t.Helper()
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0"},
	}
	if mutate != nil {
		mutate(g)
	}
	if err := k8s.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	return g
}

// newService creates a Service annotated for group; mutate adjusts it
// before creation (type, externalIPs, annotations).
func newService(t testing.TB, ns, name, group string, mutate func(*corev1.Service)) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if group != "" {
		svc.Annotations[v1alpha1.AnnotationGroup] = group
	}
	if mutate != nil {
		mutate(svc)
	}
	if err := k8s.Create(context.Background(), svc); err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	return svc
}

// withExternalIPs makes a ClusterIP Service with the given externalIPs.
func withExternalIPs(ips ...string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Spec.ExternalIPs = ips }
}

// asLoadBalancer makes a LoadBalancer Service (no node ports needed).
func asLoadBalancer(s *corev1.Service) {
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
}

// newNodes creates Nodes named prefix-0..n-1 with the given labels and one
// InternalIP each in 10.99.0.0/24 (data only; nothing is sent there), and
// deletes them when the test ends.
func newNodes(t testing.TB, prefix string, n int, lbls map[string]string) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Labels: lbls}}
		if err := k8s.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.99.0.%d", 1+i%250)}}
		if err := k8s.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
		names = append(names, node.Name)
	}
	t.Cleanup(func() {
		for _, name := range names {
			_ = k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	return names
}

// serviceEvents lists the events.k8s.io Events regarding Services in ns with
// the given reason, keyed by Service name.
func serviceEvents(t testing.TB, ns, reason string) map[string][]eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]eventsv1.Event{}
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == "Service" {
			out[e.Regarding.Name] = append(out[e.Regarding.Name], e)
		}
	}
	return out
}

// groupEvents lists the Events regarding a KeepalivedGroup (this
// incarnation of it: same UID) with a reason.
func groupEvents(t testing.TB, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	uid := getGroup(t, ns, name).UID
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == "KeepalivedGroup" && e.Regarding.Name == name && e.Regarding.UID == uid {
			out = append(out, e)
		}
	}
	return out
}
