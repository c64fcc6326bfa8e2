package groupsource

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// A write waits until no takeover has come for MastershipCoalesce, and at most
// MastershipCoalesceMax after the first: instances that fail over together become master
// within a few milliseconds of each other when the node is idle, but a loaded node takes
// hundreds of milliseconds over a hundred takeovers (270 ms for 130 on the 2-core lab
// machine, TestExcludeAtCapacityWritesOnce), and they are still one write. The bound is
// what the view is late by at worst, within the second it has.
const (
	MastershipCoalesce    = 50 * time.Millisecond
	MastershipCoalesceMax = 400 * time.Millisecond
)

// Mastership publishes, in the group's KeepalivedMastership (api/v1alpha1), which
// instances this node is master of and since when. It keeps this node's entries only:
// those of the instances it is master of, set to the node, and none that name the node
// but that it no longer masters. It writes when it becomes master of an instance (its
// predecessor's entry then names this node) and when it leaves an instance that left the
// group (nobody else will); leaving MASTER otherwise writes nothing, as the successor
// writes. A write is an update of the status with the resourceVersion it read, so
// concurrent writers (two nodes taking over the instances of a third) retry on a
// conflict instead of losing each other's entries.
//
// It also watches the object (a read), and writes when the object disagrees with what it
// holds: an instance it is master of shown as nobody's, or as another node's since a time
// after its own mastership began. That is how the view heals after two masters (a node
// that starts, becomes master before it hears the others and writes, then steps down: the
// node that stayed master made no transition and would not write), and after writes lost
// to an API server outage. A claim older than its own mastership it leaves alone, so two
// nodes that both stay master (a split wire) do not overwrite each other in a loop: the
// entry names the one that has been master longer.
//
// Observe is called from the daemon's loop and never blocks; Run writes.
type Mastership struct {
	group types.NamespacedName
	node  string
	log   *slog.Logger
	api   rest.Interface // redhatcop.redhat.io/v1alpha1
	wake  chan struct{}

	// Coalesce and CoalesceMax bound the wait before a write (MastershipCoalesce,
	// MastershipCoalesceMax), MinBackoff and MaxBackoff the wait between retries after a
	// failure (500 ms to 30 s); tests shorten them.
	Coalesce, CoalesceMax, MinBackoff, MaxBackoff time.Duration
	changes                                       atomic.Int64 // Observe's changes, for the quiet period

	mu    sync.Mutex
	held  map[string]held // by instance name: what this node is master of
	keys  map[string]bool // the group's instance keys, nil until the group is known
	dirty bool
	last  *v1alpha1.KeepalivedMastership // as last read or written: the next write's base

	writes atomic.Int64
}

type held struct {
	vips  []string
	since time.Time
}

// NewMastership returns the publisher of node's mastership in group's
// KeepalivedMastership, talking to rc.
func NewMastership(rc *rest.Config, group types.NamespacedName, node string, log *slog.Logger) (*Mastership, error) {
	if log == nil {
		log = slog.Default()
	}
	api, err := restClient(rc, v1alpha1.GroupVersion, "/apis")
	if err != nil {
		return nil, fmt.Errorf("groupsource: mastership: %w", err)
	}
	return &Mastership{group: group, node: node, log: log, api: api, wake: make(chan struct{}, 1),
		Coalesce: MastershipCoalesce, CoalesceMax: MastershipCoalesceMax, MinBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second,
		held: map[string]held{}}, nil
}

// Writes is how many writes the API server took (a request refused for a conflict, which
// changes nothing, is not one).
func (m *Mastership) Writes() int64 { return m.writes.Load() }

// InstanceKey is the group's instance key of a virtual router: its name without the
// family suffix a dual-stack instance's routers carry.
func InstanceKey(instance string) string {
	for _, s := range []string{SuffixIPv4, SuffixIPv6} {
		if k, ok := strings.CutSuffix(instance, s); ok {
			return k
		}
	}
	return instance
}

// SetGroup tells the publisher which instances the group has now (its status' keys),
// before the daemon applies the change: an instance this node leaves because it left the
// group is then one whose entry the node must drop itself.
func (m *Mastership) SetGroup(g *v1alpha1.KeepalivedGroup) {
	keys := map[string]bool{}
	if g != nil {
		for _, in := range g.Status.Instances {
			keys[in.Key] = true
		}
	}
	m.mu.Lock()
	m.keys = keys
	m.mu.Unlock()
}

