package vrrpd_test

// The conformance lab tests: behaviours of vrrp/CONFORMANCE.md that only show between real
// routers, vrrpd against keepalived 2.2.7 or vrrpd against itself, on real sockets.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// v2SkewConf is a keepalived.conf (read by keepalived and by vrrpd alike) for one VRRPv2
// instance at advert_int 3, where RFC 3768's Skew_Time, (256 - Priority)/256 s, differs
// most from a v3-style one scaled by the interval.
func v2SkewConf(router string, prio int, state string) string {
	return fmt.Sprintf(`global_defs { router_id %s
 vrrp_version 2
}
vrrp_instance VI_1 {
  state %s
  interface eth0
  virtual_router_id 61
  priority %d
  advert_int 3
  authentication {
    auth_type PASS
    auth_pass skew
  }
  virtual_ipaddress {
    10.99.0.100/24
  }
}
`, router, state, prio)
}

// TestV2SkewAgainstKeepalived runs three VRRPv2 routers at advert_int 3 on one segment: a
// keepalived master (priority 200), and two backups, one keepalived and one vrrpd. When the
// master goes, the higher-priority backup must take over and the other must never enter
// MASTER: no double transition. Both backups time out on Skew_Time (after the master's
// priority 0, when keepalived is killed and its VRRP child shuts down) or on
// Master_Down_Interval (when the master's link is cut), and only an equal formula on both
// sides orders them by priority.
//
// vrrpd between the two keepalived priorities is the arrangement that catches a v3-style
// skew in vrrpd: at priority 150 it would wait 1.24 s (10.24 s) where keepalived's priority
// 100 waits 0.61 s (9.61 s), so keepalived would take over first and then be preempted.
func TestV2SkewAgainstKeepalived(t *testing.T) {
	vip := netip.MustParsePrefix("10.99.0.100/24")
	for _, arr := range []struct {
		name           string
		vrrpdPrio      int
		keepalivedPrio int
	}{
		{"vrrpd-100-below-keepalived-150", 100, 150},
		{"vrrpd-150-above-keepalived-100", 150, 100},
	} {
		for _, failure := range []string{"kill", "cut"} {
			t.Run(arr.name+"/"+failure, func(t *testing.T) {
				if testing.Short() {
					t.Skip("namespace test: skipped with -short (make unit)")
				}
				lab := netlabtest.New(t, "master", "kbackup", "vbackup")
				master, kb, vb := lab.Host("master"), lab.Host("kbackup"), lab.Host("vbackup")
				backups := []*netlab.Host{kb, vb}

				m := startKeepalived(t, master, writeConf(t, "master.conf", v2SkewConf("master", 200, "MASTER")))
				// keepalived enters BACKUP first and takes over at its Master_Down_Interval,
				// 9.22 s at advert_int 3: 10 s left a loaded machine 0.78 s for the start.
				waitSoleHolder(t, 20*time.Second, 0, vip, master, master, kb, vb)
				k := startKeepalived(t, kb, writeConf(t, "kbackup.conf", v2SkewConf("kbackup", arr.keepalivedPrio, "BACKUP")))
				v := startVrrpd(t, vb, writeConf(t, "vbackup.conf", v2SkewConf("vbackup", arr.vrrpdPrio, "BACKUP")), "")
				// Both backups have heard the master once its next advertisement is in.
				vrrpdtest.WaitFor(t, 8*time.Second, "vrrpd following the master", func() bool {
					in := v.instance(t, "VI_1")
					return in.State == "BACKUP" && in.Master == master.Addr4.String()
				})
				if got := vrrpdtest.Holders(t, vip.Addr(), backups...); len(got) != 0 {
					t.Fatalf("backups %v hold the VIP before the failure", got)
				}

				switch failure {
				case "kill":
					m.Kill() // its VRRP child sends priority 0 as it goes
				case "cut":
					cut(t, master) // silent: the backups wait Master_Down_Interval
				}
				winner, loser := kb, vb
				if arr.vrrpdPrio > arr.keepalivedPrio {
					winner, loser = vb, kb
				}
				waitSoleHolder(t, 15*time.Second, 3*time.Second, vip, winner, backups...)

				if n := metric(v.scrape(t), "keepalived_vrrp_become_master", `name="VI_1"`); (winner == vb) != (n == 1) || n > 1 {
					t.Errorf("vrrpd (priority %d) became master %v times", arr.vrrpdPrio, n)
				}
				entered := strings.Count(k.Output(), "Entering MASTER STATE")
				if (winner == kb) != (entered == 1) || entered > 1 {
					t.Errorf("keepalived (priority %d) entered MASTER %d times", arr.keepalivedPrio, entered)
				}
				if st := v.instance(t, "VI_1"); (winner == vb) != (st.State == "MASTER") {
					t.Errorf("vrrpd in %s with %s the winner", st.State, winner.Name)
				}
				t.Logf("%s: %s took over, %s stayed backup", failure, winner.Name, loser.Name)
			})
		}
	}
}

