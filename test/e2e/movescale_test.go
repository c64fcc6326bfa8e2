package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/placement"
	"github.com/vrrp-operator/vrrp-operator/internal/sharing"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// Issue 31's movement assertions: not one 20 ms sample with an address on two hosts, and
// no address without a holder for longer than one failover, through a node's join, a
// node's leave and the switch of a per-Service group to shared routers. One failover is
// measured in the same run where the lab can (TestMovementAtScale ends with one: the time
// its last address took to be held again, which at this scale is mostly the survivors'
// netlink adds: 0.9-1.4 s in the lab), else oneFailover.

// oneFailover is the Master_Down_Interval of a backup at the lowest priority with 100 ms
// adverts: a failover's timer alone, the bound when no failover was measured in the run,
// and a figure logged beside every movement.
var oneFailover = masterDown(1)

// TestMovementAtScale is issue 31's "movement": a group with routerSharing: Shared and 2,000
// Services on three vrrpd in Kubernetes mode; a fourth node joins, then one of the first
// three leaves. Each time the Services whose master changes (the hosts' addresses, sampled
// every 20 ms) must be exactly those whose rendezvous master changes (placement.Master
// over the old and the new nodes: the ideal of rendezvous hashing), and every address must
// end on its Service's rendezvous top. No sample may show an address on two hosts, and no
// address may go without a holder longer than the failover the test ends with.
//
// A join: the Node gets the group's label, and its vrrpd starts at once (the DaemonSet's
// pod). A leave: the Node loses the label (the node leaves the group's selector), and once
// the operator has replanned without it its vrrpd gets SIGTERM (the DaemonSet deletes the
// pod); until then it is on the wire and its addresses count.
func TestMovementAtScale(t *testing.T) {
	names := []string{"m1", "m2", "m3", "m4"}
	l := newScaleLab(t, v1alpha1.RouterSharingShared, 3, names...)
	three := names[:3]
	smp := startHolderSampler(t, 20*time.Millisecond, l.hostList(names...), scaleAll())
	daemons := map[string]*vrrpd{}
	for _, n := range three {
		daemons[n] = l.startDaemon(t, n)
	}
	l.grow(t, smp, three, scaleServices, scaleBatch, allListed)

	joined := []string{"m1", "m2", "m3", "m4"}
	lab := t // the Node and the daemon outlive the subtest
	var moves []movement
	ok := t.Run("join", func(t *testing.T) {
		before, _ := smp.holders()
		from := time.Now()
		labNodes(lab, scaleLabel, l.hosts["m4"])
		daemons["m4"] = l.startDaemon(lab, "m4")
		after := l.waitPlan(t, 2*time.Minute, 12, joined...)
		moves = append(moves, l.checkMovement(t, smp, "m4 joining", before, after, three, joined, from))
	})
	if !ok {
		return
	}
	left := []string{"m2", "m3", "m4"}
	ok = t.Run("leave", func(t *testing.T) {
		before, _ := smp.holders()
		from := time.Now()
		var n corev1.Node
		if err := env.Client.Get(context.Background(), types.NamespacedName{Name: "m1"}, &n); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(n.DeepCopy())
		delete(n.Labels, scaleLabel)
		if err := env.Client.Patch(context.Background(), &n, patch); err != nil {
			t.Fatal(err)
		}
		after := l.waitPlan(t, 2*time.Minute, 6, left...)
		daemons["m1"].MustSignal(t, syscall.SIGTERM)
		moves = append(moves, l.checkMovement(t, smp, "m1 leaving", before, after, joined, left, from))
	})
	if !ok {
		return
	}
	// One failover at the same scale, in the same lab: the survivor holding the most
	// addresses is cut off and killed, and its last address to be held again by another
	// is the bound of "no address unanswered for longer than one failover".
	t.Run("failover", func(t *testing.T) {
		failover := l.killBiggestHolder(t, smp, daemons, left)
		for _, m := range moves {
			t.Logf("%s: %d samples with two holders; longest without a holder %v, one failover here %v (its timer alone %v)",
				m.event, m.doubles, m.longest.Round(time.Millisecond), failover.Round(time.Millisecond), oneFailover.Round(time.Millisecond))
			if m.doubles > 0 {
				t.Errorf("%s: %d samples with an address on two hosts", m.event, m.doubles)
			}
			if m.longest > failover {
				t.Errorf("%s: an address without a holder for %v, longer than the failover's %v", m.event, m.longest, failover)
			}
		}
	})
}

