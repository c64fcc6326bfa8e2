package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// Options configure the reconcilers.
type Options struct {
	// VrrpdImage is the image the DaemonSets run unless a group names its own.
	VrrpdImage string
	// VrrpdImagePullPolicy is the vrrpd container's imagePullPolicy
	// (--vrrpd-image-pull-policy); empty: Kubernetes' default (Always for
	// an image without a tag or tagged latest, IfNotPresent otherwise).
	VrrpdImagePullPolicy corev1.PullPolicy
	// VrrpdImagePullSecrets name the Secrets (kubernetes.io/dockerconfigjson)
	// the vrrpd pods pull their image with (--vrrpd-image-pull-secrets). A
	// pod can only name Secrets of its own namespace, so each must exist in
	// every namespace that holds groups: the operator copies the names into
	// the DaemonSets, never the Secrets (it has no right to read Secrets, and
	// copying credentials between namespaces is the admin's decision).
	VrrpdImagePullSecrets []string
	// ServiceWorkers is how many Services are reconciled at once (address
	// decisions are serialised anyway; the status writes that follow them
	// overlap). Default DefaultServiceWorkers.
	ServiceWorkers int
	// GroupWorkers is how many groups are reconciled at once; groups on
	// one segment still take turns. Default DefaultGroupWorkers. A group's
	// status is large (230 KiB at 250 Services and 500 Nodes); while
	// Services are given addresses it is put off (pending.go); at 5,000
	// Services two workers reconciled the 20 groups 28-41 times, one 25-28
	// times, and four twice as often.
	GroupWorkers int
	// SCCClusterRole, when set, is a ClusterRole granting `use` of an
	// OpenShift SecurityContextConstraints (deploy/components/openshift):
	// each group's vrrpd ServiceAccount is bound to it by a RoleBinding
	// "<group>-vrrpd-scc", so the DaemonSet's pods are admitted with
	// hostNetwork, NET_ADMIN and NET_RAW and nothing more.
	SCCClusterRole string
	// PrometheusClusterRole, when set, is a ClusterRole granting get, list
	// and watch of pods, services and endpoints (deploy/components/openshift):
	// each group's namespace gets a RoleBinding "<group>-vrrpd-prometheus"
	// of it to OpenShift's platform Prometheus (openshift-monitoring/
	// prometheus-k8s), which keepalived-operator's "<group>-prometheus-k8s"
	// Role gave and the takeover deletes (prometheusrbac.go).
	PrometheusClusterRole string
	// MigrationDwell is how long a group's vrrpd DaemonSet must have been
	// ready before keepalived-operator's objects of the group are deleted,
	// and how long the takeover settings outlive the last old pod. Default
	// 5s.
	MigrationDwell time.Duration
	// VrrpdResources are the vrrpd container's requests and limits; each
	// list left empty takes DefaultVrrpdResources' (the operator's
	// --vrrpd-* resource flags).
	VrrpdResources corev1.ResourceRequirements
	// KindRecheck is how long the answer that the cluster does not serve
	// an optional kind, PodMonitor (monitoring.coreos.com/v1) or
	// KeepalivedMastership (its CRD is left out by a Helm upgrade), stands
	// before it is asked again. The RESTMapper asks the API server on
	// every lookup of a kind it does not know, a round trip in every group
	// reconcile, and neither CRD is often installed after the operator.
	// Default one minute; negative: ask every time.
	KindRecheck time.Duration
	// GroupNamespaces are the namespaces whose KeepalivedGroups the operator
	// runs (AnyNamespace: every one). A group elsewhere gets no DaemonSet,
	// ServiceAccount or RBAC, Ready=False NamespaceNotAllowed and a Warning
	// Event, and its Services get no address (policy.go). Nil: every
	// namespace (cmd/operator's --group-namespaces defaults to
	// keepalived-operator).
	GroupNamespaces []string
	// AllowedImages are the images a group's spec.image may name besides
	// VrrpdImage: references (a repository allows any of its tags and
	// digests) or prefixes ending in "/". Nil: VrrpdImage only.
	AllowedImages []string
	// SegmentNamespaces are the namespaces whose groups' spec.segment is
	// honoured (AnyNamespace: every one); elsewhere a group is on the
	// default segment. Nil: every namespace (cmd/operator's
	// --segment-namespaces defaults to none).
	SegmentNamespaces []string

	// viewSynced, when set, is asked besides the Service informer whether
	// the operator's view of the Services is complete (tests hold it back).
	viewSynced func() bool
	// PodMonitorLabels are added to the labels of each group's PodMonitor
	// (--podmonitor-labels), for a Prometheus whose podMonitorSelector asks
	// for them: kube-prometheus-stack's default selects release: <its
	// release>. The operator's own labels (metrics, the group's) win.
	PodMonitorLabels map[string]string
	// PodMonitorNamespace, when set (--podmonitor-namespace), is where every group's
	// PodMonitor is written, as <namespace>.<group>-vrrpd selecting the group's
	// namespace, instead of the group's own namespace (podmonitor.go).
	PodMonitorNamespace string
}