// Takeover order (RFC 5798 §6.4.2, keepalived's vrrp_state_master_tx): a backup whose
// Master_Down_Timer runs out sends its advertisement before anything else, so that the
// backups of lower priority, whose timers run out Skew_Time later (Master_Adver_Interval /
// 256 per priority step: 3.9 ms at 1 s), hear it in time and stay backups.

// orderConf is one VRRPv3 instance at advert_int interval with VIP 10.99.0.100.
func orderConf(priority int, interval string) string {
	return "global_defs {\n  vrrp_version 3\n}\n" + vrrpInstance("VI_1", 51, priority, interval, "", "10.99.0.100/24")
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
	// 3.9 ms is less than a loaded machine (other test packages running beside this one)
	// may leave a process unscheduled, so the daemons run at a realtime priority, as
	// docs/capacity.md advises for a busy node: what is tested is the order Skew_Time
	// gives, not the scheduler.
	rt := []string{"--realtime-priority", "10"}
	startVrrpd(t, h1, writeConf(t, "h1.conf", orderConf(254, "1")), t.TempDir(), rt...)
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", orderConf(253, "1")), t.TempDir(), rt...)
	d3 := startVrrpd(t, h3, writeConf(t, "h3.conf", orderConf(252, "1")), t.TempDir(), rt...)
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
// and how long after that the advertisement was handed to the socket; deadlineField is
// the timer's deadline on the wall clock, in the same line.
var (
	masterDownLine = regexp.MustCompile(`Master_Down_Timer handled" late=(\S+) advert=(\S+)`)
	deadlineField  = regexp.MustCompile(`Master_Down_Timer handled" .* deadline=(\S+)`)
)

// BenchmarkTakeoverAdvert measures, on real sockets and the real timer, how soon a
// takeover's first advertisement follows Master_Down_Timer's deadline, over 100 takeovers
// of a daemon at priority 100 with 50 ms adverts: the client plays a master of priority
// 200 that sends one advertisement (the daemon goes or stays Backup) and then falls
// silent (the daemon takes over). A packet socket on the daemon's host stamps, in the
// kernel (wireCapture), the client's advertisement as it arrives and the takeover's as it
// leaves: the host's side of the wire, as tcpdump on it would see them.
//
// For vrrpd it reports, from the timer firing (the wake-up that ran the expired
// Master_Down_Timer: its deadline plus the "late" of its debug line) to the advertisement
// on the wire (takeover-50ms-wakeup-to-wire-p50/-p99), which is issue 8's figure and the
// daemon's own part; from the deadline to the wire (takeover-50ms-wire-p50/-p99), which
// adds the timer's lateness, the machine's part (a virtual CPU that stands still delays
// every timer on it, keepalived's as much); and to the advertisement handed to the socket
// (takeover-50ms-socket-p50/-p99: "late" plus "advert" of that line, with
// takeover-50ms-timer-late-p99 and takeover-50ms-wakeup-to-socket-p99 apart), all in µs
// (internal/testing/benchreport's names). The socket figure ends when sendmsg returns,
// which on the lab's veth pairs is after the packet went through the bridge into every
// other namespace, so it is the later of the two by the lab's forwarding. It fails when
// the wake-up to wire p99 reaches 200 µs.
//
// For vrrpd and keepalived alike it reports takeover-50ms-k2k-p50/-p99: from the client's
// advertisement arriving to the takeover's leaving, minus Master_Down_Interval. That is
// the receive path (which sets the deadline), the timer and the send, and needs nothing
// from the daemon, so the two compare.
func BenchmarkTakeoverAdvert(b *testing.B) {
	b.Run("vrrpd", func(b *testing.B) { benchTakeover(b, false) })
	b.Run("keepalived", func(b *testing.B) { benchTakeover(b, true) })
}

func benchTakeover(b *testing.B, keepalived bool) {
	const takeovers = 100
	interval := 50 * time.Millisecond
	mdi := vrrp.MasterDownInterval(100, interval)
	var all, lates, adverts, wire, woke, k2k []time.Duration
	for range b.N {
		_, client, h1, _ := newLab(b)
		start := time.Now()
		var d *vrrpd
		if keepalived {
			startKeepalived(b, h1, writeConf(b, "h1.conf", orderConf(100, "0.05")))
		} else {
			d = startVrrpd(b, h1, writeConf(b, "h1.conf", orderConf(100, "0.05")), "")
		}
		stamps := captureWire(b, h1)
		master := openMaster(b, client)
		adv := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: 51, Priority: 200,
			Addresses: []netip.Addr{vip4.Addr()}}
		adv.SetInterval(interval)
		pkt, err := adv.AppendMarshal(nil, master.Source(), vrrp.MulticastIPv4)
		if err != nil {
			b.Fatal(err)
		}
		// Started: the first takeover happens on its own, Master_Down_Interval after start.
		for try := 1; ; try++ {
			if _, ok := stamps.first(true, h1.Addr4, 51, 100, start); ok {
				break
			} else if try == 5 {
				b.Fatal("no first takeover in 5s")
			}
		}
		if d != nil { // and its line is written, so that the first one counted is ours
			vrrpdtest.WaitFor(b, 5*time.Second, "vrrpd's first takeover", func() bool { return deadlineField.MatchString(d.Output()) })
		}
		for i := range takeovers {
			seen := 0
			if d != nil {
				seen = len(masterDownLine.FindAllString(d.Output(), -1))
			}
			sentAt := time.Now()
			if err := master.Send(pkt, vrrp.MulticastIPv4); err != nil {
				b.Fatal(err)
			}
			// (after half an interval: not an advert the daemon sent as master before ours arrived)
			left, ok1 := stamps.first(true, h1.Addr4, 51, 100, sentAt.Add(mdi/2))
			heard, ok2 := stamps.first(false, client.Addr4, 51, 200, sentAt.Add(-time.Millisecond))
			if !ok1 || !ok2 {
				b.Fatalf("takeover %d: takeover advert seen leaving %v, ours seen arriving %v", i+1, ok1, ok2)
			}
			k2k = append(k2k, left.Sub(heard)-mdi)
			if d == nil {
				continue
			}
			vrrpdtest.WaitFor(b, 5*time.Second, fmt.Sprintf("takeover %d", i+1), func() bool {
				return len(masterDownLine.FindAllString(d.Output(), -1)) > seen
			})
			m := masterDownLine.FindAllStringSubmatch(d.Output(), -1)[seen]
			dl := deadlineField.FindAllStringSubmatch(d.Output(), -1)
			late, err1 := time.ParseDuration(m[1])
			advert, err2 := time.ParseDuration(m[2])
			var deadline time.Time
			err3 := errors.New("no deadline")
			if len(dl) > seen {
				deadline, err3 = time.Parse(time.RFC3339Nano, dl[seen][1])
			}
			if err1 != nil || err2 != nil || err3 != nil {
				b.Fatalf("cannot read %q: %v %v %v", m[0], err1, err2, err3)
			}
			all = append(all, late+advert)
			lates, adverts = append(lates, late), append(adverts, advert)
			wire = append(wire, left.Sub(deadline))
			woke = append(woke, left.Sub(deadline)-late)
		}
	}
	who := benchreport.VRRPD
	if keepalived {
		who = benchreport.Keepalived
	}
	k50, k99 := percentiles(k2k)
	b.ReportMetric(us(k50), benchreport.Unit("takeover-50ms-k2k-p50", who, "us"))
	b.ReportMetric(us(k99), benchreport.Unit("takeover-50ms-k2k-p99", who, "us"))
	benchreport.WriteSamples(b, "takeover-50ms-k2k", who, "us", usAll(k2k))
	if keepalived {
		b.Logf("%d takeovers: kernel to kernel p50 %v p99 %v", len(k2k), k50, k99)
		return
	}
	p50, p99 := percentiles(all)
	_, late99 := percentiles(lates)
	_, adv99 := percentiles(adverts)
	w50, w99 := percentiles(wire)
	f50, f99 := percentiles(woke)
	b.ReportMetric(us(late99), benchreport.Unit("takeover-50ms-timer-late-p99", who, "us"))
	b.ReportMetric(us(adv99), benchreport.Unit("takeover-50ms-wakeup-to-socket-p99", who, "us"))
	b.ReportMetric(us(p50), benchreport.Unit("takeover-50ms-socket-p50", who, "us"))
	b.ReportMetric(us(p99), benchreport.Unit("takeover-50ms-socket-p99", who, "us"))
	b.ReportMetric(us(w50), benchreport.Unit("takeover-50ms-wire-p50", who, "us"))
	b.ReportMetric(us(w99), benchreport.Unit("takeover-50ms-wire-p99", who, "us"))
	benchreport.WriteSamples(b, "takeover-50ms-wire", who, "us", usAll(wire))
	b.ReportMetric(us(f50), benchreport.Unit("takeover-50ms-wakeup-to-wire-p50", who, "us"))
	b.ReportMetric(us(f99), benchreport.Unit("takeover-50ms-wakeup-to-wire-p99", who, "us"))
	b.Logf("%d takeovers: timer firing to wire p50 %v p99 %v; deadline to wire p50 %v p99 %v (timer lateness p99 %v); deadline to socket p50 %v p99 %v (wake-up to socket p99 %v); kernel to kernel p50 %v p99 %v",
		len(all), f50, f99, w50, w99, late99, p50, p99, adv99, k50, k99)
	// The goal (issue 8) is from the timer firing to the wire. The socket figure is
	// reported, not held to it: on the lab's veth pairs sendmsg returns only after the
	// bridge delivered the packet into every other namespace, 100-150 µs after it left the
	// host. The deadline figure is reported beside it: its lateness is the machine's.
	if f99 >= 200*time.Microsecond {
		b.Errorf("p99 from Master_Down_Timer firing to the advert on the wire: %v, want under 200µs", f99)
	}
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func usAll(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = us(d)
	}
	return out
}

// strictConf is keepalived's shipped keepalived.conf in shape (vrrp_strict, state MASTER at
// a priority below 255, PASS authentication, VRRPv2), read by keepalived and vrrpd alike.
func strictConf(router string, prio int) string {
	return fmt.Sprintf(`global_defs {
  router_id %s
  vrrp_strict
}
vrrp_instance VI_1 {
  state MASTER
  interface eth0
  virtual_router_id 71
  priority %d
  advert_int 1
  authentication {
    auth_type PASS
    auth_pass 1111
  }
  virtual_ipaddress {
    10.99.0.100/24
  }
}
`, router, prio)
}

// TestStrictAgainstKeepalived: under vrrp_strict keepalived drops the authentication and
// starts a non-owner as BACKUP whatever its state says. vrrpd, reading the same file, must
// do the same, or the two would disagree on the auth type and both become master. vrrpd
// (priority 150) starts first and takes over; keepalived (priority 100) then follows it and
// never enters MASTER; when vrrpd stops, keepalived takes over.
func TestStrictAgainstKeepalived(t *testing.T) {
	if testing.Short() {
		t.Skip("namespace test: skipped with -short (make unit)")
	}
	vip := netip.MustParsePrefix("10.99.0.100/24")
	lab := netlabtest.New(t, "kh", "vh")
	kh, vh := lab.Host("kh"), lab.Host("vh")
	hosts := []*netlab.Host{kh, vh}

	v := startVrrpd(t, vh, writeConf(t, "vh.conf", strictConf("vh", 150)), "")
	if st := v.instance(t, "VI_1"); st.State != "BACKUP" {
		t.Fatalf("vrrpd starts in %s; strict mode makes a non-owner's MASTER a BACKUP", st.State)
	}
	waitSoleHolder(t, 10*time.Second, 0, vip, vh, hosts...)

	k := startKeepalived(t, kh, writeConf(t, "kh.conf", strictConf("kh", 100)))
	vrrpdtest.WaitFor(t, 10*time.Second, "keepalived following vrrpd", func() bool {
		return strings.Contains(k.Output(), "Entering BACKUP STATE")
	})
	waitSoleHolder(t, 5*time.Second, 4*time.Second, vip, vh, hosts...)
	if n := strings.Count(k.Output(), "Entering MASTER STATE"); n != 0 {
		t.Fatalf("keepalived entered MASTER %d times while vrrpd was master", n)
	}
	if n := metric(v.scrape(t), "keepalived_vrrp_become_master", `name="VI_1"`); n != 1 {
		t.Errorf("vrrpd became master %v times, want 1", n)
	}

	v.MustStop(t) // sends priority 0
	waitSoleHolder(t, 5*time.Second, time.Second, vip, kh, hosts...)
}

