package daemon

import (
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Reading advertisements while busy (issue 31).
//
// A takeover, step-down or reload of thousands of addresses keeps the loop or the timer
// thread busy, with d.mu held, for up to a second (2,000 IPv6 adds; holdChunk). The
// advertisements of the other routers' live masters meanwhile wait unread, and when the
// work ends every backup router of this node finds its Master_Down_Timer overdue.
// deferTakeover gives the readers takeoverGrace to catch up, which a loaded host does not
// always meet: issue 31's failover lab saw a backup busy 770 ms adding one dead node's
// addresses take over two routers of a live master, two holders for their addresses.
//
// So between the chunks of a long add or remove (advertsWhileBusy) the busy side reads
// what the readers have handed over, the batch the loop took and parked while it waited
// for the lock included (parkBatch), and handles it there and then. A backup only re-arms
// or stops its timer on an advertisement (RFC 5798 §6.4.2). A master may step down: if it
// is the router whose addresses are being added, the add stops (holdChunked) and what it
// added is released with the rest, and whatever its action list still held, or the
// pending actions of a takeover in the same wake-up, are dropped as stale (instance.acted):
// a host that took over a router by mistake gives it back after a chunk, not after its
// thousand addresses. Only a reload does not step a master down between its chunks: it
// reconfigures instances one by one, with each one's state half applied while it adds.
// There a packet for a router not in Backup is copied and handled when the reload ends
// (endWake), in arrival order.

// maxDeferred bounds the packets kept for after the busy work. Past it the busy side
// stops reading; the rest waits in the readers and sockets, as it did before.
const maxDeferred = 1024

// deferredPacket is a packet read during a reload, for a router not in Backup.
type deferredPacket struct {
	c   *conn
	tc  socket // the socket it was read from; stale after a reopen
	pkt transport.Packet
}

// parkBatch offers b, which the loop took from a reader, to whoever holds d.mu while the
// loop waits for it: the reader has one batch per socket and reads nothing more until
// this one is handled. takeParked, under d.mu, reports whether b is still the loop's to
// handle.
func (d *Daemon) parkBatch(b *batch) { d.parked.Store(b) }

// takeParked takes back the loop's parked batch b, false when a busy reader (under d.mu)
// handled it meanwhile.
func (d *Daemon) takeParked(b *batch) bool { return d.parked.CompareAndSwap(b, nil) }

// nextBatch returns a batch that is read and not handled, without waiting: the loop's
// parked one first, then the readers' queue.
func (d *Daemon) nextBatch() (*batch, bool) {
	if b := d.parked.Swap(nil); b != nil {
		return b, true
	}
	select {
	case b := <-d.batches:
		return b, true
	default:
		return nil, false
	}
}

// doneWith hands a batch back to its reader.
func (d *Daemon) doneWith(b *batch) {
	d.unhandled.Add(-1)
	b.free <- b // never blocks: the reader waits for this one batch
}

// readWhileBusy handles, from within slow VIP work under d.mu, the batches read
// meanwhile (see above). Not nested: the VIP work a packet handled here starts reads
// nothing more.
func (d *Daemon) readWhileBusy() {
	if d.busyReading || d.wake.now.IsZero() {
		return
	}
	d.busyReading = true
	// handlePacket's scratch may be in use further up the stack (a master stepping down
	// in a batch of the loop's).
	d.acts, d.busyActs = d.busyActs, d.acts
	d.adv, d.busyAdv = d.busyAdv, d.adv
	defer func() {
		d.acts, d.busyActs = d.busyActs, d.acts
		d.adv, d.busyAdv = d.busyAdv, d.adv
		d.busyReading = false
	}()
	for b := d.current; b != nil && !d.reloading && d.currentNext < b.n && b.tc == b.conn.tc; {
		// The rest of the batch the loop is handling (handleBatch) first: it arrived
		// before anything still to be read.
		p := &b.pkts[d.currentNext]
		d.currentNext++
		if d.handlePacket(b.conn, p, arrivedAt(p, d.wakeNow())) {
			d.advertsBetween(d.wake.now, d.wake.woke)
		}
		d.dirty = true
	}
	for len(d.deferred) < maxDeferred {
		b, ok := d.nextBatch()
		if !ok {
			return
		}
		d.handleBusyBatch(b)
		d.doneWith(b)
	}
}

// handleBusyBatch is handleBatch while busy; during a reload only backups' packets are
// handled, the others deferred.
func (d *Daemon) handleBusyBatch(b *batch) {
	c := b.conn
	if b.tc != c.tc {
		return // read from a socket closed since
	}
	now := d.wakeNow()
	d.lastBatch = now
	for i := 0; i < b.n; i++ {
		p := &b.pkts[i]
		if d.reloading && !d.backupsPacket(c, p) {
			q := *p
			q.Payload = append([]byte(nil), p.Payload...) // p's points into the reader's buffer
			d.deferred = append(d.deferred, deferredPacket{c: c, tc: b.tc, pkt: q})
			continue
		}
		if d.handlePacket(c, p, arrivedAt(p, now)) {
			d.advertsBetween(d.wake.now, d.wake.woke)
		}
	}
	d.dirty = true
}

// backupsPacket reports whether p can be handled while busy: it names no router of ours
// (counted and dropped), or one in Backup.
func (d *Daemon) backupsPacket(c *conn, p *transport.Packet) bool {
	_, vrid, ok := vrrp.ParseHeader(p.Payload)
	if !ok {
		return true
	}
	in := c.byVRID[vrid]
	return in == nil || in.sm == nil || in.sm.State() == vrrp.StateBackup
}

// wakeNow is the current wake-up's clock now: its now plus what passed since.
func (d *Daemon) wakeNow() time.Time { return d.wake.now.Add(time.Since(d.wake.woke)) }

// endWake ends a wake-up (fireTimers, handleBatch, reload): the packets a reload deferred
// are handled, in order, then the clock is cleared.
func (d *Daemon) endWake() {
	for i := 0; i < len(d.deferred); i++ {
		dp := d.deferred[i]
		d.deferred[i] = deferredPacket{}
		if dp.tc != dp.c.tc {
			continue // the socket was reopened since
		}
		now := d.wakeNow()
		if d.handlePacket(dp.c, &dp.pkt, arrivedAt(&dp.pkt, now)) {
			d.advertsBetween(d.wake.now, d.wake.woke)
		}
	}
	d.deferred = d.deferred[:0]
	d.wake.now, d.wake.woke = time.Time{}, time.Time{}
}
