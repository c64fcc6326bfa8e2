package vrrpd_test

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Takeover order (RFC 5798 §6.4.2, keepalived's vrrp_state_master_tx): a backup whose
// Master_Down_Timer runs out sends its advertisement before anything else, so that the
// backups of lower priority, whose timers run out Skew_Time later (Master_Adver_Interval /
// 256 per priority step: 3.9 ms at 1 s), hear it in time and stay backups.

// orderConf is one VRRPv3 instance at advert_int interval with VIP 10.99.0.100.
func orderConf(priority int, interval string) string {
	return fmt.Sprintf(`global_defs {
  vrrp_version 3
}
vrrp_instance VI_1 {
  state BACKUP
  interface eth0
  virtual_router_id 51
  priority %d
  advert_int %s
  virtual_ipaddress {
    10.99.0.100/24
  }
}
`, priority, interval)
}

// TestLowestPriorityNeverTakesOver: three vrrpd at 254, 253 and 252; the master's link is
// cut ten times. Each time the 253 takes over, and the 252, whose Master_Down_Timer runs
// out 3.9 ms later, hears the 253's first advertisement before that and never enters
// MASTER, not even for a moment. The state directories are on disk, not tmpfs, so a VIP
// add syncs its crash record as slowly as a real node's may: that must not delay the
// advertisement.
func TestLowestPriorityNeverTakesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("namespace test: skipped with -short (make unit)")
	}
	lab := netlabtest.New(t, "client", "h1", "h2", "h3")
	client, h1, h2, h3 := lab.Host("client"), lab.Host("h1"), lab.Host("h2"), lab.Host("h3")
	hosts := []*netlab.Host{h1, h2, h3}
	startVrrpd(t, h1, writeConf(t, "h1.conf", orderConf(254, "1")), t.TempDir())
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", orderConf(253, "1")), t.TempDir())
	d3 := startVrrpd(t, h3, writeConf(t, "h3.conf", orderConf(252, "1")), t.TempDir())
	obs := observe(t, client)
	mdi := vrrp.MasterDownInterval(253, time.Second)
	waitSoleHolder(t, 2*mdi+3*time.Second, 0, vip4, h1, hosts...)

	const cuts = 10
	for i := range cuts {
		cutAt := time.Now()
		cut(t, h1)
		vrrpdtest.WaitFor(t, mdi+2*time.Second, fmt.Sprintf("cut %d: h2 taking over", i+1), func() bool { return hasAddr(t, h2, vip4) })
		// h3's timer ran out 3.9 ms after h2's; give a late h3 an advert interval to show.
		time.Sleep(time.Second)
		if n := obs.countFrom(h3.Addr4, 51, cutAt); n > 0 {
			t.Errorf("cut %d: h3 (252) sent %d advertisements", i+1, n)
		}
		restore(t, h1)
		waitSoleHolder(t, 2*mdi+3*time.Second, 0, vip4, h1, hosts...)
	}
	if n := strings.Count(d3.Output(), "Entering MASTER STATE"); n > 0 {
		t.Errorf("the lowest priority (252) entered MASTER %d times in %d cuts", n, cuts)
	}
	if n := strings.Count(d2.Output(), "Entering MASTER STATE"); n != cuts {
		t.Errorf("h2 (253) entered MASTER %d times in %d cuts, want each time", n, cuts)
	}
	if n, ok := d3.instance(t, "VI_1").Counters["become_master"]; !ok || n != 0 {
		t.Errorf("h3's become_master counter %d (reported: %v), want 0", n, ok)
	}
}

// masterDownLine is vrrpd's debug line for a Master_Down_Timer: how late the loop ran it
// and how long after that the advertisement was handed to the socket.
var masterDownLine = regexp.MustCompile(`Master_Down_Timer handled" late=(\S+) advert=(\S+)`)