// vmacConf is a keepalived.conf (read by keepalived and by vrrpd alike) for one VRRPv3
// instance with keepalived's use_vmac and VIP vip: the VIP lives on the macvlan vrrp.51
// with the virtual router MAC (vmacMAC).
func vmacConf(router string, prio int, state string, vip netip.Prefix) string {
	return fmt.Sprintf(`global_defs { router_id %s
}
vrrp_instance VI_1 {
  state %s
  interface eth0
  use_vmac
  virtual_router_id 51
  priority %d
  advert_int 1
  version 3
  virtual_ipaddress {
    %s
  }
}
`, router, state, prio, vip)
}

// vmacMAC is VRID 51's virtual router MAC for vip's family (RFC 5798 §7.3).
func vmacMAC(vip netip.Prefix) string {
	if vip.Addr().Is6() {
		return "00:00:5e:00:02:33"
	}
	return "00:00:5e:00:01:33"
}

// vmacState is what a host shows of vrrp.51: whether it exists at all, whether it is
// ready (an up private macvlan with the virtual MAC; a daemon creating it shows it down
// for a moment) and whether it holds the VIP.
func vmacState(t *testing.T, h *netlab.Host, vip netip.Prefix) (exists, ready, holds bool) {
	t.Helper()
	nh, err := h.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	link, err := nh.LinkByName("vrrp.51")
	if err != nil {
		return false, false, false
	}
	mv, ok := link.(*netlink.Macvlan)
	if !ok || mv.Mode != netlink.MACVLAN_MODE_PRIVATE || mv.HardwareAddr.String() != vmacMAC(vip) || mv.Flags&net.FlagUp == 0 {
		return true, false, false
	}
	addrs, err := h.AddrsOn("vrrp.51")
	if err != nil {
		return true, true, false
	}
	return true, true, slices.ContainsFunc(addrs, func(p netip.Prefix) bool { return p.Addr() == vip.Addr() })
}