// movement is what checkMovementOf saw of one event: the samples with an address on two
// hosts and the longest time an address had no holder.
type movement struct {
	event   string
	doubles int
	longest time.Duration
}

// killBiggestHolder cuts the lab host among names that holds the most addresses off the
// switch, SIGKILLs its vrrpd, and returns how long after that the last of its addresses
// was held by another host.
func (l *scaleLab) killBiggestHolder(t *testing.T, smp *holderSampler, daemons map[string]*vrrpd, names []string) time.Duration {
	t.Helper()
	held, _ := smp.holders()
	count := map[string][]netip.Addr{}
	for v, hs := range held {
		if len(hs) == 1 {
			count[hs[0]] = append(count[hs[0]], v)
		}
	}
	victim := names[0]
	for _, n := range names {
		if len(count[n]) > len(count[victim]) {
			victim = n
		}
	}
	lost := count[victim]
	port := switchPort(t, l.lab, l.hosts[victim])
	smp.ignore(victim)
	kill := time.Now()
	if err := port.down(); err != nil {
		t.Fatal(err)
	}
	daemons[victim].MustSignal(t, syscall.SIGKILL)
	vrrpdtest.WaitFor(t, 30*time.Second, "every address of "+victim+" held by a survivor", func() bool {
		for _, v := range lost {
			if smp.heldAfter(v, kill).IsZero() {
				return false
			}
		}
		return true
	})
	var last time.Duration
	for _, v := range lost {
		last = max(last, smp.heldAfter(v, kill).Sub(kill))
	}
	t.Logf("failover: %s cut off and killed holding %d addresses; the last held by a survivor %v after", victim, len(lost), last.Round(time.Millisecond))
	return last
}

// TestSwitchToSharedAtScale is issue 31's switch of an existing per-Service cluster to
// shared routers: a group of 2,000 Services with routerSharing: PerService serves 255 of
// them (one router ID each; the rest get nothing, as before sharing), on three vrrpd. Then
// spec.routerSharing becomes Shared: the 255 served addresses must keep their master (the
// per-Service instance's top node is the Service's rendezvous top, and so its shared
// router's: the ideal is that none moves), and the other 1,745 must be served too, each on
// its rendezvous top. None of the 255 may be on two hosts in any sample, or without a
// holder longer than one failover's timer (oneFailover: nothing moves, so nothing is added
// in bulk that a measured failover would account for).
func TestSwitchToSharedAtScale(t *testing.T) {
	names := []string{"w1", "w2", "w3"}
	l := newScaleLab(t, v1alpha1.RouterSharingPerService, 3, names...)
	smp := startHolderSampler(t, 20*time.Millisecond, l.hostList(names...), scaleAll())
	for _, n := range names {
		l.startDaemon(t, n)
	}
	// 255 instances, each its own router ID; the Services past them get nothing.
	per := l.grow(t, smp, names, scaleServices, scaleBatch, func(p scalePlan) bool {
		return p.routers == min(255, len(l.vips)) && len(p.router) == p.routers && p.missing == len(l.vips)-p.routers
	})
	var served []netip.Addr
	for v := range per.router {
		served = append(served, v)
	}
	slices.SortFunc(served, netip.Addr.Compare)

	before, _ := smp.holders()
	from := time.Now()
	var g v1alpha1.KeepalivedGroup
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: l.ns, Name: groupName}, &g); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(g.DeepCopy())
	g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	if err := env.Client.Patch(context.Background(), &g, patch); err != nil {
		t.Fatal(err)
	}
	after := l.waitPlan(t, 2*time.Minute, 6, names...)
	m := l.checkMovementOf(t, smp, "the switch to Shared", served, before, after, names, names, from)
	if m.doubles > 0 {
		t.Errorf("%s: %d samples with an address on two hosts", m.event, m.doubles)
	}
	if m.longest > oneFailover {
		t.Errorf("%s: an address without a holder for %v, longer than one failover (%v)", m.event, m.longest, oneFailover)
	}
}

// vipList is the Services' addresses in key order.
func (l *scaleLab) vipList() []netip.Addr {
	out := make([]netip.Addr, 0, len(l.keys))
	for _, k := range l.keys {
		out = append(out, l.vips[k])
	}
	return out
}

