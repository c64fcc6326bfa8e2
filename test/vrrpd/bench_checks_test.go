package vrrpd_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
)

// BenchmarkTrackedChecks255 holds 255 IPv6 instances at 100 ms on a master/backup pair,
// the master's each tracking one vrrp_script (/bin/true, every 1 s) and one
// vrrpd_http_check (a GET of a server in the host's namespace, every 1 s), for 60 s after
// convergence, and reports the transitions in that time (zero wanted) and the CPU seconds
// both hosts spent, scripts included. VRRPD_BENCH_HOLD shortens the hold.
//
// Only the master tracks: both hosts share this machine's two cores, and on it (a virtual
// machine where the dynamic loader's CPUID calls trap to the hypervisor) one /bin/true
// costs 2.5 to 4.5 ms of CPU, so 255 a second are most of a core. Two tracking hosts
// would be a four-core load on two cores, where any daemon's checks time out (keepalived's
// too); each host of a real pair has its own CPUs. The backup runs the same instances at
// priority 100 untracked, below the master's 150 minus the weight of 60: a failing check
// on the master moves a VIP, so every timeout shows as a transition.
//
// The 255 instances run twice: with the default scheduling and with --realtime-priority
// (keepalived's vrrp_rt_priority). At default scheduling the machine runs at about 87 %
// CPU here, and in some runs the backup hears nothing from the master for a
// Master_Down_Interval, takes every VIP and flaps from then on; real-time priority,
// which the scripts do not inherit, has held in every run.
//
// keepalived has no HTTP check and does not hold 255 instances at 100 ms on this machine
// without any tracking (BenchmarkCapacity); the side by side on the script part is
// therefore at 50 instances, each tracking one script, the same keepalived.conf for both.
func BenchmarkTrackedChecks255(b *testing.B) {
	keepalivedBinary(b) // skips (fails under CI=true) without keepalived
	hold := benchHold(60 * time.Second)
	for _, run := range []struct {
		n        int
		checks   bool   // HTTP checks besides the scripts: vrrpd only
		realtime bool   // vrrpd with --realtime-priority (keepalived's vrrp_rt_priority)
		sched    string // "-default" or "-realtime" in the measure's name, for the 255 runs
	}{{255, true, false, "-default"}, {255, true, true, "-realtime"}, {50, false, false, ""}} {
		for _, kind := range benchDaemons {
			if run.checks && kind.name != "vrrpd" {
				continue
			}
			if run.realtime {
				kind = daemonKind{kind.name, func(t testing.TB, h *netlab.Host, conf string) *proc {
					return startVrrpd(t, h, conf, "", "--realtime-priority", "10").proc
				}}
			}
			b.Run(fmt.Sprintf("%d%s/%s", run.n, run.sched, kind.name), func(b *testing.B) {
				var r runResult
				for range b.N {
					r = trackedRun(b, kind, run.n, run.checks, hold)
					if !r.converged {
						b.Fatalf("%s did not converge with %d tracked instances", kind.name, run.n)
					}
				}
				measure := fmt.Sprintf("tracked%d%s", run.n, run.sched)
				b.ReportMetric(float64(r.flaps), benchreport.Unit(measure+"-transitions", kind.name, "count"))
				b.ReportMetric(r.cpu, benchreport.Unit(measure+"-cpu", kind.name, "s"))
				b.ReportMetric(r.rssMiB, benchreport.Unit(measure+"-peak-rss-host", kind.name, "MiB"))
				b.Logf("%s, %d instances tracking a script each (and an HTTP check: %v; real-time: %v) for %v: %d transitions, %.2f CPU s, peak RSS %.1f MiB",
					kind.name, run.n, run.checks, run.realtime, hold, r.flaps, r.cpu, r.rssMiB)
			})
		}
	}
}

// trackedConf is manyConf with each instance tracking script chk_I and, with checks,
// HTTP check web_I on the host's loopback port 8080.
func trackedConf(n, priority int, checks bool) string {
	var sb strings.Builder
	sb.WriteString("global_defs {\n  vrrp_version 3\n}\n")
	for i, vip := range manyVIPs(n, true) {
		fmt.Fprintf(&sb, "vrrp_script chk_%d {\n  script /bin/true\n  interval 1\n  weight -60\n}\n", i+1)
		track := fmt.Sprintf("track_script {\n  chk_%d\n}\n", i+1)
		if checks {
			fmt.Fprintf(&sb, "vrrpd_http_check web_%d {\n  url http://127.0.0.1:8080/%d\n  status_code 200\n  interval 1\n  weight -60\n}\n", i+1, i+1)
			track += fmt.Sprintf("track_check {\n  web_%d\n}\n", i+1)
		}
		sb.WriteString(vrrpInstance(fmt.Sprintf("VI_%d", i+1), i+1, priority, "0.1", track, vip.String()))
	}
	return sb.String()
}

