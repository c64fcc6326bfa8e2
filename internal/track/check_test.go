package track

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// codeServer answers every request with the status in code.
func codeServer(t *testing.T, code *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		w.WriteHeader(int(code.Load()))
		_, _ = w.Write([]byte(`{"localEndpoints": 1}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPCheckStatus(t *testing.T) {
	var code atomic.Int32
	srv := codeServer(t, &code)
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	for _, tc := range []struct {
		name   string
		check  Check
		answer int32
		ok     bool
	}{
		{"any 2xx takes 204", Check{Kind: CheckHTTP, URL: srv.URL + "/"}, 204, true},
		{"any 2xx refuses 503", Check{Kind: CheckHTTP, URL: srv.URL + "/"}, 503, false},
		{"want 200 gets 200", Check{Kind: CheckHTTP, URL: srv.URL + "/", StatusCode: 200}, 200, true},
		{"want 200 gets 204", Check{Kind: CheckHTTP, URL: srv.URL + "/", StatusCode: 200}, 204, false},
		{"a redirect is not followed", Check{Kind: CheckHTTP, URL: srv.URL + "/moved", StatusCode: 200}, 200, false},
		{"a redirect is its own answer", Check{Kind: CheckHTTP, URL: srv.URL + "/moved", StatusCode: 302}, 200, true},
		// The URL names a host that does not resolve; Connect says where to go.
		{"connect overrides the host", Check{Kind: CheckHTTP, URL: "http://health.invalid/", Connect: addr, StatusCode: 200}, 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code.Store(tc.answer)
			ok, timedOut, err := tc.check.Run(context.Background(), 2*time.Second)
			if ok != tc.ok || timedOut {
				t.Fatalf("ok=%v timedOut=%v err=%v, want ok=%v", ok, timedOut, err, tc.ok)
			}
			if !ok && err == nil {
				t.Fatal("a failed check gave no reason")
			}
		})
	}
}

func TestHTTPCheckTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	ok, timedOut, err := Check{Kind: CheckHTTP, URL: srv.URL}.Run(context.Background(), 200*time.Millisecond)
	if ok || !timedOut || err == nil {
		t.Fatalf("ok=%v timedOut=%v err=%v, want a timeout", ok, timedOut, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the check took %v with a 200ms timeout", took)
	}
}

func TestHTTPCheckIgnoresProxyEnvironment(t *testing.T) {
	var code atomic.Int32
	code.Store(200)
	srv := codeServer(t, &code)
	// A proxy that does not exist: a check that used it would fail.
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	if ok, _, err := (Check{Kind: CheckHTTP, URL: srv.URL}).Run(context.Background(), 2*time.Second); !ok {
		t.Fatalf("check through the environment's proxy: %v", err)
	}
}

func TestTCPCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort(ln.Addr().String())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c := Check{Kind: CheckTCP, Connect: addr}
	if ok, _, err := c.Run(context.Background(), time.Second); !ok {
		t.Fatalf("connect to a listener: %v", err)
	}
	ln.Close()
	ok, timedOut, err := c.Run(context.Background(), time.Second)
	if ok || timedOut || err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("connect to a closed port: ok=%v timedOut=%v err=%v, want refused", ok, timedOut, err)
	}
}

// TestRunnerRunsChecks: a Script with a Check goes through the same rise/fall state and
// events as a process, and a changed check restarts its copy.
func TestRunnerRunsChecks(t *testing.T) {
	var code atomic.Int32
	code.Store(200)
	srv := codeServer(t, &code)
	ch := make(chan Event, 4)
	r := NewRunner(ch)
	defer r.Stop()
	s := Script{Name: "web", Interval: 50 * time.Millisecond, Rise: 1, Fall: 2,
		Check: Check{Kind: CheckHTTP, URL: srv.URL, StatusCode: 200}}
	r.Set([]Script{s})
	if ev := next(t, ch); !ev.OK || ev.Status != StatusGood || !ev.Changed {
		t.Fatalf("first event %+v, want GOOD", ev)
	}
	code.Store(503)
	fails := 0
	for ev := next(t, ch); ; ev = next(t, ch) {
		if ev.OK {
			continue // a run that started before the change
		}
		fails++
		if ev.Changed {
			if ev.Status != StatusFailed || fails != 2 {
				t.Fatalf("status %v after %d failures, want FAILED after fall=2", ev.Status, fails)
			}
			break
		}
	}
	g := r.Gen("web")
	s.Check.StatusCode = 503
	r.Set([]Script{s})
	if r.Gen("web") == g {
		t.Fatal("a changed check kept its old copy")
	}
}

func TestHTTPSCheck(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "vrrpd-health-check" {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	if ok, _, err := (Check{Kind: CheckHTTP, URL: srv.URL + "/healthz", TLSSkipVerify: true}).Run(context.Background(), 2*time.Second); !ok {
		t.Fatalf("https check with tls_skip_verify: %v", err)
	}
	// The test server's certificate is signed by no CA the host trusts.
	if ok, _, err := (Check{Kind: CheckHTTP, URL: srv.URL + "/healthz"}).Run(context.Background(), 2*time.Second); ok || err == nil {
		t.Fatalf("https check of an untrusted certificate passed (err %v)", err)
	}
}

// Connect sends the GET to another address than the URL's host, with the URL's Host
// header; a body larger than the check reads is no failure.
func TestHTTPCheckConnectAndLargeBody(t *testing.T) {
	var host string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host = r.Host
		_, _ = w.Write(make([]byte, 4*maxBody))
	}))
	defer srv.Close()
	to := netip.MustParseAddrPort(srv.Listener.Addr().String())
	c := Check{Kind: CheckHTTP, URL: "http://health.example:8080/x", Connect: to, StatusCode: 200}
	if ok, _, err := c.Run(context.Background(), 2*time.Second); !ok {
		t.Fatalf("check through Connect: %v", err)
	}
	if host != "health.example:8080" {
		t.Fatalf("the server saw Host %q, want the URL's", host)
	}
}
