package vrrpd_test

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// BenchmarkTakeoverOverhead measures issue 12's takeover overhead at 10 ms adverts, for
// vrrpd and keepalived one after the other in the same run, on real sockets: a daemon at
// priority 100 on h1, and the client playing a master of priority 200 that sends one
// advertisement (the daemon becomes or stays Backup, and drops the VIP) and falls silent
// (the daemon takes over Master_Down_Interval later). Each takeover (VRRPD_BENCH_TAKEOVERS,
// 1000 by default) is measured from the Master_Down_Timer's due time to
//   - the first advertisement leaving h1 (advert), kernel-stamped on a packet socket;
//   - the VIP in h1's kernel (vip): an RTM_NEWADDR read by a thread blocked on a netlink
//     address monitor in h1 (the read's time, so a bound from above, the same for both);
//   - the first gratuitous ARP for it leaving h1 (garp), kernel-stamped.
//
// The due time is the client's advertisement arriving at h1 (kernel stamp) plus
// Master_Down_Interval, for both daemons: that is when the takeover is due by the protocol,
// so "failover lands within X of Master_Down_Interval" reads straight off the vip figure.
// For vrrpd the benchmark also reads its own deadline and its timer's lateness from its
// debug line and reports issue 8's figure, from the timer firing (the deadline plus that
// lateness) to the advertisement on the wire (wakeup-wire), and from the deadline to the
// wire (deadline-wire), which adds the lateness: the timer thread's part alone, beside the
// machine's. BenchmarkTakeoverAdvert holds issue 8's bound; this one counts its misses.
//
// The machine's floor is measured in the same run, while each daemon runs: a thread
// locked to its OS thread sleeps to absolute deadlines every millisecond (clock_nanosleep,
// as cyclictest does) and records how late it woke (machine-late), and /proc/stat's steal
// time is read before and after. A takeover whose advertisement is 200 µs or more late is
// counted as in-stall when the floor thread woke 150 µs or more late within 1 ms of it:
// the virtual machine stood still then, whatever vrrpd did.
//
// E2E_LOG_DIR=DIR keeps vrrpd's debug log there (vrrpdtest.Start): each takeover's line
// breaks its time down (publish, VIPs, announcements).
func BenchmarkTakeoverOverhead(b *testing.B) {
	n := 1000
	if s := os.Getenv("VRRPD_BENCH_TAKEOVERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 10 {
			b.Fatalf("VRRPD_BENCH_TAKEOVERS=%q: want a number of at least 10", s)
		}
		n = v
	}
	for range b.N {
		for _, who := range []string{"vrrpd", "keepalived"} {
			r := runTakeovers(b, who == "keepalived", n)
			r.report(b, who)
		}
	}
}

// takeoverRun is what one daemon's takeovers measured, each in takeover order.
type takeoverRun struct {
	advert, vip, garp []time.Duration // from the due time (heard + Master_Down_Interval)
	// vrrpd only: from its own deadline to the advertisement on the wire, its timer's
	// lateness, from its timer firing to the wire, and the deadlines themselves (for the
	// floor's stalls).
	wire, late, woke []time.Duration
	deadlines        []time.Time
	floor            *floorLoop
	steal            time.Duration // CPU time stolen by the hypervisor during the run, all CPUs
	elapsed          time.Duration
}

