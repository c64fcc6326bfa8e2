//go:build !vrrpd_nopprof

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/httpserver"
)

// pprofBuilt says whether --pprof-address can be served.
const pprofBuilt = true

// pprofLimits are the profiling server's: httpserver's defaults. A profile or a trace
// outlives the write timeout, which counts from the request; their handlers move the
// write deadline when they write (deadlineWriter).
var pprofLimits = httpserver.Limits{}

// writeGrace is how long one write of a profile or trace may take.
const writeGrace = 30 * time.Second

// servePprof serves CPU profiles, execution traces and the runtime's named profiles
// (heap, goroutine, ...) on addr for --pprof-address, an opt-in for finding where the
// time goes under load (go tool pprof http://ADDR/debug/pprof/profile). Written with
// runtime/pprof and runtime/trace rather than net/http/pprof: that package registers on
// http.DefaultServeMux, answers a CPU profile longer than the server's write timeout
// with an error and clamps nothing, and its index pulls html/template in.
func servePprof(addr string, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-address: %w", err)
	}
	srv := httpserver.New(pprofHandler(log), pprofLimits, log)
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

func pprofHandler(log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/profile", cpuProfile)
	mux.HandleFunc("GET /debug/pprof/trace", execTrace)
	mux.HandleFunc("GET /debug/pprof/{name}", func(w http.ResponseWriter, r *http.Request) {
		p := pprof.Lookup(r.PathValue("name")) // heap, allocs, goroutine, ...
		if p == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		if err := p.WriteTo(deadlineWriter{w}, 0); err != nil {
			log.Debug("pprof", "profile", p.Name(), "err", err)
		}
	})
	return mux
}

// seconds reads the query's seconds: def when absent, else a number above 0 and at most
// max; ok false after answering 400.
func seconds(w http.ResponseWriter, r *http.Request, def, max float64) (time.Duration, bool) {
	q := r.URL.Query().Get("seconds")
	secs := def
	if q != "" {
		var err error
		if secs, err = strconv.ParseFloat(q, 64); err != nil || !(secs > 0 && secs <= max) {
			http.Error(w, fmt.Sprintf("seconds=%q: want a number above 0 and at most %g", q, max), http.StatusBadRequest)
			return 0, false
		}
	}
	return time.Duration(secs * float64(time.Second)), true
}

// cpuProfile is a CPU profile of ?seconds= (default 30, at most 600), written when it
// stops.
func cpuProfile(w http.ResponseWriter, r *http.Request) {
	d, ok := seconds(w, r, 30, 600)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := pprof.StartCPUProfile(deadlineWriter{w}); err != nil {
		http.Error(w, err.Error(), http.StatusConflict) // another profile is running
		return
	}
	wait(r, d)
	pprof.StopCPUProfile()
}

// execTrace is an execution trace (go tool trace) of ?seconds= (default 1, at most 60):
// where a goroutine waited to run, which a CPU profile does not show. It grows by
// megabytes a second under load, so it is streamed as it is written.
func execTrace(w http.ResponseWriter, r *http.Request) {
	d, ok := seconds(w, r, 1, 60)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := trace.Start(deadlineWriter{w}); err != nil {
		http.Error(w, err.Error(), http.StatusConflict) // another trace is running
		return
	}
	wait(r, d)
	trace.Stop()
}

// wait waits d, or until the client goes.
func wait(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// deadlineWriter moves the connection's write deadline to writeGrace from each write,
// so that a profile that took longer than the server's write timeout to make is still
// delivered, while a client that stops reading is still dropped.
type deadlineWriter struct{ w http.ResponseWriter }

func (d deadlineWriter) Write(p []byte) (int, error) {
	if err := http.NewResponseController(d.w).SetWriteDeadline(time.Now().Add(writeGrace)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	return d.w.Write(p)
}
