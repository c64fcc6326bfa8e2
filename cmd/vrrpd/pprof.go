package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"
)

// servePprof serves CPU profiles, execution traces and the runtime's named profiles
// (heap, goroutine, ...) on addr for --pprof-address, an opt-in for finding where the
// time goes under load (go tool pprof http://ADDR/debug/pprof/profile). Written with
// runtime/pprof and runtime/trace directly: net/http/pprof would bring html/template into
// a binary that otherwise has no use for it.
func servePprof(addr string, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil || secs <= 0 || secs > 600 {
			secs = 30
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		if err := pprof.StartCPUProfile(w); err != nil {
			http.Error(w, err.Error(), http.StatusConflict) // another profile is running
			return
		}
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
		}
		pprof.StopCPUProfile()
	})
	// An execution trace (go tool trace): where a goroutine waited to run, which a CPU
	// profile does not show.
	mux.HandleFunc("/debug/pprof/trace", func(w http.ResponseWriter, r *http.Request) {
		secs := 1.0
		if q := r.URL.Query().Get("seconds"); q != "" {
			var err error
			// A trace grows by megabytes a second under load: a minute at most.
			if secs, err = strconv.ParseFloat(q, 64); err != nil || !(secs > 0 && secs <= 60) {
				http.Error(w, fmt.Sprintf("seconds=%q: want a number above 0 and at most 60", q), http.StatusBadRequest)
				return
			}
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		if err := trace.Start(w); err != nil {
			http.Error(w, err.Error(), http.StatusConflict) // another trace is running
			return
		}
		select {
		case <-time.After(time.Duration(secs * float64(time.Second))):
		case <-r.Context().Done():
		}
		trace.Stop()
	})
	mux.HandleFunc("/debug/pprof/{name}", func(w http.ResponseWriter, r *http.Request) {
		p := pprof.Lookup(r.PathValue("name")) // heap, allocs, goroutine, ...
		if p == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		if err := p.WriteTo(w, 0); err != nil {
			log.Debug("pprof", "profile", p.Name(), "err", err)
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-address: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}
