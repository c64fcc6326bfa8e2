package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

func TestStallLimit(t *testing.T) {
	d := &Daemon{opts: Options{pollInterval: time.Second}}
	for _, c := range []struct{ smallest, want time.Duration }{
		{0, 3 * time.Second},                     // no instances: the floor
		{10 * time.Millisecond, 3 * time.Second}, // fast adverts: still the floor
		{time.Second, 3 * time.Second},           // keepalived's default
		{5 * time.Second, 15 * time.Second},      // slow adverts: three of them
		{255 * time.Second, 765 * time.Second},   // VRRPv2's longest
		{1500 * time.Millisecond, 4500 * time.Millisecond},
	} {
		if got := d.stallLimit(c.smallest); got != c.want {
			t.Errorf("stallLimit(%v) = %v, want %v", c.smallest, got, c.want)
		}
	}
	h := newFakeHost()
	d = newTestDaemon(t, h)
	fast := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	fast.AdvertInterval = 2 * time.Second
	slow := testInstance("VI_2", 2, 100, "10.99.0.101/24")
	slow.AdvertInterval = 10 * time.Second
	startDaemon(t, d, fast, slow)
	if got := d.health.Load().stallLimit; got != 6*time.Second {
		t.Errorf("stall limit with 2 s and 10 s instances = %v, want 6s (three of the smallest)", got)
	}
}

// scrapeUp is keepalived_up and the /healthz status code of d, through the real handler.
func scrapeUp(t *testing.T, d *Daemon) (up string, health int) {
	t.Helper()
	srv, err := metrics.NewServer("127.0.0.1:0", d, metrics.Options{Health: d.Health(), Live: d.Live()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	_, body := get(metrics.MetricsPath)
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, "keepalived_up "); ok {
			up = v
		}
	}
	health, _ = get(metrics.HealthPath)
	return up, health
}

// TestHealthInstanceCannotStart: an instance whose socket is refused for a reason other
// than its interface's state (here EPERM, as without CAP_NET_RAW) makes vrrpd unhealthy,
// named in the error; one waiting for a missing interface does not (that is FAULT, which
// clears by itself). Once the socket opens, vrrpd is healthy again.
func TestHealthInstanceCannotStart(t *testing.T) {
	h := newFakeHost()
	h.openErr["eth1"] = syscall.EPERM
	h.openErr["eth2"] = transport.ErrNoInterface
	d := newTestDaemon(t, h)
	ok := testInstance("VI_OK", 1, 100, "10.99.0.100/24")
	perm := testInstance("VI_PERM", 2, 100, "10.99.1.100/24")
	perm.Interface = "eth1"
	perm.VIPs[0].Dev = "eth1"
	missing := testInstance("VI_MISSING", 3, 100, "10.99.2.100/24")
	missing.Interface = "eth2"
	missing.VIPs[0].Dev = "eth2"
	startDaemon(t, d, ok, perm, missing)
	d.heartbeat.Beat(time.Now()) // the loop is not running in this test: it just turned

	err := d.Health()()
	if err == nil || !strings.Contains(err.Error(), "VI_PERM") || !strings.Contains(err.Error(), "operation not permitted") ||
		strings.Contains(err.Error(), "VI_MISSING") || strings.Contains(err.Error(), "VI_OK") {
		t.Errorf("Health() = %v, want VI_PERM and EPERM only", err)
	}
	if up, code := scrapeUp(t, d); up != "0" || code != http.StatusServiceUnavailable {
		t.Errorf("keepalived_up %q, /healthz %d; want 0 and 503", up, code)
	}
	if err := d.Live()(); err != nil {
		t.Errorf("Live() = %v: a restart does not cure a refused socket", err)
	}

	delete(h.openErr, "eth1")
	d.checkInterfaces(t0.Add(time.Second))
	if err := d.Health()(); err != nil {
		t.Errorf("after the socket opened: Health() = %v", err)
	}
	if up, code := scrapeUp(t, d); up != "1" || code != http.StatusOK {
		t.Errorf("keepalived_up %q, /healthz %d; want 1 and 200", up, code)
	}
}

// TestHealthLoopStalled runs the real loop and wedges it inside a send: Health and
// Live fail once the loop has been silent for the stall limit, keepalived_up is 0, and
// both recover when the loop turns again.
func TestHealthLoopStalled(t *testing.T) {
	h := newFakeHost()
	var wedge atomic.Bool
	release := make(chan struct{})
	h.onSend = func() {
		if wedge.Load() {
			<-release
		}
	}
	d, err := New(Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		vips:   h, garp: fakeAnnouncers{h}, open: h.open, links: fakeLinks{h}, routes: fakeRoutes{h},
		conflicts:    &h.conflicts,
		pollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	// An address owner is master at once and sends every 50 ms: stall limit 150 ms.
	ic := testInstance("VI_1", 1, 255, "10.99.0.100/24")
	ic.VIPs = append(ic.VIPs, config.VIP{Prefix: netip.PrefixFrom(eth0src, 24), Dev: "eth0"})
	ic.AdvertInterval = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, &config.Config{Instances: []config.Instance{ic}}) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	}()
	waitHealth := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (Health %v, Live %v)", what, d.Health()(), d.Live()())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitHealth("master", func() bool {
		s := d.Snapshot()
		return len(s.Instances) == 1 && s.Instances[0].State == vrrp.StateMaster && d.Health()() == nil
	})
	if got := d.health.Load().stallLimit; got != 150*time.Millisecond {
		t.Fatalf("stall limit %v, want 150ms", got)
	}
	// Healthy for a while: the beats keep coming.
	for range 20 {
		if err := d.Health()(); err != nil {
			t.Fatalf("running loop unhealthy: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	wedge.Store(true)
	stalledAt := time.Now()
	waitHealth("unhealthy", func() bool { return d.Health()() != nil && d.Live()() != nil })
	if took := time.Since(stalledAt); took < 100*time.Millisecond {
		t.Errorf("unhealthy %v after the stall, before the 150 ms limit", took)
	}
	if err := d.Health()(); !strings.Contains(err.Error(), "silent") {
		t.Errorf("Health() = %v, want the loop named silent", err)
	}
	if up, code := scrapeUp(t, d); up != "0" || code != http.StatusServiceUnavailable {
		t.Errorf("stalled: keepalived_up %q, /healthz %d; want 0 and 503", up, code)
	}
	wedge.Store(false)
	close(release)
	waitHealth("healthy again", func() bool { return d.Health()() == nil && d.Live()() == nil })
}

// TestHealthTimerThreadGone: a timer thread that had to give up (no advertisement or
// takeover would happen again) fails Health and Live, whatever the loop does.
func TestHealthTimerThreadGone(t *testing.T) {
	d := newTestDaemon(t, newFakeHost())
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	d.heartbeat.Beat(time.Now())
	if err := d.Health()(); err != nil {
		t.Fatalf("before: Health() = %v", err)
	}
	err := errors.New("timer thread: read timerfd: bad file descriptor")
	d.timerErr.Store(&err)
	d.heartbeat.Beat(time.Now())
	if got := d.Health()(); got == nil || !strings.Contains(got.Error(), "timerfd") {
		t.Errorf("Health() = %v, want the timer thread's error", got)
	}
	if got := d.Live()(); got == nil {
		t.Error("Live() = nil: a restart is the cure for a dead timer thread")
	}
	if up, code := scrapeUp(t, d); up != "0" || code != http.StatusServiceUnavailable {
		t.Errorf("keepalived_up %q, /healthz %d; want 0 and 503", up, code)
	}
}
