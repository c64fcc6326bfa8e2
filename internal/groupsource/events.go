package groupsource

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Event reasons and actions vrrpd records on a Service. nodeAssigned is MetalLB's
// speaker's reason for the same news, so that one query finds both.
const (
	ReasonNodeAssigned   = "nodeAssigned"
	ReasonNodeUnassigned = "nodeUnassigned"
	actionBecomeMaster   = "BecomeMaster"
	actionLeaveMaster    = "LeaveMaster"
	// A VIP this node holds as MASTER is answered by another host too (internal/conflict):
	// a Warning, and a Normal Event once the other host no longer answers.
	ReasonVIPConflict         = "VIPConflict"
	ReasonVIPConflictResolved = "VIPConflictResolved"
	actionDetectConflict      = "DetectConflict"
	// reportingController names vrrpd in its Events (events.k8s.io wants a qualified name).
	reportingController = "redhatcop.redhat.io/vrrpd"
)

// eventQueue is how many state changes may wait for the API server; beyond it they are
// dropped (and counted in the log), never blocking the daemon's loop.
const eventQueue = 256

// EventRecorder records an Event on a Service when this node becomes MASTER of one of
// the Service's virtual routers or stops being it, so `kubectl describe service` says
// which node holds its VIPs and since when. It needs, in each Service's namespace,
// create on events.k8s.io Events and get on the Service (for its UID, by which kubectl
// finds the Event); the operator grants exactly that (controller, eventsRole).
//
// Observe is called from the daemon's loop and only queues; Run posts.
type EventRecorder struct {
	node   string
	log    *slog.Logger
	events rest.Interface // events.k8s.io/v1
	core   rest.Interface // the Services' UIDs
	queue  chan change
	limit  *rate.Limiter // EventsPerSecond, for every Event Run posts

	// The shared routers' members and their pending Events (sharedevents.go); wake
	// tells Run there are some.
	mu      sync.Mutex
	routers map[string][]string
	shared  memberQueue
	wake    chan struct{}

	posted func(change, time.Time) // tests: called as each Event is posted
}

type change struct {
	instance string
	member   string // a shared router's member (its Service's key), empty otherwise
	from, to vrrp.State
	vrid     uint8
	vips     []netip.Prefix
	at       time.Time
	conflict *conflictNote // set for a conflict's start or end instead of a state change
}

// conflictNote is a second holder of vip, seen by its MAC.
type conflictNote struct {
	vip   netip.Addr
	mac   string
	start bool
}

// NewEventRecorder returns a recorder for node (vrrpd's --node) that talks to rc.
func NewEventRecorder(rc *rest.Config, node string, log *slog.Logger) (*EventRecorder, error) {
	if log == nil {
		log = slog.Default()
	}
	// The recorder paces its Events itself (limit); each is a GET on one client and a
	// POST on the other, which client-go would otherwise hold to 5 a second.
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = EventsPerSecond, EventsPerSecond
	events, err := restClient(rc, eventsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, fmt.Errorf("groupsource: events: %w", err)
	}
	core, err := restClient(rc, corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, fmt.Errorf("groupsource: events: %w", err)
	}
	return &EventRecorder{node: node, log: log, events: events, core: core, queue: make(chan change, eventQueue),
		limit: rate.NewLimiter(EventsPerSecond, 1), wake: make(chan struct{}, 1)}, nil
}

// ServiceOf is the Service an instance serves, from its name: the group's instance key
// ("namespace/name", or "namespace/name/ip" with spreadvips), with SuffixIPv4 or
// SuffixIPv6 for one family of a dual-stack instance. A router shared by many Services
// ("@class/...", docs/design/router-sharing.md) serves no one Service: false.
func ServiceOf(instance string) (types.NamespacedName, bool) {
	if strings.HasPrefix(instance, "@") {
		return types.NamespacedName{}, false
	}
	parts := strings.Split(instance, "/")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: parts[0], Name: parts[1]}, true
}

// Observe queues an instance's state change; only entering or leaving MASTER becomes
// an Event: on its Service, or on each member of a shared router (sharedevents.go). It
// never blocks.
func (r *EventRecorder) Observe(instance string, from, to vrrp.State, vrid uint8, vips []netip.Prefix) {
	if (from == vrrp.StateMaster) == (to == vrrp.StateMaster) {
		return
	}
	c := change{instance: instance, from: from, to: to, vrid: vrid, vips: vips, at: time.Now()}
	if strings.HasPrefix(instance, "@") {
		r.observeShared(c)
		return
	}
	select {
	case r.queue <- c:
	default:
		r.log.Warn("too many state changes waiting; Event dropped", "instance", instance, "to", to.String())
	}
}

// ObserveConflict queues a conflict's start (a Warning Event on the Service: another host,
// mac, answers for vip while this node holds it as MASTER) or end. It never blocks; the
// detector already limits how often it is called (one start per VIP a minute).
func (r *EventRecorder) ObserveConflict(instance string, vrid uint8, vip netip.Addr, mac string, start bool) {
	select {
	case r.queue <- change{instance: instance, vrid: vrid, at: time.Now(), conflict: &conflictNote{vip, mac, start}}:
	default:
		r.log.Warn("too many changes waiting; Event dropped", "instance", instance, "vip", vip.String(), "conflict", start)
	}
}

