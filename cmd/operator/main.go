// Command operator is the vrrp-operator's Kubernetes controller manager: it
// turns KeepalivedGroups, annotated Services and Nodes into group status and
// vrrpd DaemonSets, and allocates LoadBalancer addresses (see package
// controller).
//
//	operator [--vrrpd-image IMAGE] [--vrrpd-image-pull-policy POLICY] [--vrrpd-image-pull-secrets LIST]
//	         [--leader-elect] [--metrics-bind-address :8080]
//	         [--health-probe-bind-address :8081] [--service-workers 16] [--log-format json|text] [-v N]
//	         [--group-namespaces keepalived-operator] [--allowed-vrrpd-images LIST]
//	         [--segment-namespaces LIST]
//	operator --version
//
// --vrrpd-image defaults to vrrpd of the operator's own version
// (defaultVrrpdImage), so an upgrade of the operator upgrades vrrpd; the pull
// settings are copied into each group's DaemonSet. --group-namespaces,
// --allowed-vrrpd-images and --segment-namespaces are the cluster admin's
// limits on group authors
// (controller/policy.go); the install's ValidatingAdmissionPolicy holds the
// operator itself to the same namespaces and images.
//
// Logs are structured (log/slog through logr). /healthz and /readyz answer on
// the probe address; controller-runtime's metrics on the metrics address.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	goruntime "runtime"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/controller"
	"github.com/vrrp-operator/vrrp-operator/internal/buildinfo"
	"github.com/vrrp-operator/vrrp-operator/internal/version"
)

// vrrpdRepository is the repository of the vrrpd image that make release
// builds beside the operator's (ghcr.io/vrrp-operator/operator).
const vrrpdRepository = "ghcr.io/vrrp-operator/vrrpd"

// defaultVrrpdImage is the image DaemonSets run when neither the flag nor the
// group names one: vrrpd of this operator's own version, the image make
// release builds and tags together with the operator's. So an operator
// upgrade brings its vrrpd along (and rolls the groups' DaemonSets), and an
// install that pins --vrrpd-image keeps its own. A build without a version
// (a plain go build, or the Dockerfile without --build-arg VERSION) is "dev"
// and runs vrrpd:dev, the tag the Dockerfile's example builds.
func defaultVrrpdImage() string {
	return vrrpdRepository + ":" + version.ImageTag()
}

// defaultGroupNamespaces is where groups may live unless the admin says
// otherwise: the namespace the README's samples and the original's manifests
// put them in. Creating a group is as privileged as creating a host-network
// pod with NET_ADMIN, so not every namespace.
const defaultGroupNamespaces = "keepalived-operator"

// stdout is where --version prints; a variable for the tests.
var stdout io.Writer = os.Stdout

// registerBuildInfo adds vrrp_operator_build_info to controller-runtime's registry, which
// its metrics endpoint serves; once per process, as run may run more than once in tests.
var registerBuildInfo = sync.OnceValue(func() error {
	return crmetrics.Registry.Register(buildinfo.NewCollector("vrrp_operator"))
})

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

