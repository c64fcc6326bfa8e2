package groupsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/regularfile"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// Options configure Watch.
type Options struct {
	// Group is the KeepalivedGroup to follow (vrrpd's --group ns/name).
	Group types.NamespacedName
	// Node is this node's name (vrrpd's --node), as in status.nodes.
	Node string
	// StateDir holds the cache of the last group seen; empty means no cache.
	StateDir string
	// Resolve finds the interface for interfaceFromIP; nil means
	// vip.InterfaceFor (the host's routing table).
	Resolve Resolver
	// OnChange receives each new configuration. It is called from Watch's
	// goroutine, one call at a time, and only when the configuration
	// differs from the one it last received.
	OnChange func(Update)
	// Logger receives errors, retries and translation warnings; nil means
	// slog.Default().
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the exponential wait between retries
	// after an error; zero means 500ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// PasswordFile holds the group's password: the key of its Secret,
	// which the kubelet mounts into vrrpd's pod (the operator's DaemonSet
	// names it with vrrpd's --password-file). vrrpd never reads a Secret
	// through the API. Empty means no password.
	PasswordFile string
	// PasswordRefresh is how often PasswordFile is read again while the
	// group wants a password, so that a rotated Secret (the kubelet
	// replaces the file) takes effect without a change to the group or a
	// restart; zero means ten seconds.
	PasswordRefresh time.Duration
}

// Update is a new configuration for the daemon.
type Update struct {
	// Config is the complete configuration: Run it the first time, Reload
	// it afterwards. No instances means the node holds no VIP of the group.
	Config *config.Config
	// Warnings are what the translation ignored or adjusted.
	Warnings []config.Warning
	// FromCache says the group came from the state directory's cache, not
	// (yet) from the API server.
	FromCache bool
	// ResourceVersion is the group's resourceVersion, empty when the group
	// does not exist.
	ResourceVersion string
	// Timing is where the time between the API server's event and
	// OnChange went: a Service's path to its VIP is measured in parts
	// (test/e2e's BenchmarkServiceToVIP reads them from vrrpd's log).
	Timing Timing
	// Group is the group Config was translated from, nil when it does not
	// exist. Read only: the watcher keeps it.
	Group *v1alpha1.KeepalivedGroup
}

// Timing breaks down the watcher's share of an Update's latency.
type Timing struct {
	// Received is when the event (or the list) that led to the Update
	// came in; zero for the cache and for retries.
	Received time.Time
	// Cache is the time spent writing the cache file, Translate the time
	// spent in Translate.
	Cache, Translate time.Duration
}

// requestTimeout bounds one list or get, so an API server that accepts
// connections but never answers cannot stall the watcher.
const requestTimeout = 30 * time.Second

// errRelist asks for a new list at once: the watch's resourceVersion is
// too old (410 Gone), which is normal after a long disconnection.
var errRelist = errors.New("watch expired; listing again")

// Watch follows the group until ctx ends and returns ctx's error. It starts
// from the cache when there is one, then lists the group (a LIST with a
// metadata.name field selector, allowed by a Role limited to the group by
// resourceNames) and watches it from the listed resourceVersion. Errors
// are logged and retried with exponential backoff; while the API server is
// away the last configuration stays in force.
func Watch(ctx context.Context, rc *rest.Config, opts Options) error {
	w, err := newWatcher(rc, opts)
	if err != nil {
		return err
	}
	return w.run(ctx)
}

// scheme decodes our group's objects, the Services and Events of events.go, and the
// API's Status errors. It holds only these: client-go's full scheme (every API group)
// would cost vrrpd megabytes of memory. It is built on first use, not at package init:
// registering the types walks them all by reflection, which pages in their type data,
// and a standalone vrrpd, which links this package but never follows a group, would pay
// for that in resident memory.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err) // registration of static types; cannot fail at run time
	}
	s.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.Service{})
	s.AddKnownTypes(eventsv1.SchemeGroupVersion, &eventsv1.Event{})
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
})

// parameterCodec encodes list and watch options into query parameters; built with scheme.
var parameterCodec = sync.OnceValue(func() runtime.ParameterCodec { return runtime.NewParameterCodec(scheme()) })

