package daemon

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestTakeoverReadsAdvertsBetweenChunks (issue 31's failover lab: a backup busy 770 ms
// adding a dead node's addresses took over two routers of a live master): while VI_1
// takes over with hundreds of addresses, holdChunk at a time, the advertisements that
// arrive meanwhile are read between the chunks, the batch the loop parked while it waited
// for the lock included. VI_2's live master's advert re-arms VI_2's Master_Down_Timer,
// which would otherwise run out during the add, so VI_2 stays BACKUP; a better master's
// advert for VI_3, master here, is kept until the add is done and VI_3 then steps down,
// never between two chunks of another router's add.
func TestTakeoverReadsAdvertsBetweenChunks(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	busy := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	const n = 300
	for i := range n {
		busy.ExcludedVIPs = append(busy.ExcludedVIPs, config.VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf("10.99.%d.%d/32", 1+i/250, 1+i%250)), Dev: "eth0"})
	}
	startDaemon(t, d, busy, testInstance("VI_2", 2, 100, "10.99.0.101/24"), testInstance("VI_3", 3, 200, "10.99.0.102/24"))
	vi2 := d.byName["VI_2"]
	conn := vi2.conn
	// VI_2's master was last heard 50 ms after t0: its Master_Down_Timer runs out 50 ms
	// into VI_1's takeover, whose adds (38 chunks × 4 ms) last longer than that.
	d.handleBatch(&batch{conn: conn, tc: conn.tc, pkts: []transport.Packet{peerAdvert(t, 2, 150, "10.99.0.101/24")}, n: 1}, t0.Add(50*time.Millisecond))
	advance(d, takeover(100).Add(-time.Millisecond))
	if s := publishedStates(d); s != "VI_1=BACKUP VI_2=BACKUP VI_3=MASTER" {
		t.Fatalf("before VI_1's takeover: %s", s)
	}
	staleDeadline := vi2.sm.Deadline()

	h.events = nil
	h.addDelay = 4 * time.Millisecond
	s := h.socks[0]
	var parked *batch
	holds := 0
	h.onHold = func() {
		if holds++; holds != 2 { // after the first chunk of the excluded VIPs
			return
		}
		s.in <- []transport.Packet{peerAdvert(t, 2, 150, "10.99.0.101/24"), peerAdvert(t, 3, 250, "10.99.0.102/24")}
		parked = recvBatch(t, d)
		d.parkBatch(parked) // as the loop does while it waits for the lock
		h.events = append(h.events, "adverts arrived")
	}
	advance(d, takeover(100))
	h.onHold = nil
	if parked == nil {
		t.Fatal("VI_1's takeover made fewer than two Holds")
	}
	if d.takeParked(parked) {
		t.Error("the parked batch was still the loop's after the takeover: nobody read it between the chunks")
	}
	if u := d.unhandled.Load(); u != 0 {
		t.Errorf("%d batches counted unhandled after the takeover", u)
	}
	if !vi2.sm.Deadline().After(staleDeadline) {
		t.Errorf("VI_2's Master_Down_Timer still at %v after t0, not re-armed by the advert read between the chunks", vi2.sm.Deadline().Sub(t0))
	}
	if got := publishedStates(d); got != "VI_1=MASTER VI_2=BACKUP VI_3=BACKUP" {
		t.Errorf("after VI_1's takeover: %s, want VI_3 stepped down to the better master", got)
	}
	arrived := slices.Index(h.events, "adverts arrived")
	lastAdd, stepDown := -1, -1
	for i, e := range h.events {
		if strings.HasPrefix(e, "add ") && strings.Contains(e, "/32") {
			lastAdd = i
		}
		if e == "remove 10.99.0.102/24 dev eth0" {
			stepDown = i
		}
	}
	if arrived < 0 || lastAdd < arrived || stepDown < lastAdd {
		t.Errorf("events: adverts arrived at %d, VI_1's last add at %d, VI_3's VIP removed at %d; want the removal after the last add:\n%s",
			arrived, lastAdd, stepDown, strings.Join(h.events, "\n"))
	}
	// Past the stale deadline VI_2 still follows its master.
	advance(d, staleDeadline.Add(10*time.Millisecond))
	if in := d.byName["VI_2"]; in.sm.State() != vrrp.StateBackup {
		t.Errorf("VI_2 is %v after its stale deadline: it took over from a live master", in.sm.State())
	}
}

// TestParkedBatchIsTheLoopsWhenNobodyReads: a batch the loop parked while waiting for the
// lock is its own to handle when no busy work took it meanwhile, and only once.
func TestParkedBatchIsTheLoopsWhenNobodyReads(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	h.socks[0].in <- []transport.Packet{peerAdvert(t, 1, 150, "10.99.0.100/24")}
	b := recvBatch(t, d)
	d.parkBatch(b)
	if !d.takeParked(b) {
		t.Fatal("the loop could not take back its parked batch")
	}
	if d.takeParked(b) {
		t.Error("the parked batch was taken back twice")
	}
	if got, ok := d.nextBatch(); ok {
		t.Errorf("a busy reader would get batch %p after the loop took its own back", got)
	}
}