// Observe takes an instance's state change at time at. It never blocks.
func (m *Mastership) Observe(instance string, from, to vrrp.State, vips []netip.Prefix, at time.Time) {
	if (from == vrrp.StateMaster) == (to == vrrp.StateMaster) {
		return
	}
	m.mu.Lock()
	if to == vrrp.StateMaster {
		// Microseconds, as the API server keeps them: what was written then
		// compares equal to what is held.
		h := held{vips: holderVIPs(vips), since: at.Truncate(time.Microsecond)}
		m.held[instance] = h
		m.dirty = true
	} else {
		delete(m.held, instance)
		if m.keys != nil && !m.keys[InstanceKey(instance)] {
			m.dirty = true // gone from the group: no successor will write
		}
	}
	dirty := m.dirty
	m.mu.Unlock()
	if dirty {
		m.changes.Add(1)
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// Run writes whenever Observe (or the object, watched) made the view dirty, until ctx
// ends: after Coalesce, so a burst of takeovers is one write, and again after a backoff
// while writes fail.
func (m *Mastership) Run(ctx context.Context) {
	go m.watch(ctx)
	backoff := m.MinBackoff
	var warned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		if !m.quiet(ctx) {
			return
		}
		err := m.write(ctx)
		if err == nil {
			backoff = m.MinBackoff
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// The view stays dirty: retry, and say so at most once a minute (an older
		// operator without KeepalivedMastership is a steady reason).
		if time.Since(warned) > time.Minute {
			warned = time.Now()
			m.log.Warn("cannot publish which VIPs this node holds", "mastership", m.group.String(), "err", err)
		}
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, m.MaxBackoff)
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// quiet waits until no change has come for Coalesce, or CoalesceMax has passed; false
// when ctx ended.
func (m *Mastership) quiet(ctx context.Context) bool {
	start := time.Now()
	for {
		seen := m.changes.Load()
		if !sleepCtx(ctx, m.Coalesce) {
			return false
		}
		if m.changes.Load() == seen || time.Since(start) >= m.CoalesceMax {
			return true
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// write brings this node's entries up to date, if they are not: from the object as last
// seen, read again after a conflict (at most a few times; the caller retries later).
func (m *Mastership) write(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		m.mu.Lock()
		if !m.dirty {
			m.mu.Unlock()
			return nil
		}
		m.dirty = false
		base, now := m.last, maps.Clone(m.held)
		m.mu.Unlock()
		if base == nil {
			var err error
			if base, err = m.get(ctx); err != nil {
				m.setDirty()
				return err
			}
		}
		next := base.DeepCopy()
		next.Status.Holders = m.entries(base.Status.Holders, now)
		if slices.EqualFunc(next.Status.Holders, base.Status.Holders, sameHolder) {
			m.remember(base)
			return nil
		}
		var out v1alpha1.KeepalivedMastership
		err := m.api.Put().Namespace(m.group.Namespace).Resource("keepalivedmasterships").Name(m.group.Name).
			SubResource("status").Param("fieldManager", v1alpha1.MastershipFieldManager(m.node)).
			Body(next).Do(ctx).Into(&out)
		if err == nil {
			m.writes.Add(1)
			m.remember(&out)
			m.log.Debug("mastership written", "mastership", m.group.String(), "holders", len(out.Status.Holders), "mine", len(now))
			return nil
		}
		m.setDirty()
		m.remember(nil) // read it again
		if !apierrors.IsConflict(err) || attempt >= 3 {
			return err
		}
	}
}

func (m *Mastership) setDirty() {
	m.mu.Lock()
	m.dirty = true
	m.mu.Unlock()
}

func (m *Mastership) remember(o *v1alpha1.KeepalivedMastership) {
	m.mu.Lock()
	m.last = o
	m.mu.Unlock()
}

func (m *Mastership) get(ctx context.Context) (*v1alpha1.KeepalivedMastership, error) {
	var o v1alpha1.KeepalivedMastership
	err := m.api.Get().Namespace(m.group.Namespace).Resource("keepalivedmasterships").Name(m.group.Name).
		SubResource("status").Do(ctx).Into(&o)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// holderVIPs is what a holder entry lists of an instance's VIPs: the first
// v1alpha1.MaxHolderVIPs in address order. A shared router holds many Services'
// addresses, more than the API server takes in one entry; sorting first makes the
// entry the same on every node and across reloads, so a takeover of the same set
// compares equal and nothing is rewritten for the order alone.
func holderVIPs(vips []netip.Prefix) []string {
	addrs := make([]netip.Addr, len(vips))
	for i, p := range vips {
		addrs[i] = p.Addr()
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	addrs = slices.Compact(addrs)
	if len(addrs) > v1alpha1.MaxHolderVIPs {
		addrs = addrs[:v1alpha1.MaxHolderVIPs]
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

// entries is cur with this node's entries replaced by now (the instances it is master
// of), sorted by instance.
func (m *Mastership) entries(cur []v1alpha1.VIPHolder, now map[string]held) []v1alpha1.VIPHolder {
	out := make([]v1alpha1.VIPHolder, 0, len(cur)+len(now))
	for _, e := range cur {
		if _, mine := now[e.Instance]; mine || e.Node == m.node {
			continue
		}
		out = append(out, e)
	}
	for name, h := range now {
		e := v1alpha1.VIPHolder{Instance: name, Node: m.node, VIPs: h.vips, Since: metav1.NewMicroTime(h.since)}
		if svc, ok := ServiceOf(name); ok {
			e.Service = svc.String()
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b v1alpha1.VIPHolder) int { return cmp.Compare(a.Instance, b.Instance) })
	return out
}

func sameHolder(a, b v1alpha1.VIPHolder) bool {
	return a.Instance == b.Instance && a.Service == b.Service && a.Node == b.Node && slices.Equal(a.VIPs, b.VIPs) && a.Since.Equal(&b.Since)
}

// watch follows the object until ctx ends, checking each version against what this node
// holds (check). Each watch starts without a resourceVersion, so its first event is the
// object as it is now; it is restarted after it ends, after a backoff when it fails.
func (m *Mastership) watch(ctx context.Context) {
	backoff := m.MinBackoff
	for ctx.Err() == nil {
		timeout := int64(300 + rand.IntN(300)) // spread the reconnects of many nodes
		w, err := m.api.Get().Namespace(m.group.Namespace).Resource("keepalivedmasterships").
			VersionedParams(&metav1.ListOptions{
				FieldSelector:  fields.OneTermEqualSelector("metadata.name", m.group.Name).String(),
				TimeoutSeconds: &timeout,
				Watch:          true,
			}, parameterCodec()).Watch(ctx)
		if err == nil {
			for ev := range w.ResultChan() {
				if o, ok := ev.Object.(*v1alpha1.KeepalivedMastership); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
					m.check(o)
					backoff = m.MinBackoff
				}
			}
			w.Stop()
		} else {
			m.log.Debug("cannot watch the KeepalivedMastership", "mastership", m.group.String(), "err", err)
		}
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, m.MaxBackoff)
	}
}

// check takes o as the base of the next write and marks the view dirty when o disagrees
// with what this node holds (see Mastership).
func (m *Mastership) check(o *v1alpha1.KeepalivedMastership) {
	m.mu.Lock()
	if m.last != nil && olderThan(o.ResourceVersion, m.last.ResourceVersion) {
		m.mu.Unlock()
		return // this node's own write, answered before the watch caught up, is newer
	}
	m.last = o
	wrong := false
	for name, h := range m.held {
		i := slices.IndexFunc(o.Status.Holders, func(e v1alpha1.VIPHolder) bool { return e.Instance == name })
		if i < 0 || o.Status.Holders[i].Node != m.node && o.Status.Holders[i].Since.After(h.since) {
			wrong = true
			break
		}
	}
	if wrong {
		m.dirty = true
	}
	m.mu.Unlock()
	if wrong {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// olderThan reports whether resourceVersion a is known to be older than b. Resource
// versions are opaque, but etcd's are integers; anything else is not known to be older.
func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