// trackedRun is steadyRun with trackedConf on h1 (manyConf on h2), an HTTP server in each
// host for the checks, and CPU counted with the scripts' (children the daemons waited
// for).
func trackedRun(t testing.TB, kind daemonKind, n int, checks bool, hold time.Duration) runResult {
	lab, err := netlab.Create("client", "h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	h1, h2 := lab.Host("h1"), lab.Host("h2")
	for _, h := range []*netlab.Host{h1, h2} {
		var ln net.Listener
		if err := h.Do(func() error {
			var err error
			ln, err = net.Listen("tcp", "127.0.0.1:8080")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	p1 := kind.start(t, h1, writeConf(t, "h1.conf", trackedConf(n, 150, checks)))
	p2 := kind.start(t, h2, writeConf(t, "h2.conf", manyConf(n, 100, true)))
	vips := manyVIPs(n, true)
	if !waitMasterOfAll(t, h1, h2, vips, 30*time.Second) {
		a1, _ := h1.AddrsOn(h1.Link)
		a2, _ := h2.AddrsOn(h2.Link)
		t.Logf("%s: h1 holds %d VIPs, h2 %d; h1 log tail:\n%s", kind.name, countVIPs(a1, vips), countVIPs(a2, vips), tail(p1.Output(), 3000))
		return runResult{}
	}
	time.Sleep(2 * time.Second) // the first results and the announcements after the election
	mark1, mark2 := len(p1.Output()), len(p2.Output())
	cpu0 := nsCPUWithChildren(t, h1) + nsCPUWithChildren(t, h2)
	time.Sleep(hold)
	cpu := nsCPUWithChildren(t, h1) + nsCPUWithChildren(t, h2) - cpu0
	flaps := countTransitions(p1.Output()[mark1:]) + countTransitions(p2.Output()[mark2:])
	rss := max(nsPeakRSS(t, h1), nsPeakRSS(t, h2))
	if kind.name == "vrrpd" && p1.Running() && p2.Running() {
		// The longest stop-the-world pause of each daemon's collector since its start:
		// every goroutine, the advertisements' too, waits out such a pause.
		for i, p := range []*proc{p1, p2} {
			m := (&vrrpd{proc: p}).scrape(t)
			t.Logf("h%d: %v collections, longest pause %v", i+1, metric(m, "go_gc_duration_seconds_count"),
				time.Duration(metric(m, "go_gc_duration_seconds", `quantile="1"`)*float64(time.Second)))
		}
	}
	if !p1.Running() || !p2.Running() || !masterOfAll(t, h1, h2, vips) {
		t.Fatalf("%s died or lost the VIPs during the run", kind.name)
	}
	if kind.name == "vrrpd" {
		// Every script and check ran and passed: the load was real.
		m := (&vrrpd{proc: p1}).scrape(t)
		good, want := metric(m, "keepalived_script_status"), float64(n)
		runs := metric(m, "vrrpd_script_runs_total", `name="chk_1"`)
		if checks {
			want, runs = 2*want, metric(m, "vrrpd_script_runs_total", `name="web_1"`)
		}
		if good != want || runs < hold.Seconds()*0.8 {
			t.Fatalf("h1: %v trackers GOOD (want %v), chk_1 or web_1 ran %v times in %v", good, want, runs, hold)
		}
	}
	return runResult{converged: true, flaps: flaps, cpu: cpu, rssMiB: rss}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on every Linux port
// vrrpd runs on).
const clockTicks = 100

// nsCPUWithChildren sums, over the processes in h's namespace, their user and system time
// and that of the children they waited for (/proc/PID/stat utime, stime, cutime, cstime):
// the scripts a daemon ran are gone by the time it is measured, and only their parent's
// cutime and cstime still hold their CPU. It counts 10 ms ticks, enough over a minute.
func nsCPUWithChildren(t testing.TB, h *netlab.Host) float64 {
	var ticks float64
	for _, pid := range nsPIDs(t, h) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which may hold spaces, in parentheses.
		s := string(b)
		fs := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// utime, stime, cutime and cstime are fields 14-17, here 11-14 (0-based).
		if len(fs) < 15 {
			continue
		}
		for _, f := range fs[11:15] {
			v, _ := strconv.ParseFloat(f, 64)
			ticks += v
		}
	}
	return ticks / clockTicks
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }
