package groupsource

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestRouterMembers: a shared router's members are the routerIDs entries valued with its
// VRID; a spreadvips member only while its address is in the router; per-Service
// instances (and their own entries) have none.
func TestRouterMembers(t *testing.T) {
	g := &v1alpha1.KeepalivedGroup{Status: v1alpha1.KeepalivedGroupStatus{
		Instances: []v1alpha1.Instance{
			{Key: "@default/n-a,n-b", VRID: 5, VIPs: []string{"10.99.0.1", "10.99.0.2", "fd00:99::1"}},
			{Key: "@default/n-b,n-a", VRID: 6, VIPs: []string{"10.99.0.3"}},
			{Key: "ns/local", VRID: 7, VIPs: []string{"10.99.0.4"}},
		},
		RouterIDs: map[string]int{
			"ns/a":            5,
			"ns/b/10.99.0.2":  5,
			"ns/b/10.99.0.3":  6,
			"ns/b/10.99.0.9":  5, // not in router 5: a stale or foreign entry
			"ns/c/fd00:99::1": 5,
			"ns/local":        7,
			"ns/gone":         9,
		},
	}}
	got := routerMembers(g)
	for _, ms := range got {
		slices.Sort(ms)
	}
	want := map[string][]string{
		"@default/n-a,n-b": {"ns/a", "ns/b/10.99.0.2", "ns/c/fd00:99::1"},
		"@default/n-b,n-a": {"ns/b/10.99.0.3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("routerMembers = %v, want %v", got, want)
	}
	if routerMembers(nil) != nil {
		t.Error("a group that does not exist has members")
	}
}

// TestMemberQueueNewestStateWins: a member's pending Event follows the router's newest
// state in its place in the queue; a flap back to the state the member last heard of
// cancels it; the queue holds one entry per member and router however often it flaps.
func TestMemberQueueNewestStateWins(t *testing.T) {
	var q memberQueue
	members := []string{"ns/a", "ns/b"}
	tr := func(from, to vrrp.State) change { return change{instance: "@r", from: from, to: to} }
	q.put(members, tr(vrrp.StateBackup, vrrp.StateMaster))
	q.put([]string{"ns/c"}, change{instance: "@s", from: vrrp.StateBackup, to: vrrp.StateMaster})
	for range 500 { // flapping: back to MASTER each time
		q.put(members, tr(vrrp.StateMaster, vrrp.StateBackup))
		q.put(members, tr(vrrp.StateBackup, vrrp.StateMaster))
	}
	if q.len() != 3 {
		t.Fatalf("%d pending after 1,001 changes of 2 members' router and one of another, want 3", q.len())
	}
	var got []string
	for c, ok := q.next(); ok; c, ok = q.next() {
		got = append(got, c.member+":"+c.from.String()+">"+c.to.String())
	}
	want := []string{"ns/a:BACKUP>MASTER", "ns/b:BACKUP>MASTER", "ns/c:BACKUP>MASTER"}
	if !slices.Equal(got, want) {
		t.Errorf("posted %v, want %v", got, want)
	}

	// Posted MASTER; then a flap that ends where it began posts nothing, one that ends
	// elsewhere posts the newest state once.
	q.put(members, tr(vrrp.StateMaster, vrrp.StateBackup))
	q.put(members, tr(vrrp.StateBackup, vrrp.StateMaster))
	if c, ok := q.next(); ok {
		t.Errorf("a flap back to the state the members had posts %+v", c)
	}
	q.put(members, tr(vrrp.StateMaster, vrrp.StateBackup))
	q.put(members, tr(vrrp.StateBackup, vrrp.StateMaster))
	q.put(members, tr(vrrp.StateMaster, vrrp.StateFault))
	got = got[:0]
	for c, ok := q.next(); ok; c, ok = q.next() {
		got = append(got, c.member+":"+c.from.String()+">"+c.to.String())
	}
	want = []string{"ns/a:MASTER>FAULT", "ns/b:MASTER>FAULT"}
	if !slices.Equal(got, want) {
		t.Errorf("posted %v, want %v", got, want)
	}
}

// TestSharedRouterEventsPaced: against a real API server, a shared router of 300 members
// that becomes master here posts one nodeAssigned Event on each member Service (its UID,
// its own VIP in the note), at most EventsPerSecond: no second holds more than that (one
// more for the bucket's first token, a few for a late wake-up), and the 300 take at
// least 2.99 s. A router that then flaps 1,000 times keeps at most one pending Event per
// member, and each member's last Event is the router's last state.
func TestSharedRouterEventsPaced(t *testing.T) {
	needAPI(t)
	ctx := context.Background()
	ns := newNamespace(t, "shared-events")
	const members = 300
	router := "@" + ns + "/n-a,n-b"
	g := &v1alpha1.KeepalivedGroup{Status: v1alpha1.KeepalivedGroupStatus{RouterIDs: map[string]int{}}}
	in := v1alpha1.Instance{Key: router, VRID: 9}
	var vips []netip.Prefix
	uids, ips := map[string]string{}, map[string]string{}
	for i := range members {
		name := fmt.Sprintf("svc-%03d", i)
		ip := fmt.Sprintf("fd00:99::%x", 0x100+i)
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			// Headless: the test API server's Service range has fewer than 300 IPs.
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{ip}},
		}
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		uids[name], ips[name] = string(s.UID), ip
		g.Status.RouterIDs[ns+"/"+name] = 9
		in.VIPs = append(in.VIPs, ip)
		vips = append(vips, netip.MustParsePrefix(ip+"/128"))
	}
	g.Status.Instances = []v1alpha1.Instance{in}

	rec, err := NewEventRecorder(testConfig, "node-a", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var posts []time.Time
	last := map[string]vrrp.State{}
	rec.posted = func(c change, at time.Time) {
		mu.Lock()
		posts = append(posts, at)
		last[c.member] = c.to
		mu.Unlock()
	}
	rec.SetGroup(g)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { rec.Run(rctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	rec.Observe(router+SuffixIPv6, vrrp.StateBackup, vrrp.StateMaster, 9, vips)
	var events eventsv1.EventList
	poll.Until(t, 60*time.Second, func() error {
		if err := k8s.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		if n := len(events.Items); n < members {
			return fmt.Errorf("%d of %d Events", n, members)
		}
		return nil
	})
	seen := map[string]bool{}
	for _, e := range events.Items {
		name := e.Regarding.Name
		ip := ips[name]
		if e.Reason != ReasonNodeAssigned || string(e.Regarding.UID) != uids[name] || seen[name] ||
			!strings.Contains(e.Note, ip+" from node") || !strings.Contains(e.Note, "VRID 9") || !strings.Contains(e.Note, router) {
			t.Errorf("Event %s: %s on %s (UID %s, seen %v): %q", e.Name, e.Reason, name, e.Regarding.UID, seen[name], e.Note)
		}
		seen[name] = true
	}
	if len(seen) != members {
		t.Errorf("%d Services got an Event, want %d", len(seen), members)
	}
	mu.Lock()
	first := slices.Clone(posts)
	mu.Unlock()
	span, peak := first[len(first)-1].Sub(first[0]), peakPerSecond(first)
	t.Logf("%d Events posted over %v (%.1f a second); at most %d in any second", len(first), span.Round(time.Millisecond),
		float64(len(first)-1)/span.Seconds(), peak)
	if min := time.Duration(len(first)-1) * time.Second / EventsPerSecond; span < min-50*time.Millisecond {
		t.Errorf("%d Events in %v, faster than %d a second allows (%v)", len(first), span, EventsPerSecond, min)
	}
	if peak > EventsPerSecond+5 {
		t.Errorf("%d Events in one second, want at most %d (+1 for the bucket, +4 for late wake-ups)", peak, EventsPerSecond)
	}

	// 1,000 flaps, ending MASTER.
	maxPending := 0
	for range 500 {
		rec.Observe(router+SuffixIPv6, vrrp.StateMaster, vrrp.StateBackup, 9, vips)
		rec.Observe(router+SuffixIPv6, vrrp.StateBackup, vrrp.StateMaster, 9, vips)
		maxPending = max(maxPending, rec.sharedPending())
	}
	if maxPending > members {
		t.Errorf("%d member Events pending while the router flapped, want at most %d", maxPending, members)
	}
	poll.Until(t, 60*time.Second, func() error {
		if n := rec.sharedPending(); n > 0 {
			return fmt.Errorf("%d member Events still pending", n)
		}
		return nil
	})
	time.Sleep(50 * time.Millisecond) // the last one's post
	mu.Lock()
	t.Logf("1,000 flaps: at most %d pending, %d more Events posted", maxPending, len(posts)-len(first))
	for m, s := range last {
		if s != vrrp.StateMaster {
			t.Errorf("%s's last Event says %v, want MASTER (the router's last state)", m, s)
		}
	}
	mark := len(posts)
	mu.Unlock()

	// The pace binds: at 20 a second, which this API server outruns (it takes 50 or
	// more a second on the loaded 2-core test machine), 100 members of a second router
	// take 4.95 s at least.
	rec.limit.SetLimit(20)
	router2 := "@" + ns + "/n-b,n-a"
	g2 := g.DeepCopy()
	g2.Status.Instances = append(g2.Status.Instances, v1alpha1.Instance{Key: router2, VRID: 10, VIPs: in.VIPs[:100]})
	for i := range 100 {
		g2.Status.RouterIDs[fmt.Sprintf("%s/svc-%03d", ns, i)] = 10
	}
	rec.SetGroup(g2)
	rec.Observe(router2, vrrp.StateBackup, vrrp.StateMaster, 10, vips[:100])
	poll.Until(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if n := len(posts) - mark; n < 100 {
			return fmt.Errorf("%d of 100 Events at 20 a second", n)
		}
		return nil
	})
	mu.Lock()
	slow := slices.Clone(posts[mark:])
	mu.Unlock()
	span, peak = slow[len(slow)-1].Sub(slow[0]), peakPerSecond(slow)
	t.Logf("at 20 a second: %d Events over %v, at most %d in any second", len(slow), span.Round(time.Millisecond), peak)
	if span < 99*time.Second/20-50*time.Millisecond || peak > 20+3 {
		t.Errorf("at 20 a second: %d Events over %v, at most %d in one second; want at least 4.95 s and at most 21 (+2 for late wake-ups)",
			len(slow), span, peak)
	}
}

// peakPerSecond is the most of ts (sorted) within any one second.
func peakPerSecond(ts []time.Time) int {
	peak, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= time.Second {
			j++
		}
		peak = max(peak, i-j+1)
	}
	return peak
}

// TestMemberVIPs: a member's Event names its own addresses of the router: a spreadvips
// member's from its key, a Service's from its ingress and external IPs.
func TestMemberVIPs(t *testing.T) {
	router := []netip.Prefix{netip.MustParsePrefix("10.99.0.1/32"), netip.MustParsePrefix("10.99.0.2/32"), netip.MustParsePrefix("fd00:99::1/128")}
	s := &corev1.Service{
		Spec:   corev1.ServiceSpec{ExternalIPs: []string{"10.99.0.2", "10.99.0.9"}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "fd00:99::1"}, {Hostname: "x"}}}},
	}
	for _, c := range []struct {
		member string
		want   string
	}{
		{"ns/web", "[fd00:99::1/128 10.99.0.2/32]"},
		{"ns/web/10.99.0.1", "[10.99.0.1/32]"},
		{"ns/web/10.99.0.9", "[]"},
	} {
		if got := fmt.Sprint(memberVIPs(c.member, s, router)); got != c.want {
			t.Errorf("memberVIPs(%s) = %s, want %s", c.member, got, c.want)
		}
	}
}