func runTakeovers(b *testing.B, keepalived bool, takeovers int) *takeoverRun {
	const interval = 10 * time.Millisecond
	mdi := vrrp.MasterDownInterval(100, interval)
	_, client, h1, _ := newLab(b)
	start := time.Now()
	conf := writeConf(b, "h1.conf", orderConf(100, "0.01"))
	var d *vrrpd
	if keepalived {
		startKeepalived(b, h1, conf)
	} else {
		d = startVrrpd(b, h1, conf, "")
	}
	stamps := captureWire(b, h1)
	addrs := monitorAddrs(b, h1)
	master := openMaster(b, client)
	adv := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: 51, Priority: 200,
		Addresses: []netip.Addr{vip4.Addr()}}
	adv.SetInterval(interval)
	pkt, err := adv.AppendMarshal(nil, master.Source(), vrrp.MulticastIPv4)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := stamps.first(true, h1.Addr4, 51, 100, start); !ok {
		b.Fatal("no first takeover")
	}
	logFrom := 0
	if d != nil { // its first takeover's line is written, so that the first one counted is ours
		vrrpdtest.WaitFor(b, 5*time.Second, "vrrpd's first takeover", func() bool { return deadlineField.MatchString(d.Output()) })
		logFrom = len(d.Output())
	}

	r := &takeoverRun{}
	steal0 := stealTime(b)
	r.floor = startFloor()
	began := time.Now()
	for i := range takeovers {
		sentAt := time.Now()
		if err := master.Send(pkt, vrrp.MulticastIPv4); err != nil {
			b.Fatal(err)
		}
		// Nothing of the benchmark's own runs while the takeover is due.
		time.Sleep(mdi + 3*time.Millisecond)
		heard, ok1 := stamps.first(false, client.Addr4, 51, 200, sentAt.Add(-time.Millisecond))
		left, ok2 := stamps.first(true, h1.Addr4, 51, 100, sentAt.Add(mdi/2))
		garp, ok3 := stamps.firstARP(vip4.Addr(), sentAt.Add(mdi/2))
		added, ok4 := addrs.added(vip4.Addr(), sentAt)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			b.Fatalf("takeover %d: ours arriving %v, its advert leaving %v, its GARP %v, its VIP added %v", i+1, ok1, ok2, ok3, ok4)
		}
		due := heard.Add(mdi)
		r.advert = append(r.advert, left.Sub(due))
		r.vip = append(r.vip, added.Sub(due))
		r.garp = append(r.garp, garp.Sub(due))
		if d != nil {
			var out string
			vrrpdtest.WaitFor(b, 5*time.Second, fmt.Sprintf("takeover %d's line", i+1), func() bool {
				out = d.Output()[logFrom:]
				return deadlineField.MatchString(out)
			})
			m := masterDownLine.FindStringSubmatch(out)
			dl := deadlineField.FindStringSubmatchIndex(out)
			late, err1 := time.ParseDuration(m[1])
			deadline, err2 := time.Parse(time.RFC3339Nano, out[dl[2]:dl[3]])
			if err1 != nil || err2 != nil {
				b.Fatalf("cannot read %q: %v %v", m[0], err1, err2)
			}
			logFrom += dl[1]
			r.wire = append(r.wire, left.Sub(deadline))
			r.late = append(r.late, late)
			r.woke = append(r.woke, left.Sub(deadline)-late)
			r.deadlines = append(r.deadlines, deadline)
		}
		stamps.forget(sentAt)
		addrs.forget(sentAt)
	}
	r.elapsed = time.Since(began)
	r.floor.stop()
	r.steal = stealTime(b) - steal0
	return r
}

func openMaster(b *testing.B, client *netlab.Host) *transport.Conn {
	var master *transport.Conn
	if err := client.Do(func() error {
		var err error
		master, err = transport.Open(client.Link, transport.IPv4, transport.Options{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { master.Close() })
	return master
}

// stallLate is how late a wake-up of the floor thread must be to count as a stall of the
// machine: three times its idle median on the 2-core test machine.
const stallLate = 150 * time.Microsecond

func (r *takeoverRun) report(b *testing.B, who string) {
	p := func(measure string, d []time.Duration) {
		p50, p99 := percentiles(d)
		b.ReportMetric(us(p50), measure+"-p50-"+who+"-us")
		b.ReportMetric(us(p99), measure+"-p99-"+who+"-us")
	}
	p("takeover-advert", r.advert)
	p("takeover-vip", r.vip)
	p("takeover-garp", r.garp)
	_, v99 := percentiles(r.vip)
	b.ReportMetric(float64(v99)/float64(time.Millisecond), "failover-10ms-over-mdi-p99-"+who+"-ms")
	f50, f99, fmax := r.floor.percentiles()
	b.ReportMetric(us(f50), "machine-late-p50-"+who+"-us")
	b.ReportMetric(us(f99), "machine-late-p99-"+who+"-us")
	b.ReportMetric(us(fmax), "machine-late-max-"+who+"-us")
	b.ReportMetric(float64(r.floor.count(stallLate)), "machine-stalls-"+who+"-count")
	b.ReportMetric(100*float64(r.steal)/float64(r.elapsed)/float64(runtime.NumCPU()), "steal-"+who+"-pct")
	b.Logf("%s, %d takeovers at 10 ms in %v: from due time (heard + MDI) p50/p99 advert %v/%v, VIP %v/%v, GARP %v/%v; floor p50/p99/max %v/%v/%v, %d wake-ups ≥ %v late; steal %v",
		who, len(r.advert), r.elapsed.Round(time.Millisecond), pct(r.advert, 50), pct(r.advert, 99), pct(r.vip, 50), pct(r.vip, 99), pct(r.garp, 50), pct(r.garp, 99),
		f50, f99, fmax, r.floor.count(stallLate), stallLate, r.steal)
	if len(r.wire) == 0 {
		return
	}
	p("deadline-wire", r.wire)
	p("wakeup-wire", r.woke)
	_, l99 := percentiles(r.late)
	b.ReportMetric(us(l99), "timer-late-p99-"+who+"-us")
	// Misses of 200 µs, and how many of them fell within 1 ms of a stall of the floor.
	misses := func(from []time.Duration) (n, inStall int) {
		for i, w := range from {
			if w < 200*time.Microsecond {
				continue
			}
			n++
			if r.floor.stalledNear(r.deadlines[i].Add(-time.Millisecond), r.deadlines[i].Add(r.wire[i]+time.Millisecond)) {
				inStall++
			}
		}
		return n, inStall
	}
	dMiss, dStall := misses(r.wire)
	wMiss, wStall := misses(r.woke)
	b.ReportMetric(float64(dMiss), "deadline-wire-over-200us-"+who+"-count")
	b.ReportMetric(float64(dStall), "deadline-wire-over-200us-in-stall-"+who+"-count")
	b.ReportMetric(float64(wMiss), "wakeup-wire-over-200us-"+who+"-count")
	b.ReportMetric(float64(wStall), "wakeup-wire-over-200us-in-stall-"+who+"-count")
	_, w99 := percentiles(r.woke)
	b.Logf("%s: timer firing to wire p50 %v p99 %v max %v, %d of %d at 200 µs or more (%d within 1 ms of a floor stall); deadline to wire p50 %v p99 %v max %v (timer lateness p99 %v), %d at 200 µs or more (%d in a stall)",
		who, pct(r.woke, 50), w99, slices.Max(r.woke), wMiss, len(r.woke), wStall,
		pct(r.wire, 50), pct(r.wire, 99), slices.Max(r.wire), l99, dMiss, dStall)
	// Issue 8's 200 µs is held by BenchmarkTakeoverAdvert, which fails over it; this one
	// reports issue 12's figures, which a failed benchmark would not print (the report
	// judges them against their goals).
	if w99 >= 200*time.Microsecond {
		b.Logf("p99 from Master_Down_Timer firing to the advert on the wire: %v, over issue 8's 200µs (%d of %d misses within 1 ms of a floor stall)", w99, wStall, wMiss)
	}
}

func pct(d []time.Duration, p int) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)*p/100]
}