// Reconcilers are the operator's two controllers, returned by Setup so
// callers (tests, metrics) can look at them.
type Reconcilers struct {
	Groups   *GroupReconciler
	Services *ServiceReconciler
}

// Setup registers the field indexes and both controllers with mgr.
func Setup(mgr ctrl.Manager, opts Options) (*Reconcilers, error) {
	return setup(mgr, opts, nil)
}

// setup is Setup; wrapStatus, when set, wraps the step of each group reconcile that
// computes the status (GroupReconciler.reconcileStatus), which the tests count.
func setup(mgr ctrl.Manager, opts Options, wrapStatus func(reconcileFunc) reconcileFunc) (*Reconcilers, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := addIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}

	// The view is complete once the Service informer has listed every
	// Service; until then no address is granted that a group's status does
	// not record already (tenancy.go: fail closed).
	services0 := mgr.GetCache()
	viewSync := func() bool {
		inf, err := services0.GetInformer(ctx, &corev1.Service{}, cache.BlockUntilSynced(false))
		if err != nil || !inf.HasSynced() {
			return false
		}
		return opts.viewSynced == nil || opts.viewSynced()
	}

	rec := mgr.GetEventRecorder(reportingController)
	groups, err := setupGroups(mgr, opts, rec, viewSync, wrapStatus)
	if err != nil {
		return nil, err
	}
	// At start, as leader: the PodMonitors of groups deleted while the operator was down,
	// or left where an earlier --podmonitor-namespace put them. A failure is logged, not
	// fatal: the reconciles of live groups do not depend on it.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := groups.sweepPodMonitors(ctx); err != nil {
			logf.FromContext(ctx).Error(err, "sweeping stale PodMonitors")
		}
		return nil
	})); err != nil {
		return nil, err
	}
	services, err := setupServices(mgr, opts, rec, groups.pending, viewSync)
	if err != nil {
		return nil, err
	}
	// The groups' left-out Events share the Services' pace (heldEvents).
	groups.held = services.held
	services.grants = groups.grants
	return &Reconcilers{Groups: groups, Services: services}, nil
}

// ValidatePullSettings checks --vrrpd-image-pull-policy and
// --vrrpd-image-pull-secrets at start, rather than letting the API server
// refuse every group's DaemonSet.
func ValidatePullSettings(policy corev1.PullPolicy, secrets []string) error {
	switch policy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("--vrrpd-image-pull-policy %q: want Always, IfNotPresent or Never", policy)
	}
	for _, s := range secrets {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return fmt.Errorf("--vrrpd-image-pull-secrets: %q is not a Secret name: %s", s, strings.Join(errs, "; "))
		}
	}
	return nil
}

