package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// failoverBound is issue 31's bound: every address of a failed host held by another
// within 2 s of the failure.
const failoverBound = 2 * time.Second

// TestFailoverAtScale is issue 31's "failover at scale": three vrrpd in Kubernetes mode, a
// group with routerSharing: Shared and 100 ms adverts, 2,000 Services with one address each.
// Once every address is held by exactly one host, the host holding the most (about 700)
// dies. Every one of its addresses must be held by another host within 2 s, no address may
// be on two hosts, and a client's pings to a sample of them (and to the first and the last
// to move) must be answered again.
//
// "The host dies" is both halves of a powered-off node: its switch port goes down (the
// lab's bridge end of its veth, so no frame of it reaches anyone, and the addresses left in
// its kernel answer nobody) and its vrrpd gets SIGKILL (it runs nothing more, releases
// nothing, says nothing). A SIGKILL alone would be a crash of vrrpd on a live node, whose
// kernel keeps the addresses and answers ARP/NDP for them: another test's case (the crash
// record). From the kill on, the dead host's addresses are not counted as held.
//
// Measured: for every address, the time from the kill to the first netlink sample (every
// 20 ms, read on all hosts) that shows it on a survivor; for the pinged ones, the time to
// the first echo reply; and the neighbour advertisements on the client's wire (count,
// first and last, rate).
//
// Part of make test (about 80 s), as the movement labs are (movescale_test.go).
func TestFailoverAtScale(t *testing.T) {
	names := []string{"f1", "f2", "f3"}
	l := newScaleLab(t, v1alpha1.RouterSharingShared, 3, names...)
	hosts := l.hostList(names...)
	smp := startHolderSampler(t, 20*time.Millisecond, hosts, scaleAll())
	daemons := map[string]*vrrpd{}
	for _, n := range names {
		daemons[n] = l.startDaemon(t, n)
	}
	plan := l.grow(t, smp, names, scaleServices, scaleBatch, allListed)
	vips := l.vipList()
	t.Logf("the status lists %d addresses in %d routers", len(plan.router), plan.routers)
	smp.waitSettled(t, time.Minute, 3*time.Second, "every address on its top node", plan.master)
	held, _ := smp.holders()
	count := map[string][]netip.Addr{}
	for _, v := range vips {
		count[held[v][0]] = append(count[held[v][0]], v)
	}
	victim := names[0]
	for _, n := range names {
		t.Logf("%s holds %d addresses (%.1f %%)", n, len(count[n]), 100*float64(len(count[n]))/float64(len(vips)))
		if len(count[n]) > len(count[victim]) {
			victim = n
		}
	}
	lost := count[victim]
	lostSet := map[netip.Addr]bool{}
	for _, v := range lost {
		lostSet[v] = true
	}

	// The client talks to a sample of the victim's addresses before it dies, so its
	// neighbour entries point at the victim, as a real client's would: 50 spread over
	// its routers (by router, then address).
	byRouter := slices.Clone(lost)
	sort.Slice(byRouter, func(i, j int) bool {
		a, b := byRouter[i], byRouter[j]
		if plan.router[a] != plan.router[b] {
			return plan.router[a] < plan.router[b]
		}
		return a.Less(b)
	})
	var sample []netip.Addr
	for i := range 50 {
		sample = append(sample, byRouter[i*len(byRouter)/50])
	}
	capture := captureAnnouncements(t, l.client)
	png := startPinger6(t, l.client, 20*time.Millisecond)
	png.add(sample...)
	vrrpdtest.WaitFor(t, 30*time.Second, "the client's pings to the sample answered", func() bool {
		for _, st := range png.snapshot() {
			if st.answered < 5 {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Second) // a baseline with no failure

	// The kill: the switch port first (one netlink request, prepared beforehand, so the
	// instant is sharp), then the process.
	port := switchPort(t, l.lab, l.hosts[victim])
	smp.ignore(victim)
	kill := time.Now()
	png.setMark(kill)
	if err := port.down(); err != nil {
		t.Fatal(err)
	}
	daemons[victim].MustSignal(t, syscall.SIGKILL)
	killed := time.Now()

	// The first address to move joins the pinged ones as soon as the sampler sees it, the
	// last once every address has moved.
	survivors := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == victim })
	var first netip.Addr
	var firstAt time.Time
	vrrpdtest.WaitFor(t, 30*time.Second, "every address of "+victim+" held by a survivor", func() bool {
		left := 0
		for _, v := range lost {
			at := smp.heldAfter(v, kill)
			if at.IsZero() {
				left++
				continue
			}
			if !first.IsValid() || at.Before(firstAt) {
				png.add(v)
				first, firstAt = v, at
			}
		}
		return left == 0
	})
	var last netip.Addr
	var lastAt time.Time
	var moved []time.Duration
	for _, v := range lost {
		at := smp.heldAfter(v, kill)
		moved = append(moved, at.Sub(kill))
		if at.After(lastAt) {
			last, lastAt = v, at
		}
	}
	png.add(last)
	vrrpdtest.WaitFor(t, 30*time.Second, "the client's pings answered again", func() bool {
		for _, st := range png.snapshot() {
			if st.firstAfterMark.IsZero() {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Second) // doubles after the move, if any
	end := time.Now()
	smp.stop()
	rec := smp.record(kill, end)
	pings := png.snapshot()
	png.stop()

	// The record.
	t.Logf("killed %s (switch port down, vrrpd SIGKILLed) holding %d of %d addresses; the kill took %v",
		victim, len(lost), len(vips), killed.Sub(kill).Round(time.Microsecond))
	t.Logf("address samples from the kill on: %d rounds, at most %v apart (the run's longest round %v); %d host reads interrupted five times (the previous round's view kept)",
		rec.rounds, rec.gapMax.Round(time.Millisecond), rec.readMax.Round(time.Millisecond), rec.unread)
	t.Logf("held by a survivor after the kill (sampled): first %v (%v), last %v (%v); all %s",
		firstAt.Sub(kill).Round(time.Millisecond), first, lastAt.Sub(kill).Round(time.Millisecond), last, durations(moved))
	// Where the time goes: per router of the victim, its new master's priority and
	// Master_Down_Interval, and when its addresses appeared.
	type routerMove struct {
		n               int
		newMaster       string
		prio            uint8
		firstAt, lastAt time.Duration
	}
	routers := map[string]*routerMove{}
	after, _ := smp.holders()
	for _, v := range lost {
		key := plan.router[v]
		r := routers[key]
		if r == nil {
			r = &routerMove{firstAt: time.Hour}
			if hs := after[v]; len(hs) == 1 {
				r.newMaster = hs[0]
				r.prio = plan.prio[key][hs[0]]
			}
			routers[key] = r
		}
		d := smp.heldAfter(v, kill).Sub(kill)
		r.n++
		r.firstAt, r.lastAt = min(r.firstAt, d), max(r.lastAt, d)
	}
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range routers {
			if !yield(k) {
				return
			}
		}
	}) {
		r := routers[key]
		mdi := masterDown(r.prio)
		t.Logf("router %s: %d addresses to %s (priority %d, Master_Down_Interval %v): held after %v to %v",
			key, r.n, r.newMaster, r.prio, mdi.Round(time.Millisecond), r.firstAt.Round(time.Millisecond), r.lastAt.Round(time.Millisecond))
	}

	var answered []time.Duration
	for _, v := range append(slices.Clone(sample), first, last) {
		st := pings[v]
		if st.firstAfterMark.IsZero() {
			continue
		}
		answered = append(answered, st.firstAfterMark.Sub(kill))
	}
	t.Logf("echo replies after the kill, the 50 sampled addresses and the first and the last to move: %s", durations(answered))
	t.Logf("first address to move %v: answered %v after the kill (pinged from when it was seen held); last %v: answered %v after (pinged from when it was seen held)",
		first, pings[first].firstAfterMark.Sub(kill).Round(time.Millisecond), last, pings[last].firstAfterMark.Sub(kill).Round(time.Millisecond))

	nas := capture.since(lostSet, kill)
	perAddr := map[netip.Addr]int{}
	var firstNA []time.Duration
	for _, a := range nas {
		if perAddr[a.addr] == 0 {
			firstNA = append(firstNA, a.at.Sub(kill))
		}
		perAddr[a.addr]++
	}
	if len(nas) > 0 {
		span := nas[len(nas)-1].at.Sub(nas[0].at)
		peak := 0
		for i, j := 0, 0; j < len(nas); j++ {
			for nas[j].at.Sub(nas[i].at) >= 100*time.Millisecond {
				i++
			}
			peak = max(peak, j-i+1)
		}
		reps := map[int]int{}
		for _, n := range perAddr {
			reps[n]++
		}
		t.Logf("neighbour advertisements on the client's wire for %s's addresses: %d for %d addresses (per address: %v), first %v and last %v after the kill; %.0f/s over those %v, at most %d in 100 ms",
			victim, len(nas), len(perAddr), reps, nas[0].at.Sub(kill).Round(time.Millisecond), nas[len(nas)-1].at.Sub(kill).Round(time.Millisecond),
			float64(len(nas))/max(span.Seconds(), 0.001), span.Round(time.Millisecond), peak)
		t.Logf("first neighbour advertisement per address after the kill: %s", durations(firstNA))
	}

	// The assertions.
	for _, err := range rec.errs {
		t.Errorf("sampler: %v", err)
	}
	if rec.gapMax > 100*time.Millisecond {
		t.Logf("the sampler fell behind: %v between two rounds at worst", rec.gapMax)
	}
	for i, d := range rec.doubles {
		if i == 20 {
			t.Errorf("... %d samples of an address on two hosts in all", len(rec.doubles))
			break
		}
		t.Errorf("two holders: %s", d)
	}
	late := 0
	for i, v := range lost {
		if moved[i] > failoverBound {
			late++
			if late <= 10 {
				t.Errorf("%v held by a survivor %v after the kill, more than %v", v, moved[i].Round(time.Millisecond), failoverBound)
			}
		}
	}
	if late > 0 {
		t.Errorf("%d of %d addresses held by a survivor later than %v after the kill", late, len(lost), failoverBound)
	}
	for _, v := range lost {
		if hs := after[v]; len(hs) != 1 || !slices.Contains(survivors, hs[0]) {
			t.Errorf("%v held by %v at the end, want one of %v", v, hs, survivors)
		}
	}
	for v, st := range pings {
		if st.firstAfterMark.IsZero() {
			t.Errorf("%v never answered the client's ping after the kill", v)
		}
	}
	if len(perAddr) != len(lost) {
		t.Errorf("neighbour advertisements seen for %d of the %d addresses that moved", len(perAddr), len(lost))
	}
}

// masterDown is a VRRPv3 backup's Master_Down_Interval at priority prio
// with the lab's adverts.
func masterDown(prio uint8) time.Duration {
	return vrrp.Version3.MasterDownInterval(prio, scaleAdvert)
}

// portSwitch is a lab host's switch port (its veth's bridge end), to take down in one
// netlink request: netlab.Host.Cut runs ip(8), a process start that a loaded machine
// can delay by tens of milliseconds, which would blur the instant of the failure.
type portSwitch struct{ down func() error }

func switchPort(t *testing.T, lab *netlab.Lab, h *netlab.Host) portSwitch {
	t.Helper()
	ns, err := netns.GetFromName(lab.SwitchNetns)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	nh, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nh.Close)
	link, err := nh.LinkByName(h.SwitchEnd)
	if err != nil {
		t.Fatalf("%s's switch port %s: %v", h.Name, h.SwitchEnd, err)
	}
	return portSwitch{down: func() error {
		if err := nh.LinkSetDown(link); err != nil {
			return fmt.Errorf("%s's switch port down: %w", h.Name, err)
		}
		return nil
	}}
}