// floorLoop is a cyclictest-like measurement of the machine itself: a thread of its own
// sleeps to absolute deadlines every millisecond and records how late each wake-up was.
// Whatever delays it (another process, the hypervisor) delays a daemon's timer as much.
type floorLoop struct {
	mu    sync.Mutex
	wakes []time.Time // wall clock of each wake-up
	lates []time.Duration
	quit  chan struct{}
	done  chan struct{}
}

func startFloor() *floorLoop {
	f := &floorLoop{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		next := ts.Nano()
		for {
			select {
			case <-f.quit:
				return
			default:
			}
			next += int64(time.Millisecond)
			at := unix.NsecToTimespec(next)
			for {
				err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &at, nil)
				if !errors.Is(err, unix.EINTR) {
					break
				}
			}
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			late := time.Duration(ts.Nano() - next)
			f.mu.Lock()
			f.wakes = append(f.wakes, time.Now())
			f.lates = append(f.lates, late)
			f.mu.Unlock()
			if late > time.Millisecond { // do not catch up on missed periods in a burst
				next = ts.Nano()
			}
		}
	}()
	return f
}

func (f *floorLoop) stop() {
	close(f.quit)
	<-f.done
}

func (f *floorLoop) percentiles() (p50, p99, max time.Duration) {
	p50, p99 = percentiles(f.lates)
	return p50, p99, slices.Max(f.lates)
}

// count is how many wake-ups were at least late late.
func (f *floorLoop) count(late time.Duration) int {
	n := 0
	for _, l := range f.lates {
		if l >= late {
			n++
		}
	}
	return n
}

// stalledNear reports whether a wake-up at least stallLate late overlapped [from, to]: the
// thread was kept from running from its deadline (wake-up minus lateness) to its wake-up.
func (f *floorLoop) stalledNear(from, to time.Time) bool {
	for i, w := range f.wakes {
		if f.lates[i] >= stallLate && !w.Before(from) && !w.Add(-f.lates[i]).After(to) {
			return true
		}
	}
	return false
}

// stealTime is /proc/stat's steal time of all CPUs together.
func stealTime(b *testing.B) time.Duration {
	fh, err := os.Open("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 8 && f[0] == "cpu" {
			ticks, err := strconv.ParseInt(f[8], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
		}
	}
	b.Fatal("/proc/stat has no cpu line")
	return 0
}
