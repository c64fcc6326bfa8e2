package metrics

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/http1"
	"github.com/vrrp-operator/vrrp-operator/internal/version"
)

// Paths served by Handler.
const (
	MetricsPath = "/metrics"
	HealthPath  = "/healthz"
	LivePath    = "/livez"
	StatusPath  = "/status"
)

// DefaultAddress is keepalived_exporter's port, which the original operator's sidecar used.
const DefaultAddress = ":9650"

// Options tune Handler.
type Options struct {
	// Health reports whether the daemon is healthy; /healthz answers 200 when it returns
	// nil and 503 with the error otherwise, and keepalived_up is 1 or 0 accordingly. Nil
	// means always healthy. Heartbeat.Check makes one from the daemon loop's heartbeat.
	Health func() error
	// Live is /livez's check, for a liveness probe: only what a restart cures (the loop
	// stalled). Nil means always live.
	Live func() error
	// Program, if set, adds Program_build_info (package version) to the metrics.
	Program string
}

// Handler returns the handler of vrrpd's endpoints: MetricsPath, HealthPath, LivePath,
// StatusPath, and an index at "/".
func Handler(src Source, opt Options) (http1.Handler, error) {
	col := NewCollector(src)
	col.health = opt.Health
	health, live := probe(opt.Health), probe(opt.Live)
	return func(w *http1.Response, r *http1.Request) {
		switch r.Path {
		case MetricsPath:
			// Plain text exposition, never OpenMetrics, whatever the scraper asks for
			// first: OpenMetrics would add _total to the keepalived_exporter counter
			// names that dashboards query without it.
			w.Header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			var e exposition
			col.collect(&e)
			collectGo(&e)
			collectProcess(&e)
			if opt.Program != "" {
				e.family(opt.Program+"_build_info", typeGauge, version.BuildInfoHelp(opt.Program), "version", "goversion").
					add(1, version.Version, runtime.Version())
			}
			// A series left out (a label that is not UTF-8) is the only error before
			// the body is sent; the scrape still serves everything else, as
			// client_golang's ContinueOnError did.
			_ = e.write(w)
		case HealthPath:
			health(w)
		case LivePath:
			live(w)
		case StatusPath:
			w.Header("Content-Type", "application/json")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(NewStatus(src.Snapshot()))
		case "/":
			w.Header("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<html><head><title>vrrpd</title></head><body><h1>vrrpd</h1>
<p><a href="%s">metrics</a> &middot; <a href="%s">health</a> &middot; <a href="%s">liveness</a> &middot; <a href="%s">status</a></p></body></html>
`, MetricsPath, HealthPath, LivePath, StatusPath)
		default:
			http1.NotFound(w, r)
		}
	}, nil
}

// probe answers 200 "ok" when check (nil: always) passes, else 503 with its error.
func probe(check func() error) func(w *http1.Response) {
	return func(w *http1.Response) {
		w.Header("Content-Type", "text/plain; charset=utf-8")
		if check != nil {
			if err := check(); err != nil {
				w.WriteHeader(503)
				fmt.Fprintf(w, "unhealthy: %v\n", err)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	}
}

// Server serves Handler on Addr, with limits so a stuck or hostile client cannot pin
// connections or memory.
type Server struct {
	Addr string
	http1.Server
}

// NewServer returns a Server for addr (DefaultAddress if empty) serving Handler. The
// caller runs Serve on a listener for Addr, and Close.
func NewServer(addr string, src Source, opt Options) (*Server, error) {
	if addr == "" {
		addr = DefaultAddress
	}
	h, err := Handler(src, opt)
	if err != nil {
		return nil, err
	}
	return &Server{Addr: addr, Server: http1.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
	}}, nil
}

// Heartbeat tells /healthz whether the daemon's loop still turns: the loop calls Beat on
// every iteration (at least once per its longest idle wait), and Check fails once the last
// beat is older than a limit. The zero value is ready; it is safe for concurrent use.
type Heartbeat struct {
	last atomic.Int64 // unix nanoseconds of the latest Beat; 0 before the first
}

// Beat records that the loop is alive at now.
func (h *Heartbeat) Beat(now time.Time) { h.last.Store(now.UnixNano()) }

// Last is the time of the latest Beat (zero before the first).
func (h *Heartbeat) Last() time.Time {
	n := h.last.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Check returns a health function for Options.Health that fails when no Beat happened in
// the last maxAge (or ever).
func (h *Heartbeat) Check(maxAge time.Duration) func() error {
	return func() error {
		last := h.Last()
		if last.IsZero() {
			return fmt.Errorf("daemon loop has not started")
		}
		if age := time.Since(last); age > maxAge {
			return fmt.Errorf("daemon loop silent for %v (limit %v)", age.Round(time.Millisecond), maxAge)
		}
		return nil
	}
}
