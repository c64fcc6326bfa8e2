//go:build !vrrpd_nopprof

package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The trace endpoint gives a Go execution trace, and a clear error for a duration it
// will not run.
func TestPprofTrace(t *testing.T) {
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
	defer srv.Close()
	get := func(q string) (int, string) {
		resp, err := http.Get("http://" + addr + "/debug/pprof/trace" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("?seconds=0.05"); code != http.StatusOK || !strings.HasPrefix(body, "go 1.") {
		t.Errorf("trace: status %d, body starts %q; want 200 and a trace header", code, body[:min(len(body), 16)])
	}
	for _, q := range []string{"?seconds=1000", "?seconds=-1", "?seconds=x"} {
		if code, body := get(q); code != http.StatusBadRequest || !strings.Contains(body, "at most 60") {
			t.Errorf("trace%s: status %d %q, want 400 saying the bound", q, code, body)
		}
	}
}