// run parses flags and runs the manager until ctx ends. The cluster comes
// from $KUBECONFIG, ~/.kube/config or the in-cluster service account.
func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	var (
		metricsAddr   = fs.String("metrics-bind-address", ":8080", "address of the metrics endpoint (0 disables it)")
		probeAddr     = fs.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
		leaderElect   = fs.Bool("leader-elect", false, "elect a leader, so only one replica reconciles")
		leaderNS      = fs.String("leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace)")
		vrrpdImage    = fs.String("vrrpd-image", defaultVrrpdImage(), "vrrpd image for the DaemonSets of groups that do not name one; the default is vrrpd of this operator's own version")
		pullPolicy    = fs.String("vrrpd-image-pull-policy", "", "imagePullPolicy of the vrrpd containers: Always, IfNotPresent or Never (default: Kubernetes', IfNotPresent for a tagged image)")
		pullSecrets   = fs.String("vrrpd-image-pull-secrets", "", "comma-separated Secrets the vrrpd pods pull their image with; each must exist in every namespace that holds groups")
		serviceWorker = fs.Int("service-workers", controller.DefaultServiceWorkers, "Services reconciled concurrently")
		groupWorkers  = fs.Int("group-workers", controller.DefaultGroupWorkers, "KeepalivedGroups reconciled concurrently (groups of one segment take turns; more workers write group statuses more often)")
		apiQPS        = fs.Float64("kube-api-qps", controller.DefaultClientQPS, "requests per second the operator's API client may make (sustained)")
		apiBurst      = fs.Int("kube-api-burst", controller.DefaultClientBurst, "requests the operator's API client may make in a burst")
		groupNS       = fs.String("group-namespaces", defaultGroupNamespaces, "comma-separated namespaces whose KeepalivedGroups the operator runs (* for every namespace); a group elsewhere gets no DaemonSet and Ready=False NamespaceNotAllowed")
		allowedImages = fs.String("allowed-vrrpd-images", "", "comma-separated images a group's spec.image may name besides --vrrpd-image: references (a repository allows its tags and digests) or prefixes ending in /; others run --vrrpd-image with a Warning Event")
		segmentNS     = fs.String("segment-namespaces", "", "comma-separated namespaces whose groups' spec.segment is honoured (* for every namespace); elsewhere a group shares the default router-ID space")
		pmNamespace   = fs.String("podmonitor-namespace", "", "namespace for every group's PodMonitor, named <group namespace>.<group>-vrrpd (empty: each in its group's namespace, owned by the group)")
		pmLabels      = fs.String("podmonitor-labels", "", "labels added to each group's PodMonitor, k=v,k2=v2 (kube-prometheus-stack selects release=<its release>)")
		sccRole       = fs.String("scc-cluster-role", "", "OpenShift: ClusterRole granting use of vrrpd's SecurityContextConstraints, bound to each group's vrrpd ServiceAccount")
		promRole      = fs.String("prometheus-cluster-role", "", "OpenShift: ClusterRole granting get/list/watch of pods, services and endpoints, bound in each group's namespace to the platform Prometheus (openshift-monitoring/prometheus-k8s) so that it scrapes vrrpd")
		defRes        = controller.DefaultVrrpdResources()
		cpuRequest    = fs.String("vrrpd-cpu-request", quantity(defRes.Requests, corev1.ResourceCPU), "CPU request of each vrrpd container")
		memRequest    = fs.String("vrrpd-memory-request", quantity(defRes.Requests, corev1.ResourceMemory), "memory request of each vrrpd container")
		memLimit      = fs.String("vrrpd-memory-limit", quantity(defRes.Limits, corev1.ResourceMemory), "memory limit of each vrrpd container")
		logFormat     = fs.String("log-format", "json", "log format: json or text")
		verbosity     = fs.Int("v", 0, "log verbosity (0 info, 1 and up debug)")
		showVersion   = fs.Bool("version", false, "print the version and exit")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(stdout, version.String("operator"))
		return err
	}
	res, err := vrrpdResources(*cpuRequest, *memRequest, *memLimit)
	if err != nil {
		return err
	}
	if err := controller.ValidatePullSettings(corev1.PullPolicy(*pullPolicy), controller.SplitList(*pullSecrets)); err != nil {
		return err
	}
	podMonitorLabels, err := controller.ParsePodMonitorLabels(*pmLabels)
	if err != nil {
		return err
	}
	log, err := newLogger(*logFormat, *verbosity)
	if err != nil {
		return err
	}
	ctrl.SetLogger(log)
	// The first line says what runs, so that a bug report's log answers "which version".
	log.Info("vrrp-operator", "version", version.Version, "go", goruntime.Version())
	if err := registerBuildInfo(); err != nil {
		return fmt.Errorf("build info metric: %w", err)
	}

	mgr, err := newManager(*metricsAddr, *probeAddr, *leaderElect, *leaderNS, *apiQPS, *apiBurst)
	if err != nil {
		return err
	}
	opts := controller.Options{
		VrrpdImage: *vrrpdImage, ServiceWorkers: *serviceWorker, GroupWorkers: *groupWorkers, SCCClusterRole: *sccRole, VrrpdResources: res,
		PrometheusClusterRole: *promRole,
		// Never nil: the controller takes nil as "no limit"; an empty flag means none.
		GroupNamespaces:     append([]string{}, controller.SplitList(*groupNS)...),
		AllowedImages:       controller.SplitList(*allowedImages),
		SegmentNamespaces:   append([]string{}, controller.SplitList(*segmentNS)...),
		PodMonitorLabels:    podMonitorLabels,
		PodMonitorNamespace: *pmNamespace,

		VrrpdImagePullPolicy:  corev1.PullPolicy(*pullPolicy),
		VrrpdImagePullSecrets: controller.SplitList(*pullSecrets),
	}
	if len(opts.GroupNamespaces) == 0 {
		return fmt.Errorf("--group-namespaces is empty: no group could run (* allows every namespace)")
	}
	if _, err := controller.Setup(mgr, opts); err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting", "vrrpdImage", *vrrpdImage, "vrrpdImagePullPolicy", *pullPolicy, "vrrpdImagePullSecrets", opts.VrrpdImagePullSecrets, "leaderElection", *leaderElect,
		"groupNamespaces", opts.GroupNamespaces, "allowedVrrpdImages", opts.AllowedImages, "segmentNamespaces", opts.SegmentNamespaces)
	return mgr.Start(ctx)
}

// newManager is the controller manager: the scheme (client-go's kinds and ours), the
// API client's rate limits, the metrics and probe endpoints, leader election.
func newManager(metricsAddr, probeAddr string, leaderElect bool, leaderNS string, apiQPS float64, apiBurst int) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if apiQPS <= 0 || apiBurst <= 0 {
		return nil, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	cfg.QPS, cfg.Burst = float32(apiQPS), apiBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "vrrp-operator.redhatcop.redhat.io",
		LeaderElectionNamespace: leaderNS,
		// A new leader may start only after the old one has stopped
		// writing: allocations depend on it.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	return mgr, nil
}

func newLogger(format string, verbosity int) (logr.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.Level(-verbosity)}
	switch format {
	case "json":
		return logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "text":
		return logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, opts)), nil
	}
	return logr.Logger{}, fmt.Errorf("--log-format %q: want json or text", format)
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q := l[name]
	return q.String()
}

// vrrpdResources reads the --vrrpd-* resource flags. Each must be a quantity; a limit
// below its request is refused here rather than by the API server on every DaemonSet.
func vrrpdResources(cpuRequest, memRequest, memLimit string) (corev1.ResourceRequirements, error) {
	var qs [3]resource.Quantity
	for i, f := range []struct{ flag, value string }{
		{"--vrrpd-cpu-request", cpuRequest}, {"--vrrpd-memory-request", memRequest}, {"--vrrpd-memory-limit", memLimit},
	} {
		q, err := resource.ParseQuantity(f.value)
		if err != nil || q.Sign() <= 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf("%s %q: want a positive quantity", f.flag, f.value)
		}
		qs[i] = q
	}
	if qs[2].Cmp(qs[1]) < 0 {
		return corev1.ResourceRequirements{}, fmt.Errorf("--vrrpd-memory-limit %s is below --vrrpd-memory-request %s", memLimit, memRequest)
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: qs[0], corev1.ResourceMemory: qs[1]},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: qs[2]},
	}, nil
}