// clientSeesVMAC pings the VIP from the client and checks its ARP or neighbour discovery
// entry for it points at the virtual router MAC.
func clientSeesVMAC(t *testing.T, client *netlab.Host, vip netip.Prefix) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := client.Command(ctx, "ping", "-c", "1", "-W", "2", vip.Addr().String()).CombinedOutput(); err != nil {
		t.Fatalf("client cannot reach the VIP: %v: %s", err, out)
	}
	mac, st, err := client.Neighbor(vip.Addr())
	if err != nil || mac.String() != vmacMAC(vip) {
		t.Fatalf("client's neighbour entry for %s: %s %s %v, want %s", vip.Addr(), mac, st, err, vmacMAC(vip))
	}
}

// TestVMACAgainstKeepalived runs a use_vmac instance on keepalived and on vrrpd, over IPv4
// and over IPv6 (RFC 5798 §7.3: 00-00-5E-00-01-{VRID} and 00-00-5E-00-02-{VRID}): the
// first started (priority 200) is master with the VIP on its vrrp.51, the other is backup
// with its own vrrp.51 up and empty (keepalived keeps the macvlan in every state). The
// client reaches the VIP at the virtual MAC (its ARP or neighbour entry). When the master
// stops, the backup takes over; the client reaches the VIP at the same MAC (the new
// master's GARPs or unsolicited NAs from vrrp.51 move it on the bridge), and the stopped
// router's macvlan is gone. Both orders, both families.
func TestVMACAgainstKeepalived(t *testing.T) {
	for _, vip := range []netip.Prefix{vip4, vip6} {
		for _, vrrpdFirst := range []bool{false, true} {
			name := "keepalived-master-then-vrrpd"
			if vrrpdFirst {
				name = "vrrpd-master-then-keepalived"
			}
			t.Run(vrrp.FamilyOf(vip.Addr()).String()+"/"+name, func(t *testing.T) {
				if testing.Short() {
					t.Skip("namespace test: skipped with -short (make unit)")
				}
				vmacTakeover(t, vip, vrrpdFirst)
			})
		}
	}
}

