package metrics

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/vrrp-operator/vrrp-operator/internal/buildinfo"
	"github.com/vrrp-operator/vrrp-operator/internal/httpserver"
)

// Paths served by Handler.
const (
	MetricsPath = "/metrics"
	HealthPath  = "/healthz"
	LivePath    = "/livez"
	ReadyPath   = "/readyz"
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
	// Ready is /readyz's check, for a readiness probe: the configuration is loaded, the
	// sockets are open and every instance has left INIT. Nil means always ready.
	Ready func() error
	// Program, if set, adds Program_build_info{version, goversion} to the metrics.
	Program string
	// Logger receives the server's and the scrapes' errors (debug level for the
	// clients' own). Nil means slog.Default().
	Logger *slog.Logger
}

// textFormat is the only exposition format served: the classic text format. OpenMetrics
// would add _total to the keepalived_exporter counter names that dashboards query
// without it, whatever the scraper prefers (Prometheus asks for OpenMetrics first).
var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// Registry returns a registry of vrrpd's collectors: the daemon's families read from src
// (keepalived_up by health), client_golang's Go and process collectors (go_*, process_*)
// and, when program is set, program_build_info.
func Registry(src Source, health func() error, program string) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	col := NewCollector(src)
	col.health = health
	cs := []prometheus.Collector{col, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	if program != "" {
		cs = append(cs, buildinfo.NewCollector(program))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register collector: %w", err)
		}
	}
	return reg, nil
}

// Handler returns the HTTP handler of vrrpd's endpoints: MetricsPath, HealthPath,
// LivePath, ReadyPath, StatusPath, and an index at "/".
func Handler(src Source, opt Options) (http.Handler, error) {
	reg, err := Registry(src, opt.Health, opt.Program)
	if err != nil {
		return nil, err
	}
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A series left out (a label that is not UTF-8) does not fail the scrape.
		ErrorHandling:     promhttp.ContinueOnError,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		EnableOpenMetrics: false,
		AcceptedFormats:   []expfmt.Format{textFormat},
	}))
	addProbes(mux, opt)
	mux.HandleFunc("GET "+StatusPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(NewStatus(src.Snapshot()))
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>vrrpd</title></head><body><h1>vrrpd</h1>
<p><a href="%s">metrics</a> &middot; <a href="%s">health</a> &middot; <a href="%s">liveness</a> &middot; <a href="%s">readiness</a> &middot; <a href="%s">status</a></p></body></html>
`, MetricsPath, HealthPath, LivePath, ReadyPath, StatusPath)
	})
	return mux, nil
}

// ProbeHandler serves only HealthPath, LivePath and ReadyPath: the probe socket's
// handler (see NewProbeServer).
func ProbeHandler(opt Options) http.Handler {
	mux := http.NewServeMux()
	addProbes(mux, opt)
	return mux
}

func addProbes(mux *http.ServeMux, opt Options) {
	mux.HandleFunc("GET "+HealthPath, probe(opt.Health))
	mux.HandleFunc("GET "+LivePath, probe(opt.Live))
	mux.HandleFunc("GET "+ReadyPath, probe(opt.Ready))
}

// probe answers 200 "ok" when check (nil: always) passes, else 503 with its error.
func probe(check func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if check != nil {
			if err := check(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "unhealthy: %v\n", err)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	}
}

// NewServer returns the server of Handler for addr (DefaultAddress if empty), with
// httpserver's limits: timeouts on every phase and a connection cap that evicts idle
// and header-less connections, the busiest source's first. The caller runs Serve on a listener for its Addr,
// and Close.
func NewServer(addr string, src Source, opt Options) (*http.Server, error) {
	if addr == "" {
		addr = DefaultAddress
	}
	h, err := Handler(src, opt)
	if err != nil {
		return nil, err
	}
	srv := httpserver.New(h, httpserver.Limits{}, opt.Logger)
	srv.Addr = addr
	return srv, nil
}

// NewProbeServer returns the server of ProbeHandler, for the probe socket. Its cap is
// small: only the local kubelet's exec probes and `vrrpd probe` connect.
func NewProbeServer(opt Options) *http.Server {
	return httpserver.New(ProbeHandler(opt), httpserver.Limits{MaxConns: 16}, opt.Logger)
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