// BenchmarkTakeoverAdvert measures, on real sockets and the real timer, the time from
// Master_Down_Timer's deadline to the takeover's advertisement handed to the socket
// (vrrpd's "late" plus "advert" of its debug line), over 100 takeovers of a vrrpd at
// priority 100 and 50 ms adverts: the client plays a master of priority 200 that sends
// one advertisement (vrrpd goes or stays Backup) and then falls silent (vrrpd takes
// over). It reports p50 and p99 and fails when p99 reaches 200 µs. wire-p50/p99 is the
// whole takeover seen from the client: from its advertisement to vrrpd's first, minus
// Master_Down_Interval (both ways over the bridge, the receive path, the timer and the
// send).
func BenchmarkTakeoverAdvert(b *testing.B) {
	const takeovers = 100
	interval := 50 * time.Millisecond
	mdi := vrrp.MasterDownInterval(100, interval)
	var all, lates, adverts, wire []time.Duration
	for range b.N {
		_, client, h1, _ := newLab(b)
		d := startVrrpd(b, h1, writeConf(b, "h1.conf", orderConf(100, "0.05")), "")
		obs := observe(b, client)
		var master *transport.Conn
		if err := client.Do(func() error {
			var err error
			master, err = transport.Open(client.Link, transport.IPv4, transport.Options{})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		defer master.Close()
		adv := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: 51, Priority: 200,
			Addresses: []netip.Addr{vip4.Addr()}}
		adv.SetInterval(interval)
		pkt, err := adv.AppendMarshal(nil, master.Source(), vrrp.MulticastIPv4)
		if err != nil {
			b.Fatal(err)
		}
		// Started: the first takeover happens on its own, Master_Down_Interval after start.
		vrrpdtest.WaitFor(b, 5*time.Second, "vrrpd's first takeover", func() bool { return masterDownLine.MatchString(d.Output()) })
		for i := range takeovers {
			seen := len(masterDownLine.FindAllString(d.Output(), -1))
			sentAt := time.Now()
			if err := master.Send(pkt, vrrp.MulticastIPv4); err != nil {
				b.Fatal(err)
			}
			vrrpdtest.WaitFor(b, 5*time.Second, fmt.Sprintf("takeover %d", i+1), func() bool {
				return len(masterDownLine.FindAllString(d.Output(), -1)) > seen
			})
			m := masterDownLine.FindAllStringSubmatch(d.Output(), -1)[seen]
			late, err1 := time.ParseDuration(m[1])
			advert, err2 := time.ParseDuration(m[2])
			if err1 != nil || err2 != nil {
				b.Fatalf("cannot read %q: %v %v", m[0], err1, err2)
			}
			all = append(all, late+advert)
			lates, adverts = append(lates, late), append(adverts, advert)
			// (after half an interval: not an advert vrrpd sent as master before ours arrived)
			if first, ok := obs.firstAdvert(h1.Addr4, 51, sentAt.Add(mdi/2)); ok {
				wire = append(wire, first.Sub(sentAt)-mdi)
			}
		}
	}
	p50, p99 := percentiles(all)
	_, late99 := percentiles(lates)
	_, adv99 := percentiles(adverts)
	b.ReportMetric(us(late99), "late-p99-µs")
	b.ReportMetric(us(adv99), "advert-p99-µs")
	b.ReportMetric(us(p50), "p50-µs")
	b.ReportMetric(us(p99), "p99-µs")
	if len(wire) > 0 {
		w50, w99 := percentiles(wire)
		b.ReportMetric(us(w50), "wire-p50-µs")
		b.ReportMetric(us(w99), "wire-p99-µs")
	}
	b.Logf("%d takeovers: deadline to socket p50 %v p99 %v (timer lateness p99 %v, wake-up to socket p99 %v)", len(all), p50, p99, late99, adv99)
	if p99 >= 200*time.Microsecond {
		b.Errorf("p99 from Master_Down_Timer's deadline to the advert handed to the socket: %v, want under 200µs", p99)
	}
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// firstAdvert returns when the first advertisement of vrid from src arrived after t.
func (o *observer) firstAdvert(src netip.Addr, vrid uint8, after time.Time) (time.Time, bool) {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		o.mu.Lock()
		for _, a := range o.adverts {
			if a.src == src && a.vrid == vrid && a.at.After(after) {
				o.mu.Unlock()
				return a.at, true
			}
		}
		o.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
}