// withDefaults checks opts and fills in the defaults.
func (opts Options) withDefaults() (Options, error) {
	if ns := opts.PodMonitorNamespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return opts, fmt.Errorf("--podmonitor-namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	if opts.VrrpdImage == "" {
		return opts, fmt.Errorf("controller: no vrrpd image (--vrrpd-image)")
	}
	if err := ValidateImagePatterns(opts.AllowedImages); err != nil {
		return opts, fmt.Errorf("controller: --allowed-vrrpd-images: %w", err)
	}
	if err := ValidatePullSettings(opts.VrrpdImagePullPolicy, opts.VrrpdImagePullSecrets); err != nil {
		return opts, fmt.Errorf("controller: %w", err)
	}
	// A copy: the reconciler must not share the caller's slice.
	opts.VrrpdImagePullSecrets = slices.Clone(opts.VrrpdImagePullSecrets)
	if opts.ServiceWorkers <= 0 {
		opts.ServiceWorkers = DefaultServiceWorkers
	}
	if opts.KindRecheck == 0 {
		opts.KindRecheck = time.Minute
	}
	if opts.GroupWorkers <= 0 {
		opts.GroupWorkers = DefaultGroupWorkers
	}
	def := DefaultVrrpdResources()
	if len(opts.VrrpdResources.Requests) == 0 {
		opts.VrrpdResources.Requests = def.Requests
	}
	if len(opts.VrrpdResources.Limits) == 0 {
		opts.VrrpdResources.Limits = def.Limits
	}
	return opts, nil
}

// addIndexes registers the field indexes the reconcilers ask: Services by group and by
// address, Nodes by address.
func addIndexes(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &corev1.Service{}, indexServiceGroup, func(o client.Object) []string {
		if ref, ok := groupOf(o.(*corev1.Service)); ok {
			return []string{ref.String()}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &corev1.Service{}, indexServiceAddresses, func(o client.Object) []string {
		svc := o.(*corev1.Service)
		vips, _ := serviceVIPs(svc)
		out := make([]string, len(vips))
		for i, a := range vips {
			out[i] = a.String()
		}
		return out
	}); err != nil {
		return err
	}

	// A Node's own addresses (nodeOwnAddrs' rule), so that a Service reconcile asks
	// about its few addresses instead of reading every Node.
	return idx.IndexField(ctx, &corev1.Node{}, indexNodeAddresses, func(o client.Object) []string {
		n := o.(*corev1.Node)
		var out []string
		for a := range nodeOwnAddrs([]corev1.Node{*n}) {
			out = append(out, a.String())
		}
		return out
	})
}

// setupGroups makes the GroupReconciler and its controller.
func setupGroups(mgr ctrl.Manager, opts Options, rec recorder.EventRecorder, viewSync func() bool, wrapStatus func(reconcileFunc) reconcileFunc) (*GroupReconciler, error) {
	groups := &GroupReconciler{
		Client:   mgr.GetClient(),
		Mapper:   mgr.GetRESTMapper(),
		Recorder: rec,
		Reader:   mgr.GetAPIReader(),
		Options:  opts,
	}
	groups.PrometheusClusterRole = opts.PrometheusClusterRole
	groups.init()
	groups.viewSync = viewSync
	groups.pending = newPendingAllocations()
	groups.grants = newGrantLedger()
	var reconciler reconcile.Reconciler = groups
	if wrapStatus != nil {
		status := wrapStatus(groups.reconcileStatus)
		reconciler = reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return groups.reconcile(ctx, req, status)
		})
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("keepalivedgroup").
		For(&v1alpha1.KeepalivedGroup{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.DaemonSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Watches(&corev1.Service{}, serviceToGroups{c: mgr.GetClient()}.handler()).
		Watches(&corev1.Node{}, nodeToGroups{c: mgr.GetClient()}.handler()).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return groupsSelectingNamespaces(ctx, mgr.GetClient())
		}), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.GroupWorkers}).
		Complete(reconciler)
	return groups, err
}