// checkMovement is checkMovementOf for every Service.
func (l *scaleLab) checkMovement(t *testing.T, smp *holderSampler, event string, before map[netip.Addr][]string, after scalePlan, oldNodes, newNodes []string, from time.Time) movement {
	t.Helper()
	return l.checkMovementOf(t, smp, event, l.vipList(), before, after, oldNodes, newNodes, from)
}

// checkMovementOf waits until every Service's address is on the master the new plan gives
// it, for 3 s, and then checks the movement of the addresses watched (those held before):
// the Services whose master changed must be exactly those whose rendezvous master changed
// from oldNodes to newNodes, and each plan master must be the rendezvous top. It logs the
// doubles and the gaps since from, and returns them for the caller to hold against one
// failover.
func (l *scaleLab) checkMovementOf(t *testing.T, smp *holderSampler, event string, watched []netip.Addr, before map[netip.Addr][]string, after scalePlan, oldNodes, newNodes []string, from time.Time) movement {
	t.Helper()
	key := map[netip.Addr]string{}
	for k, v := range l.vips {
		key[v] = k
	}
	for v, m := range after.master {
		if top := placement.Master(key[v], newNodes); m != top {
			t.Fatalf("%s: the plan puts %v (%s) on %s, its rendezvous top is %s", event, v, key[v], m, top)
		}
	}
	smp.waitSettled(t, 3*time.Minute, 3*time.Second, "every address on its new master after "+event, after.master)
	to := time.Now()
	settled, _ := smp.holders()

	moved, ideal := 0, 0
	var wrong []string
	for _, v := range watched {
		was := before[v]
		if len(was) != 1 {
			t.Fatalf("%s: %v held by %v before, want one host", event, v, was)
		}
		if settled[v][0] != was[0] {
			moved++
		}
		if placement.Master(key[v], oldNodes) != placement.Master(key[v], newNodes) {
			ideal++
			if settled[v][0] == was[0] {
				wrong = append(wrong, fmt.Sprintf("%v stayed on %s", v, was[0]))
			}
		} else if settled[v][0] != was[0] {
			wrong = append(wrong, fmt.Sprintf("%v moved from %s to %s", v, was[0], settled[v][0]))
		}
		if !strings.HasPrefix(after.router[v], sharing.RouterKeyPrefix) {
			t.Errorf("%s: %v in instance %s, not a shared router", event, v, after.router[v])
		}
	}
	rec := smp.record(from, to)
	var gaps []time.Duration
	var worst netip.Addr
	for _, v := range watched {
		gaps = append(gaps, rec.unheld[v])
		if !worst.IsValid() || rec.unheld[v] > rec.unheld[worst] {
			worst = v
		}
	}
	long := 0
	for _, v := range watched {
		if rec.unheld[v] > oneFailover {
			long++
		}
	}
	t.Logf("%s: %d of %d Services changed master, rendezvous ideal %d; settled %v after the change (%d instances)",
		event, moved, len(watched), ideal, to.Add(-3*time.Second).Sub(from).Round(time.Millisecond), after.routers)
	t.Logf("%s: %d samples, at most %v apart (the run's longest round %v, %d host reads interrupted); %d samples of an address on two hosts; addresses without a holder, longest stretch each (sampled): %s; %d longer than one failover (%v), the longest %v (%s, held again at %s)",
		event, rec.rounds, rec.gapMax.Round(time.Millisecond), rec.readMax.Round(time.Millisecond), rec.unread, len(rec.doubles), durations(gaps),
		long, oneFailover.Round(time.Millisecond), rec.unheld[worst].Round(time.Millisecond), worst, rec.unheldEnd[worst].Format("15:04:05.000"))
	for i, d := range rec.doubles {
		if i == 20 {
			t.Logf("... %d more", len(rec.doubles)-20)
			break
		}
		t.Logf("%s: two holders: %s", event, d)
	}
	for _, err := range rec.errs {
		t.Errorf("sampler: %v", err)
	}
	if moved != ideal || len(wrong) > 0 {
		t.Errorf("%s: %d Services changed master, the rendezvous ideal is %d; %d differ from it, e.g. %v", event, moved, ideal, len(wrong), wrong[:min(len(wrong), 10)])
	}
	return movement{event: event, doubles: len(rec.doubles), longest: rec.unheld[worst]}
}
