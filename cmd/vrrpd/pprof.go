//go:build !vrrpd_nopprof

package main

import (
	"fmt"
	"log/slog"
	"net"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/http1"
)

// pprofBuilt says whether --pprof-address can be served.
const pprofBuilt = true

// servePprof serves CPU profiles, execution traces and the runtime's named profiles
// (heap, goroutine, ...) on addr for --pprof-address, an opt-in for finding where the
// time goes under load (go tool pprof http://ADDR/debug/pprof/profile). Written with
// runtime/pprof and runtime/trace directly: net/http/pprof would bring net/http and
// html/template into a binary that otherwise has no use for them.
func servePprof(addr string, log *slog.Logger) (*http1.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-address: %w", err)
	}
	srv := &http1.Server{Handler: func(w *http1.Response, r *http1.Request) { servePprofPath(w, r, log) }}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

func servePprofPath(w *http1.Response, r *http1.Request, log *slog.Logger) {
	name, ok := strings.CutPrefix(r.Path, "/debug/pprof/")
	switch {
	case !ok || name == "" || strings.Contains(name, "/"):
		http1.NotFound(w, r)
	case name == "profile":
		secs, err := strconv.Atoi(r.Query.Get("seconds"))
		if err != nil || secs <= 0 || secs > 600 {
			secs = 30
		}
		// The profile is written when it stops: held, then sent with its length.
		if err := pprof.StartCPUProfile(w); err != nil {
			http1.Error(w, 409, err.Error()) // another profile is running
			return
		}
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Done:
		}
		pprof.StopCPUProfile()
		w.Header("Content-Type", "application/octet-stream")
	case name == "trace":
		// An execution trace (go tool trace): where a goroutine waited to run, which a
		// CPU profile does not show.
		secs := 1.0
		if q := r.Query.Get("seconds"); q != "" {
			var err error
			// A trace grows by megabytes a second under load: a minute at most, and
			// streamed rather than held.
			if secs, err = strconv.ParseFloat(q, 64); err != nil || !(secs > 0 && secs <= 60) {
				http1.Error(w, 400, fmt.Sprintf("seconds=%q: want a number above 0 and at most 60", q))
				return
			}
		}
		d := time.Duration(secs * float64(time.Second))
		w.Header("Content-Type", "application/octet-stream")
		if err := trace.Start(&streamOnWrite{w: w, timeout: d + 30*time.Second}); err != nil {
			http1.Error(w, 409, err.Error()) // another trace is running
			return
		}
		select {
		case <-time.After(d):
		case <-r.Done:
		}
		trace.Stop()
	default:
		p := pprof.Lookup(name) // heap, allocs, goroutine, ...
		if p == nil {
			http1.NotFound(w, r)
			return
		}
		w.Header("Content-Type", "application/octet-stream")
		if err := p.WriteTo(w, 0); err != nil {
			log.Debug("pprof", "profile", p.Name(), "err", err)
		}
	}
}

// streamOnWrite starts streaming w at the first Write, so that an error before anything
// is written can still be answered with its own status.
type streamOnWrite struct {
	w       *http1.Response
	timeout time.Duration
	started bool
}

func (s *streamOnWrite) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		if err := s.w.Stream(s.timeout); err != nil {
			return 0, err
		}
	}
	return s.w.Write(p)
}