// setupServices makes the ServiceReconciler and its controller.
func setupServices(mgr ctrl.Manager, opts Options, rec recorder.EventRecorder, pending *pendingAllocations, viewSync func() bool) (*ServiceReconciler, error) {
	services := &ServiceReconciler{
		Client:   mgr.GetClient(),
		Recorder: rec,
		alloc:    newAllocator(),
		pending:  pending,
		wake:     make(chan event.GenericEvent, 4096),
		held:     newHeldEvents(rec, pending),

		groupNamespaces: opts.GroupNamespaces,
		viewSync:        viewSync,
	}
	if err := mgr.Add(services.held); err != nil {
		return nil, err
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("service").
		Watches(&corev1.Service{}, serviceWatch(services)).
		Watches(&v1alpha1.KeepalivedGroup{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return servicesOfGroup(ctx, mgr.GetClient(), types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return annotatedServicesIn(ctx, mgr.GetClient(), o.GetName())
		}), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WatchesRawSource(source.Channel(services.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.ServiceWorkers}).
		Complete(services)
	return services, err
}

// queue is the work queue an event handler adds to.
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// serviceWatch enqueues the Service of each event; for a deleted one,
// also the Services waiting for an address of its group (the deleted
// Service's addresses are free once it is gone from the cache; no
// finalizer holds it for a release).
func serviceWatch(r *ServiceReconciler) handler.Funcs {
	// queued tells pendingAllocations of a Service about to be queued (before
	// it is, so its reconcile cannot end first).
	queued := func(o client.Object) {
		if svc, ok := o.(*corev1.Service); ok && r.pending != nil {
			r.pending.queued(svc)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			queued(e.Object)
			q.Add(requestFor(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			queued(e.ObjectNew)
			q.Add(requestFor(e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			q.Add(requestFor(e.Object))
			if svc, ok := e.Object.(*corev1.Service); ok {
				for _, w := range r.forget(svc) {
					q.Add(reconcile.Request{NamespacedName: w})
				}
			}
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) {
			q.Add(requestFor(e.Object))
		},
	}
}

func requestFor(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
}

// objectHandler is the event handler that passes the objects of each event, of type T,
// to enqueue: both of an update, and only when changed says the update matters.
func objectHandler[T client.Object](enqueue func(context.Context, queue, ...T), changed func(old, new T) bool) handler.Funcs {
	one := func(ctx context.Context, o client.Object, q queue) {
		if t, ok := o.(T); ok {
			enqueue(ctx, q, t)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { one(ctx, e.Object, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			o, ok1 := e.ObjectOld.(T)
			n, ok2 := e.ObjectNew.(T)
			if ok1 && ok2 && changed(o, n) {
				enqueue(ctx, q, o, n)
			}
		},
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { one(ctx, e.Object, q) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { one(ctx, e.Object, q) },
	}
}

// servicesOfGroup lists the Services annotated for a group, so a group
// that appears or changes its pool retries them.
func servicesOfGroup(ctx context.Context, c client.Client, group types.NamespacedName) []reconcile.Request {
	var list corev1.ServiceList
	if err := c.List(ctx, &list, client.MatchingFields{indexServiceGroup: group.String()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}}
	}
	return out
}

// groupsSelectingNamespaces lists the groups whose allowedNamespaces
// depends on namespace labels (from: Selector), for a namespace whose labels
// changed.
func groupsSelectingNamespaces(ctx context.Context, c client.Client) []reconcile.Request {
	var groups v1alpha1.KeepalivedGroupList
	if err := c.List(ctx, &groups); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, g := range groups.Items {
		if an := g.Spec.AllowedNamespaces; an != nil && an.From == v1alpha1.NamespacesFromSelector {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
		}
	}
	return out
}

// annotatedServicesIn lists the Services of a namespace annotated for a
// group, for a namespace whose labels changed (a group may now admit or
// refuse them).
func annotatedServicesIn(ctx context.Context, c client.Client, ns string) []reconcile.Request {
	var list corev1.ServiceList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, s := range list.Items {
		if _, ok := s.Annotations[v1alpha1.AnnotationGroup]; ok {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
		}
	}
	return out
}

// serviceToGroups enqueues the group a Service is annotated for (the old
// and the new one when the annotation changes), and only when something the
// group's status depends on changed; and the groups of the other Services
// claiming one of its addresses, whose holder may change with it.
type serviceToGroups struct{ c client.Client }

// enqueue adds the groups of the Services, and of the Services sharing an
// address with them, all at once after the lookups: a group reconciled
// between two adds would be reconciled twice for one change.
func (h serviceToGroups) enqueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], svcs ...*corev1.Service) {
	var refs []types.NamespacedName
	add := func(s *corev1.Service) {
		if ref, ok := groupOf(s); ok && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	for _, svc := range svcs {
		add(svc)
		vips, _ := serviceVIPs(svc)
		for _, a := range vips {
			var list corev1.ServiceList
			if err := h.c.List(ctx, &list, client.MatchingFields{indexServiceAddresses: a.String()}); err != nil {
				continue
			}
			for i := range list.Items {
				add(&list.Items[i])
			}
		}
	}
	for _, ref := range refs {
		q.Add(reconcile.Request{NamespacedName: ref})
	}
}

// handler enqueues on every Service event but an update that cannot change a group's
// instances.
func (h serviceToGroups) handler() handler.Funcs {
	return objectHandler(h.enqueue, instanceInputsChanged)
}

// instanceInputsChanged reports whether a Service update can change its
// group's instances.
func instanceInputsChanged(o, n *corev1.Service) bool {
	for _, k := range []string{v1alpha1.AnnotationGroup, v1alpha1.AnnotationSpreadVIPs, v1alpha1.AnnotationVerbatimConfig, v1alpha1.AnnotationSharedIP} {
		if o.Annotations[k] != n.Annotations[k] {
			return true
		}
	}
	return o.Spec.Type != n.Spec.Type ||
		!reflect.DeepEqual(o.Spec.ExternalIPs, n.Spec.ExternalIPs) ||
		o.Spec.ExternalTrafficPolicy != n.Spec.ExternalTrafficPolicy ||
		o.Spec.HealthCheckNodePort != n.Spec.HealthCheckNodePort ||
		!reflect.DeepEqual(o.Spec.LoadBalancerClass, n.Spec.LoadBalancerClass) ||
		!reflect.DeepEqual(o.Status.LoadBalancer.Ingress, n.Status.LoadBalancer.Ingress) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// The operator's client rate limits (cmd/operator's --kube-api-qps and
// --kube-api-burst). client-go's own defaults (5 and 10, or
// controller-runtime's 20 and 30) make a large cluster's first
// convergence wait on the client, not the API server: 5,000 Services with
// 2,000 LoadBalancers need 2,000 status writes and 2,000 Events (each
// through its own client, each with these limits). At 200 a second the
// allocations ran at exactly that rate for five seconds
// (BenchmarkConvergence5000Services, BENCH_TRACE): 10.9-11.1 s; at 500
// the API server's CPU sets the pace: 8.4-11.5 s, 9.3 s the median. The API server
// protects itself with priority and fairness; these only keep one
// operator from taking all of it.
const (
	DefaultClientQPS   = 500
	DefaultClientBurst = 1000
)

// The default worker counts (cmd/operator's --service-workers and
// --group-workers). Sixteen Service workers keep the API server busy with
// allocations' status writes, each a round trip: at 5,000 Services four
// converged in 18 s, sixteen in 11 s (BenchmarkConvergence5000Services).
// Two group workers write the last group statuses, once every address is
// out, two at a time: the tail after the last address was 2.5-2.6 s with
// two, 2.8-3.3 s with one.
const (
	DefaultServiceWorkers = 16
	DefaultGroupWorkers   = 2
)