type watcher struct {
	opts   Options
	log    *slog.Logger
	groups rest.Interface

	// Inputs of the translation.
	group    *v1alpha1.KeepalivedGroup // nil: does not exist
	password []byte
	pwErr    string // why the last read of PasswordFile gave nothing, logged once per change

	// Output.
	last      *config.Config
	cached    []byte // the cache file's content, to skip identical writes
	failing   bool   // the last translation failed; retry on retryAt
	retry     backoff
	retryAt   time.Time
	refreshAt time.Time

	timing Timing // of the event being handled, for its Update
}

func newWatcher(rc *rest.Config, opts Options) (*watcher, error) {
	if opts.Group.Namespace == "" || opts.Group.Name == "" {
		return nil, fmt.Errorf("groupsource: group %q needs a namespace and a name", opts.Group)
	}
	if opts.Node == "" {
		return nil, fmt.Errorf("groupsource: no node name")
	}
	if opts.OnChange == nil {
		return nil, fmt.Errorf("groupsource: no OnChange")
	}
	if opts.Resolve == nil {
		opts.Resolve = vip.InterfaceFor
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	if opts.PasswordRefresh <= 0 {
		opts.PasswordRefresh = 10 * time.Second
	}

	groups, err := restClient(rc, v1alpha1.GroupVersion, "/apis")
	if err != nil {
		return nil, fmt.Errorf("groupsource: %w", err)
	}
	return &watcher{
		opts:   opts,
		log:    opts.Logger.With("group", opts.Group.String()),
		groups: groups,
		retry:  backoff{min: opts.MinBackoff, max: opts.MaxBackoff},
	}, nil
}

func (w *watcher) run(ctx context.Context) error {
	w.startFromCache()
	bo := backoff{min: w.opts.MinBackoff, max: w.opts.MaxBackoff}
	var lastRelist time.Time
	for {
		healthy, err := w.session(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if healthy {
			bo.reset()
		}
		// An expired watch is relisted at once, but not twice in a second:
		// a server that keeps answering 410 must not be hammered.
		if errors.Is(err, errRelist) && time.Since(lastRelist) > time.Second {
			lastRelist = time.Now()
			w.log.Debug("watch expired; listing again")
			continue
		}
		d := bo.next()
		w.log.Warn("kubernetes API", "err", err, "retry_in", d)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// startFromCache applies the cached group, if any, before the API answers.
func (w *watcher) startFromCache() {
	if w.opts.StateDir == "" {
		return
	}
	e, err := readCache(w.opts.StateDir, w.opts.Group)
	if err != nil {
		w.log.Warn("ignoring the cached group", "err", err)
		return
	}
	if e == nil {
		return
	}
	w.group = e.Group
	w.readPassword()
	if data, err := encodeCache(e); err == nil {
		w.cached = data
	}
	w.log.Info("starting from the cached group", "resource_version", e.Group.ResourceVersion)
	w.apply(true)
}

// session lists the group and watches it until an error. healthy says a
// watch worked (delivered events or lasted a second), which resets the
// retry backoff; a list that works followed by a watch that does not (a
// Role without the watch verb, a proxy that cuts streams) backs off.
func (w *watcher) session(ctx context.Context) (healthy bool, err error) {
	g, rv, err := w.list(ctx)
	if err != nil {
		return false, err
	}
	w.timing = Timing{Received: time.Now()}
	w.setGroup(g)
	for {
		start := time.Now()
		wi, err := w.watchFrom(ctx, rv)
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return healthy, errRelist
			}
			return healthy, fmt.Errorf("watch: %w", err)
		}
		var events int
		rv, events, err = w.consume(ctx, wi, rv)
		wi.Stop()
		worked := events > 0 || time.Since(start) >= time.Second
		healthy = healthy || worked
		if err != nil {
			return healthy, err
		}
		// A watch the server ends normally (its timeout) is resumed from
		// the last resourceVersion; one that ends at once, with nothing in
		// it, goes through the backoff instead of spinning.
		if !worked {
			return healthy, fmt.Errorf("watch closed at once")
		}
	}
}

func (w *watcher) selector() string {
	return fields.OneTermEqualSelector("metadata.name", w.opts.Group.Name).String()
}

// list returns the group (nil when it does not exist) and the list's
// resourceVersion to watch from.
func (w *watcher) list(ctx context.Context) (*v1alpha1.KeepalivedGroup, string, error) {
	var l v1alpha1.KeepalivedGroupList
	err := w.groups.Get().
		Namespace(w.opts.Group.Namespace).
		Resource("keepalivedgroups").
		VersionedParams(&metav1.ListOptions{FieldSelector: w.selector()}, parameterCodec()).
		Timeout(requestTimeout).
		Do(ctx).
		Into(&l)
	if err != nil {
		return nil, "", fmt.Errorf("list: %w", err)
	}
	for i := range l.Items {
		if l.Items[i].Name == w.opts.Group.Name {
			return &l.Items[i], l.ResourceVersion, nil
		}
	}
	return nil, l.ResourceVersion, nil
}

func (w *watcher) watchFrom(ctx context.Context, rv string) (watch.Interface, error) {
	// The server ends a watch after timeoutSeconds; spread them so many
	// nodes do not reconnect in step (as client-go's reflector does).
	timeout := int64(300 + rand.IntN(300))
	return w.groups.Get().
		Namespace(w.opts.Group.Namespace).
		Resource("keepalivedgroups").
		VersionedParams(&metav1.ListOptions{
			FieldSelector:       w.selector(),
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
			TimeoutSeconds:      &timeout,
			Watch:               true,
		}, parameterCodec()).
		Watch(ctx)
}

// consume handles the watch's events, the password refresh and translation
// retries until the watch ends, and returns the last resourceVersion seen.
func (w *watcher) consume(ctx context.Context, wi watch.Interface, rv string) (string, int, error) {
	events := 0
	timer := time.NewTimer(w.nextWakeup())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, events, ctx.Err()
		case <-timer.C:
			w.refresh()
			timer.Reset(w.nextWakeup())
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv, events, nil
			}
			events++
			w.timing = Timing{Received: time.Now()}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				g, ok := ev.Object.(*v1alpha1.KeepalivedGroup)
				if !ok {
					return rv, events, fmt.Errorf("watch: unexpected %T", ev.Object)
				}
				rv = g.ResourceVersion
				if g.Name != w.opts.Group.Name {
					continue // the field selector makes this impossible
				}
				if ev.Type == watch.Deleted {
					g = nil
				}
				w.setGroup(g)
				timer.Reset(w.nextWakeup())
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return rv, events, errRelist
				}
				return rv, events, fmt.Errorf("watch: %w", err)
			}
		}
	}
}

