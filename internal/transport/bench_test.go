package transport_test

import (
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
)

// BenchmarkReadBatch measures the receive path in a two-host lab: each op sends a burst of
// 32 adverts from a to b and reads them back in batches. allocs/op covers both ends and
// must stay 0: the daemon receives thousands of adverts a second with 255 instances.
func BenchmarkReadBatch(b *testing.B) {
	netlabtest.Require(b)
	lab := netlabtest.New(b, "a", "b")
	ha, hb := lab.Host("a"), lab.Host("b")
	for _, fam := range []transport.Family{transport.IPv4, transport.IPv6} {
		b.Run(fam.String(), func(b *testing.B) {
			ca := open(b, ha, fam, transport.Options{})
			cb := open(b, hb, fam, transport.Options{})
			warmUp(b, ca, cb, ca.Group())
			const burst = 32
			msg := []byte{0x31, 1, 100, 1, 0, 100, 0, 0, 10, 99, 0, 100}
			pkts := make([]transport.Packet, transport.DefaultBatchSize)
			batches := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for i := range burst {
					msg[1] = byte(i + 1)
					if err := ca.Send(msg, ca.Group()); err != nil {
						b.Fatal(err)
					}
				}
				if err := cb.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
					b.Fatal(err)
				}
				for got := 0; got < burst; {
					n, err := cb.ReadBatch(pkts)
					if err != nil {
						b.Fatalf("after %d of %d packets: %v", got, burst, err)
					}
					got += n
					batches++
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*burst)/b.Elapsed().Seconds(), "pkts/s")
			b.ReportMetric(float64(b.N*burst)/float64(batches), "pkts/batch")
			if st := cb.Stats(); st.Dropped != 0 {
				b.Errorf("%d packets dropped", st.Dropped)
			}
		})
	}
}

// BenchmarkSendBatch compares one sendmsg per advert with SendBatch's one sendmmsg for a
// burst of 50 (a master of 50 virtual routers whose adverts fall due together), in a
// two-host lab where b's socket takes them in; ns/op is the sender's whole burst.
func BenchmarkSendBatch(b *testing.B) {
	netlabtest.Require(b)
	lab := netlabtest.New(b, "a", "b")
	ha, hb := lab.Host("a"), lab.Host("b")
	ca := open(b, ha, transport.IPv4, transport.Options{})
	cb := open(b, hb, transport.IPv4, transport.Options{})
	warmUp(b, ca, cb, ca.Group())
	const burst = 50
	msgs := make([]transport.Message, burst)
	for i := range msgs {
		msgs[i] = transport.Message{Payload: []byte{0x31, byte(i + 1), 100, 1, 0, 100, 0, 0, 10, 99, 0, 100}, Dst: ca.Group()}
	}
	pkts := make([]transport.Packet, transport.DefaultBatchSize)
	drain := func(b *testing.B) {
		if err := cb.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < burst; {
			n, err := cb.ReadBatch(pkts)
			if err != nil {
				b.Fatalf("after %d of %d packets: %v", got, burst, err)
			}
			got += n
		}
	}
	b.Run("sendmsg", func(b *testing.B) {
		for b.Loop() {
			for _, m := range msgs {
				if err := ca.Send(m.Payload, m.Dst); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			drain(b)
			b.StartTimer()
		}
	})
	b.Run("sendmmsg", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n, err := ca.SendBatch(msgs); err != nil || n != burst {
				b.Fatal(n, err)
			}
			b.StopTimer()
			drain(b)
			b.StartTimer()
		}
	})
}
