package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
)

// TestSentCountersPublished: a master that hears nobody still publishes its
// advert_sent as it grows, at most publishInterval late.
func TestSentCountersPublished(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 255, "10.99.0.100/24")
	ic.VIPs = append(ic.VIPs, config.VIP{Prefix: netip.PrefixFrom(eth0src, 24), Dev: "eth0"})
	startDaemon(t, d, ic)
	for _, at := range []time.Duration{3 * time.Second, 7 * time.Second, 20 * time.Second} {
		advance(d, t0.Add(at))
		sent := uint64(len(h.sent))
		got := snapOf(t, d, "VI_1").Counters.AdvertSent
		// publishInterval is 500 ms and adverts go every second: at most one unpublished.
		if got+1 < sent || got > sent {
			t.Errorf("at %v: %d adverts sent, advert_sent published %d", at, sent, got)
		}
	}
	if got := snapOf(t, d, "VI_1").Counters.AdvertSent; got < 15 {
		t.Errorf("advert_sent %d after 20 s at 1 s, want about 20", got)
	}
}

// BenchmarkPublish255 is one snapshot publication of 255 instances, what a daemon
// holding every VRID pays at most every publishInterval (twice a second) now that sending
// marks the counters changed.
func BenchmarkPublish255(b *testing.B) {
	h := newFakeHost()
	d, err := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), vips: h, garp: fakeAnnouncers{h}, open: h.open, links: fakeLinks{h}, routes: fakeRoutes{h}, conflicts: &h.conflicts})
	if err != nil {
		b.Fatal(err)
	}
	var ics []config.Instance
	for i := 1; i <= 255; i++ {
		ic := testInstance(fmt.Sprintf("VI_%d", i), uint8(i), 100, fmt.Sprintf("10.99.%d.%d/16", i/200, i%200+1))
		ic.AdvertInterval = 10 * time.Millisecond
		ics = append(ics, ic)
	}
	d.start(&config.Config{Instances: ics}, t0)
	b.ReportAllocs()
	for b.Loop() {
		d.publish(t0)
	}
}

// TestOnStateChange: every state change reaches Options.OnStateChange, with the
// instance's name, VRID and VIPs.
func TestOnStateChange(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	var got []string
	d.opts.OnStateChange = func(c StateChange) {
		got = append(got, fmt.Sprintf("%s %d %v->%v %v", c.Instance, c.VRID, c.From, c.To, c.VIPs))
	}
	startDaemon(t, d, testInstance("ns/web", 7, 100, "10.99.0.100/24"))
	advance(d, takeover(100))
	conn := d.byName["ns/web"].conn
	at := takeover(100).Add(time.Second)
	d.handleBatch(&batch{conn: conn, tc: conn.tc, pkts: []transport.Packet{peerAdvert(t, 7, 150, "10.99.0.100/24")}, n: 1}, at)
	want := []string{
		"ns/web 7 INIT->BACKUP [10.99.0.100/24]",
		"ns/web 7 BACKUP->MASTER [10.99.0.100/24]",
		"ns/web 7 MASTER->BACKUP [10.99.0.100/24]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("state changes:\n%q\nwant\n%q", got, want)
	}
}