// nextWakeup is the time until the next password refresh or translation
// retry, whichever is due first.
func (w *watcher) nextWakeup() time.Duration {
	at := w.refreshAt
	if w.failing && (at.IsZero() || w.retryAt.Before(at)) {
		at = w.retryAt
	}
	if at.IsZero() {
		return 24 * time.Hour
	}
	return max(time.Until(at), 0)
}

// setGroup takes a group from the API server: reads the password it needs,
// updates the cache, translates and hands a changed configuration to
// OnChange.
func (w *watcher) setGroup(g *v1alpha1.KeepalivedGroup) {
	w.group = g
	w.readPassword()
	// Cache first: a crash while the daemon applies the update must not
	// restart it on the older group.
	start := time.Now()
	w.updateCache()
	w.timing.Cache = time.Since(start)
	w.apply(false)
}

// refresh reads the password file again and retries a failed translation
// (its resolver may succeed now, or the password may be there now).
func (w *watcher) refresh() {
	old := w.password
	w.readPassword()
	if w.failing || !bytes.Equal(old, w.password) {
		w.apply(false)
	}
}

// maxPasswordFile bounds what vrrpd reads from the password file: VRRPv2's
// password is 8 bytes; a bigger file is not a password.
const maxPasswordFile = 4 << 10

