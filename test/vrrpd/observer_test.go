package vrrpd_test

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// observer watches one lab host from the inside: every VRRP advertisement that reaches
// its eth0 (with the time it arrived) and every address added to it. Failover times are
// measured between the two, on the same clock, as the brief defines them: from the
// master's last advertisement to the backup holding the VIP.
type observer struct {
	mu      sync.Mutex
	adverts []seenAdvert
	addrs   *addrMonitor
	conns   []*transport.Conn
	done    chan struct{}
}

type seenAdvert struct {
	at       time.Time
	src      netip.Addr
	vrid     uint8
	priority uint8
}

func observe(t testing.TB, h *netlab.Host) *observer {
	t.Helper()
	o := &observer{done: make(chan struct{})}
	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		c := openIn(t, h, fam, "observer")
		o.conns = append(o.conns, c)
		go o.read(c)
	}
	o.addrs = monitorAddrs(t, h)
	t.Cleanup(o.close)
	return o
}

func (o *observer) read(c *transport.Conn) {
	pkts := make([]transport.Packet, 16)
	for {
		n, err := c.ReadBatch(pkts)
		if err != nil {
			return
		}
		now := time.Now()
		o.mu.Lock()
		for _, p := range pkts[:n] {
			_, vrid, ok := vrrp.ParseHeader(p.Payload)
			if !ok {
				continue
			}
			o.adverts = append(o.adverts, seenAdvert{at: now, src: p.Src, vrid: vrid, priority: p.Payload[2]})
		}
		o.mu.Unlock()
	}
}

func (o *observer) close() {
	select {
	case <-o.done:
		return
	default:
	}
	close(o.done)
	for _, c := range o.conns {
		c.Close()
	}
}

// dump lists the address events, for failure messages.
func (o *observer) dump() string { return o.addrs.dump() }

// addedAt returns when addr was first added at or after since. The netlink event may
// trail the address itself by a moment: a caller that has just seen the VIP on the host
// waits up to a second for the observer to record it.
func (o *observer) addedAt(addr netip.Addr, since time.Time) (time.Time, bool) {
	return o.addrs.added(addr, since)
}

// lastAdvert returns the last advertisement of vrid from src that arrived before t and
// matches prio (any priority when prio < 0).
func (o *observer) lastAdvert(src netip.Addr, vrid uint8, prio int, before time.Time) (seenAdvert, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.adverts) - 1; i >= 0; i-- {
		a := o.adverts[i]
		if a.src == src && a.vrid == vrid && a.at.Before(before) && (prio < 0 || int(a.priority) == prio) {
			return a, true
		}
	}
	return seenAdvert{}, false
}

// countFrom counts the advertisements of vrid from src since t.
func (o *observer) countFrom(src netip.Addr, vrid uint8, since time.Time) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, a := range o.adverts {
		if a.src == src && a.vrid == vrid && !a.at.Before(since) {
			n++
		}
	}
	return n
}

// maxGap returns the longest silence between two advertisements of vrid from src within
// [from, to].
func (o *observer) maxGap(src netip.Addr, vrid uint8, from, to time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var gap time.Duration
	prev := from
	for _, a := range o.adverts {
		if a.src != src || a.vrid != vrid || a.at.Before(from) || a.at.After(to) {
			continue
		}
		gap = max(gap, a.at.Sub(prev))
		prev = a.at
	}
	return max(gap, to.Sub(prev))
}

// timeline lists the arrival times of vrid's adverts from src in [from, to], for failure
// messages.
func (o *observer) timeline(src netip.Addr, vrid uint8, from, to time.Time) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b []byte
	for _, a := range o.adverts {
		if a.src == src && a.vrid == vrid && !a.at.Before(from) && !a.at.After(to) {
			b = a.at.AppendFormat(b, "15:04:05.000 ")
			b = append(b, byte('0'+a.priority/100), byte('0'+a.priority/10%10), byte('0'+a.priority%10), '\n')
		}
	}
	return string(b)
}

// openIn opens a VRRP socket of family fam on h's link, inside h's namespace, for a
// test that listens to the adverts on the wire (what names the listener in a failure).
func openIn(t testing.TB, h *netlab.Host, fam transport.Family, what string) *transport.Conn {
	t.Helper()
	var c *transport.Conn
	if err := h.Do(func() error {
		var err error
		c, err = transport.Open(h.Link, fam, transport.Options{})
		return err
	}); err != nil {
		t.Fatalf("%s on %s: %v", what, h.Name, err)
	}
	return c
}