// postWorkers is how many Events may be in flight at once. An Event is two requests
// (the Service, for its UID, then the Event), 20-25 ms together on the loaded test
// machine's API server, so one at a time would post fewer than 50 a second and a
// shared router's failover would tell its members more slowly than the pace allows.
const postWorkers = 4

// Run posts the queued Events until ctx ends, at most EventsPerSecond: the changes of
// per-Service instances as they came, and the shared routers' member Events between
// them. A failure is logged and the Event dropped: Events are news, not state, and a
// retry would report an old change late.
func (r *EventRecorder) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, postWorkers)
	post := func(c change) { r.post(ctx, c, slots, &wg) }
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-r.queue:
			post(c)
		case <-r.wake:
			for ctx.Err() == nil {
				select {
				case c := <-r.queue: // a Service's own router does not wait for a shared one's members
					post(c)
					continue
				default:
				}
				c, ok := r.nextShared()
				if !ok {
					break
				}
				post(c)
			}
		}
	}
}

// post records c's Event on a worker of its own once a worker is free and the pace
// allows.
func (r *EventRecorder) post(ctx context.Context, c change, slots chan struct{}, wg *sync.WaitGroup) {
	key := c.instance
	if c.member != "" {
		key = c.member
	}
	if _, ok := ServiceOf(key); !ok {
		return // not a group's instance: no Event, no token
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	if err := r.limit.Wait(ctx); err != nil {
		<-slots
		return // ctx ended
	}
	if r.posted != nil {
		r.posted(c, time.Now())
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-slots }()
		if err := r.record(ctx, c); err != nil && ctx.Err() == nil {
			r.log.Warn("cannot record Event on Service", "instance", c.instance, "member", c.member, "err", err)
		}
	}()
}

func (r *EventRecorder) record(ctx context.Context, c change) error {
	key := c.instance
	if c.member != "" {
		key = c.member
	}
	svc, ok := ServiceOf(key)
	if !ok {
		return nil // not a group's instance
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var s corev1.Service
	if err := r.core.Get().Namespace(svc.Namespace).Resource("services").Name(svc.Name).Do(ctx).Into(&s); err != nil {
		return fmt.Errorf("get Service %s: %w", svc, err)
	}
	if c.member != "" {
		c.vips = memberVIPs(c.member, &s, c.vips) // its own, not the router's thousands
	}
	ev := newEvent(c, &s, r.node)
	return r.events.Post().Namespace(svc.Namespace).Resource("events").Body(ev).Do(ctx).Error()
}

// newEvent is the Event for change c of Service s on node.
func newEvent(c change, s *corev1.Service, node string) *eventsv1.Event {
	vips := make([]string, len(c.vips))
	for i, p := range c.vips {
		vips[i] = p.Addr().String()
	}
	addrs, router := strings.Join(vips, ", "), c.instance
	if c.member != "" {
		router = "shared router " + c.instance
		if len(vips) == 0 {
			addrs = "its VIPs" // none of its Service's addresses as the Service reads now
		}
	}
	reason, action, note := ReasonNodeAssigned, actionBecomeMaster,
		fmt.Sprintf("announcing %s from node %q with protocol VRRP (VRID %d, %s)", addrs, node, c.vrid, router)
	if c.to != vrrp.StateMaster {
		reason, action = ReasonNodeUnassigned, actionLeaveMaster
		note = fmt.Sprintf("node %q no longer announces %s: VRRP %s (VRID %d, %s)", node, addrs, c.to, c.vrid, router)
	}
	typ := corev1.EventTypeNormal
	if cf := c.conflict; cf != nil {
		action = actionDetectConflict
		if cf.start {
			reason, typ = ReasonVIPConflict, corev1.EventTypeWarning
			note = fmt.Sprintf("%s is answered by another host too (MAC %s) while node %q holds it as VRRP MASTER (VRID %d, %s): "+
				"two hosts hold it. vrrpd does not re-announce against it; look for a static address, another VIP manager, "+
				"or a vrrpd that does not hear this node's VRRP", cf.vip, cf.mac, node, c.vrid, c.instance)
		} else {
			reason = ReasonVIPConflictResolved
			note = fmt.Sprintf("%s is no longer answered by the other host (MAC %s); node %q holds it alone (VRID %d, %s)",
				cf.vip, cf.mac, node, c.vrid, c.instance)
		}
	}
	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name + "." + hex.EncodeToString(suffix), Namespace: s.Namespace},
		EventTime:  metav1.NewMicroTime(c.at),
		Regarding: corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: s.Namespace, Name: s.Name,
			UID: s.UID, ResourceVersion: s.ResourceVersion},
		Reason:              reason,
		Action:              action,
		Note:                note,
		Type:                typ,
		ReportingController: reportingController,
		ReportingInstance:   reportingController + "-" + node,
	}
}
