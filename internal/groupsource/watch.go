package groupsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
	// SecretRefresh is how often the password Secret is read again, so a
	// changed password takes effect without a change to the group. vrrpd
	// only gets the Secret (it needs no list or watch on it); zero means
	// one minute.
	SecretRefresh time.Duration
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

// scheme decodes our group's objects, Secrets, Services and Events (events.go) and the
// API's Status errors. It holds only these: client-go's full scheme (every API group) would cost vrrpd megabytes of memory.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err) // registration of static types; cannot fail at run time
	}
	s.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.Secret{}, &corev1.Service{})
	s.AddKnownTypes(eventsv1.SchemeGroupVersion, &eventsv1.Event{}) // events.go
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

var parameterCodec = runtime.NewParameterCodec(scheme)

type watcher struct {
	opts   Options
	log    *slog.Logger
	groups rest.Interface
	core   rest.Interface // for the password Secret

	// Inputs of the translation.
	group    *v1alpha1.KeepalivedGroup // nil: does not exist
	password []byte
	secret   *v1alpha1.PasswordAuth // Secret the password came from

	// Output.
	last      *config.Config
	cached    []byte // the cache file's content, to skip identical writes
	failing   bool   // the last translation failed; retry on retryAt
	retry     backoff
	retryAt   time.Time
	refreshAt time.Time
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
	if opts.SecretRefresh <= 0 {
		opts.SecretRefresh = time.Minute
	}

	gc := rest.CopyConfig(rc)
	gc.GroupVersion = &v1alpha1.GroupVersion
	gc.APIPath = "/apis"
	gc.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if gc.UserAgent == "" {
		gc.UserAgent = "vrrpd"
	}
	groups, err := rest.RESTClientFor(gc)
	if err != nil {
		return nil, fmt.Errorf("groupsource: %w", err)
	}
	cc := rest.CopyConfig(gc)
	cc.GroupVersion = &corev1.SchemeGroupVersion
	cc.APIPath = "/api"
	core, err := rest.RESTClientFor(cc)
	if err != nil {
		return nil, fmt.Errorf("groupsource: %w", err)
	}
	return &watcher{
		opts:   opts,
		log:    opts.Logger.With("group", opts.Group.String()),
		groups: groups,
		core:   core,
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
	w.group, w.password, w.secret = e.Group, e.Password, secretRef(e.Group)
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
	if err := w.setGroup(ctx, g); err != nil {
		return false, err
	}
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
		VersionedParams(&metav1.ListOptions{FieldSelector: w.selector()}, parameterCodec).
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
		}, parameterCodec).
		Watch(ctx)
}

// consume handles the watch's events, the Secret refresh and translation
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
			if err := w.refresh(ctx); err != nil {
				return rv, events, err
			}
			timer.Reset(w.nextWakeup())
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv, events, nil
			}
			events++
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
				if err := w.setGroup(ctx, g); err != nil {
					return rv, events, err
				}
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

// nextWakeup is the time until the next Secret refresh or translation
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

// setGroup takes a group from the API server: reads its Secret, updates the
// cache, translates and hands a changed configuration to OnChange.
func (w *watcher) setGroup(ctx context.Context, g *v1alpha1.KeepalivedGroup) error {
	w.group = g
	w.secret = secretRef(g)
	w.password = nil
	if err := w.readSecret(ctx); err != nil {
		return err
	}
	// Cache first: a crash while the daemon applies the update must not
	// restart it on the older group.
	w.updateCache()
	w.apply(false)
	return nil
}

// refresh reads the Secret again and retries a failed translation (its
// resolver may succeed now, or the Secret may exist now).
func (w *watcher) refresh(ctx context.Context) error {
	old := w.password
	if err := w.readSecret(ctx); err != nil {
		return err
	}
	if w.failing || !bytes.Equal(old, w.password) {
		w.updateCache()
		w.apply(false)
	}
	return nil
}

// readSecret gets the password. A missing Secret or key, or a denied get,
// leaves no password (the translation then says which instance needs it);
// any other error is the API's and goes through the retry.
func (w *watcher) readSecret(ctx context.Context) error {
	w.refreshAt = time.Time{}
	pa := w.secret
	if pa == nil {
		w.password = nil
		return nil
	}
	w.refreshAt = time.Now().Add(w.opts.SecretRefresh)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	s := &corev1.Secret{}
	err := w.core.Get().Namespace(w.opts.Group.Namespace).Resource("secrets").Name(pa.SecretRef.Name).
		Do(ctx).Into(s)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		w.log.Warn("cannot read the password Secret", "secret", pa.SecretRef.Name, "err", err)
		w.password = nil
		return nil
	case err != nil:
		return fmt.Errorf("get Secret %s: %w", pa.SecretRef.Name, err)
	}
	w.password = secretValue(s, secretKey(pa))
	if w.password == nil {
		w.log.Warn("the password Secret has no such key", "secret", pa.SecretRef.Name, "key", secretKey(pa))
	}
	return nil
}

func secretValue(s *corev1.Secret, key string) []byte {
	return s.Data[key] // the API server turns stringData into data
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
		cfg, ws, err = Translate(w.group, w.opts.Node, w.password, w.opts.Resolve)
	}
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
	w.opts.OnChange(Update{Config: cfg, Warnings: ws, FromCache: fromCache, ResourceVersion: rv})
}

// updateCache writes the group and password the API server gave, or removes
// the cache when the group is gone.
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
	data, err := encodeCache(&cacheEntry{Group: w.group, Password: w.password})
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