func vmacTakeover(t *testing.T, vip netip.Prefix, vrrpdFirst bool) {
	_, client, h1, h2 := newLab(t)
	// The routers learn the client's MAC on eth0 from its own address first: else a router
	// answering the client's ping over eth0 would resolve it with the VIP as source (ARP's
	// arp_announce 0, which keepalived leaves alone; a neighbour solicitation from the VIP
	// with eth0's MAC) and point the client's entry for the VIP at eth0's MAC, under
	// keepalived as under vrrpd.
	for _, h := range []*netlab.Host{h1, h2} {
		addr := h.Addr4
		if vip.Addr().Is6() {
			addr = h.Addr6
		}
		if out, err := client.Command(context.Background(), "ping", "-c", "1", "-W", "2", addr.String()).CombinedOutput(); err != nil {
			t.Fatalf("client ping %s: %v %s", h.Name, err, out)
		}
	}
	stopFirst := func() {}
	var v *vrrpd
	if vrrpdFirst {
		v = startVrrpd(t, h1, writeConf(t, "h1.conf", vmacConf("h1", 200, "MASTER", vip)), "")
		stopFirst = func() { v.MustStop(t) }
	} else {
		k := startKeepalived(t, h1, writeConf(t, "h1.conf", vmacConf("h1", 200, "MASTER", vip)))
		stopFirst = func() { k.MustStop(t) }
	}
	vrrpdtest.WaitFor(t, 10*time.Second, "h1 master with the VIP on vrrp.51", func() bool {
		_, ready, holds := vmacState(t, h1, vip)
		return ready && holds
	})
	if vrrpdFirst {
		startKeepalived(t, h2, writeConf(t, "h2.conf", vmacConf("h2", 100, "BACKUP", vip)))
	} else {
		v = startVrrpd(t, h2, writeConf(t, "h2.conf", vmacConf("h2", 100, "BACKUP", vip)), "")
		// vrrpd names the master by the source of its adverts: eth0's link-local for IPv6.
		master := h1.Addr4
		if vip.Addr().Is6() {
			master = h1.LinkLocal
		}
		vrrpdtest.WaitFor(t, 5*time.Second, "vrrpd following h1", func() bool {
			in := v.instance(t, "VI_1")
			return in.State == "BACKUP" && in.Master == master.String()
		})
	}
	vrrpdtest.WaitFor(t, 5*time.Second, "h2's vrrp.51 up in BACKUP", func() bool {
		_, ready, _ := vmacState(t, h2, vip)
		return ready
	})
	time.Sleep(3 * time.Second) // several adverts: h2 must stay backup
	if _, ready, holds := vmacState(t, h2, vip); !ready || holds {
		t.Fatalf("the backup's vrrp.51: ready %v, holds the VIP %v; want up and empty", ready, holds)
	}
	if hasAddr(t, h1, vip) || hasAddr(t, h2, vip) {
		t.Fatal("a VIP on eth0: it belongs on vrrp.51")
	}
	clientSeesVMAC(t, client, vip)

	stopFirst()
	vrrpdtest.WaitFor(t, 10*time.Second, "h2 master with the VIP on vrrp.51", func() bool {
		_, ready, holds := vmacState(t, h2, vip)
		return ready && holds
	})
	if exists, _, _ := vmacState(t, h1, vip); exists {
		t.Error("h1's vrrp.51 left behind after it stopped")
	}
	if !vrrpdFirst {
		if in := v.instance(t, "VI_1"); in.State != "MASTER" {
			t.Errorf("vrrpd %s, want MASTER", in.State)
		}
	}
	clientSeesVMAC(t, client, vip)
}
