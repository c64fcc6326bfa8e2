package daemon

import (
	"net/netip"

	"github.com/vrrp-operator/vrrp-operator/internal/transport"
)

// batchSocket is a socket that sends many messages with one system call
// (*transport.Conn): a master of many virtual routers whose advertisements fall due in one
// wake-up (collectAdverts lines them up) sends them all at once, at half the CPU of a
// sendmsg each (transport's BenchmarkSendBatch).
type batchSocket interface {
	SendBatch(msgs []transport.Message) (int, error)
}

// sendBatch holds the advertisements of one wake-up between hold and flushSends. Its
// slices are reused, so a warm daemon sends without allocating.
type sendBatch struct {
	holding bool
	arena   []byte // the held payloads, back to back
	held    []heldAdvert
	msgs    []transport.Message // one socket's share, built at the flush
	from    []*instance         // whose each of msgs is
}

type heldAdvert struct {
	in       *instance
	tc       socket
	off, end int // the payload in arena
	dst      netip.Addr
	done     bool
}

// hold starts holding advertisements for flushSends.
func (b *sendBatch) hold() { b.holding = true }

// take holds a copy of payload for in's socket when holding and the socket sends batches,
// and reports whether it did; the caller sends it itself otherwise.
func (b *sendBatch) take(in *instance, payload []byte, dst netip.Addr) bool {
	if !b.holding {
		return false
	}
	tc := in.conn.tc
	if _, ok := tc.(batchSocket); !ok {
		return false
	}
	off := len(b.arena)
	b.arena = append(b.arena, payload...)
	b.held = append(b.held, heldAdvert{in: in, tc: tc, off: off, end: len(b.arena), dst: dst})
	return true
}

// flushSends sends the held advertisements, one SendBatch per socket in the order they
// were held, and stops holding. A message that fails is logged as a single send's failure
// would be, and the batch goes on after it.
func (d *Daemon) flushSends() {
	b := &d.sends
	b.holding = false
	for i := range b.held {
		if b.held[i].done {
			continue
		}
		tc := b.held[i].tc
		b.msgs, b.from = b.msgs[:0], b.from[:0]
		for j := i; j < len(b.held); j++ {
			if h := &b.held[j]; !h.done && h.tc == tc {
				h.done = true
				b.msgs = append(b.msgs, transport.Message{Payload: b.arena[h.off:h.end], Dst: h.dst})
				b.from = append(b.from, h.in)
			}
		}
		for next := 0; next < len(b.msgs); {
			n, err := tc.(batchSocket).SendBatch(b.msgs[next:])
			if err == nil {
				break
			}
			if next+n >= len(b.msgs) { // a socket that failed after sending them all
				d.sendFailed(b.from[len(b.from)-1], b.msgs[len(b.msgs)-1].Dst, err)
				break
			}
			d.sendFailed(b.from[next+n], b.msgs[next+n].Dst, err)
			next += n + 1
		}
	}
	// Drop the references to instances and sockets; keep the capacity.
	clear(b.held)
	clear(b.from)
	b.held, b.arena, b.msgs, b.from = b.held[:0], b.arena[:0], b.msgs[:0], b.from[:0]
}
