//go:build !vrrpd_nopprof

package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/httpserver"
)

// startPprof serves the profiling endpoint on a loopback port with limits l.
func startPprof(t *testing.T, l httpserver.Limits) string {
	t.Helper()
	old := pprofLimits
	pprofLimits = l
	t.Cleanup(func() { pprofLimits = old })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv, err := servePprof(addr, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return "http://" + addr
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// The trace endpoint gives a Go execution trace, and a clear error for a duration it
// will not run.
func TestPprofTrace(t *testing.T) {
	base := startPprof(t, httpserver.Limits{})
	if code, body := getBody(t, base+"/debug/pprof/trace?seconds=0.05"); code != http.StatusOK || !strings.HasPrefix(body, "go 1.") {
		t.Errorf("trace: status %d, body starts %q; want 200 and a trace header", code, body[:min(len(body), 16)])
	}
	for _, q := range []string{"?seconds=1000", "?seconds=-1", "?seconds=x", "?seconds=0", "?seconds=NaN"} {
		if code, body := getBody(t, base+"/debug/pprof/trace"+q); code != http.StatusBadRequest || !strings.Contains(body, "at most 60") {
			t.Errorf("trace%s: status %d %q, want 400 saying the bound", q, code, body)
		}
	}
}

// A CPU profile longer than the server's read and write timeouts is still made for the
// whole duration and delivered: the deadlines are taken when writing, not at the request.
// seconds out of range is a 400, never a silent default.
func TestPprofProfileOutlivesTimeouts(t *testing.T) {
	base := startPprof(t, httpserver.Limits{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	start := time.Now()
	code, body := getBody(t, base+"/debug/pprof/profile?seconds=1.5")
	took := time.Since(start)
	// A pprof profile is gzip-compressed protobuf.
	if code != http.StatusOK || !strings.HasPrefix(body, "\x1f\x8b") {
		t.Errorf("profile: status %d, %d bytes starting %q; want 200 and a gzip stream", code, len(body), body[:min(len(body), 4)])
	}
	if took < 1500*time.Millisecond {
		t.Errorf("profile answered after %v, want the 1.5 s asked for", took)
	}
	for _, q := range []string{"?seconds=601", "?seconds=0", "?seconds=-5", "?seconds=abc"} {
		if code, body := getBody(t, base+"/debug/pprof/profile"+q); code != http.StatusBadRequest || !strings.Contains(body, "at most 600") {
			t.Errorf("profile%s: status %d %q, want 400 saying the bound", q, code, body)
		}
	}
	if code, _ := getBody(t, base+"/debug/pprof/heap"); code != http.StatusOK {
		t.Errorf("heap: status %d", code)
	}
	if code, _ := getBody(t, base+"/debug/pprof/nosuch"); code != http.StatusNotFound {
		t.Errorf("unknown profile: status %d, want 404", code)
	}
}