// readPassword reads PasswordFile when the group's instances authenticate.
// A missing, unreadable or oversized file leaves no password: the
// translation then says which instance needs it, and the next refresh or
// retry reads the file again (the kubelet may not have written it yet).
func (w *watcher) readPassword() {
	w.refreshAt = time.Time{}
	w.password = nil
	pa := secretRef(w.group)
	if pa == nil {
		w.pwErr = ""
		return
	}
	w.refreshAt = time.Now().Add(w.opts.PasswordRefresh)
	pw, err := readPasswordFile(w.opts.PasswordFile)
	if err != nil {
		if msg := err.Error(); msg != w.pwErr {
			w.pwErr = msg
			w.log.Warn("cannot read the password", "secret", pa.SecretRef.Name, "key", secretKey(pa), "err", err)
		}
		return
	}
	w.pwErr = ""
	w.password = pw
}

// readPasswordFile returns the content of path. The kubelet replaces a
// Secret volume's files by switching a symlink, so each read opens the
// path afresh and sees the old password or the new one, never a mix.
func readPasswordFile(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no password file (vrrpd --password-file)")
	}
	return regularfile.Read(path, maxPasswordFile)
}

// secretRef is the Secret the group's instances authenticate with: the
// status' settings are what vrrpd obeys; every instance has the group's.
func secretRef(g *v1alpha1.KeepalivedGroup) *v1alpha1.PasswordAuth {
	if g == nil {
		return nil
	}
	for i := range g.Status.Instances {
		if pa := g.Status.Instances[i].Settings.PasswordAuth; pa != nil {
			return pa
		}
	}
	return nil
}

// apply translates the current inputs and hands a changed configuration to
// OnChange. A failed translation keeps the last configuration running and
// is retried with backoff.
func (w *watcher) apply(fromCache bool) {
	var (
		cfg = &config.Config{RouterID: w.opts.Node}
		ws  []config.Warning
		err error
		rv  string
	)
	if w.group != nil {
		rv = w.group.ResourceVersion
		start := time.Now()
		cfg, ws, err = Translate(w.group, w.opts.Node, w.password, w.opts.Resolve)
		w.timing.Translate = time.Since(start)
	}
	timing := w.timing
	w.timing = Timing{}
	if err != nil {
		w.failing = true
		d := w.retry.next()
		w.retryAt = time.Now().Add(d)
		w.log.Error("cannot use the group; keeping the running configuration", "resource_version", rv, "err", err, "retry_in", d)
		return
	}
	w.failing = false
	w.retry.reset()
	if w.last != nil && configEqual(w.last, cfg) {
		return
	}
	w.last = cfg
	for _, wn := range ws {
		w.log.Warn(wn.Error())
	}
	w.log.Info("new configuration", "instances", len(cfg.Instances), "resource_version", rv, "from_cache", fromCache)
	w.opts.OnChange(Update{Config: cfg, Warnings: ws, FromCache: fromCache, ResourceVersion: rv, Timing: timing, Group: w.group})
}

// updateCache writes the group the API server gave, or removes the cache
// when the group is gone.
func (w *watcher) updateCache() {
	if w.opts.StateDir == "" {
		return
	}
	if w.group == nil {
		if err := removeCache(w.opts.StateDir); err != nil {
			w.log.Warn("cannot remove the cache", "err", err)
		}
		w.cached = nil
		return
	}
	data, err := encodeCache(&cacheEntry{Group: w.group})
	if err != nil {
		w.log.Warn("cannot encode the cache", "err", err)
		return
	}
	if bytes.Equal(data, w.cached) {
		return
	}
	if err := writeCache(w.opts.StateDir, data); err != nil {
		w.log.Warn("cannot write the cache", "err", err)
		return
	}
	w.cached = data
}

// configEqual reports whether a and b configure the daemon identically.
func configEqual(a, b *config.Config) bool {
	if a.RouterID != b.RouterID || len(a.Instances) != len(b.Instances) {
		return false
	}
	for i := range a.Instances {
		if !a.Instances[i].Equal(b.Instances[i]) {
			return false
		}
	}
	return true
}

// backoff is an exponential delay with jitter.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	// Up to 20% less, so restarted nodes do not retry in step.
	return b.cur - time.Duration(rand.Int64N(int64(b.cur)/5+1))
}

func (b *backoff) reset() { b.cur = 0 }

// restClient is a REST client of rc for one API group version, decoding with vrrpd's
// small scheme and naming itself vrrpd unless rc names a user agent.
func restClient(rc *rest.Config, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme()).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "vrrpd"
	}
	return rest.RESTClientFor(c)
}
