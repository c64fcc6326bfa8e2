package http1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServer serves h on a loopback port and returns its address.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-errc; err != ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// raw sends req as it is and returns everything the server answers before it closes.
func raw(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return string(b)
}

func echo(w *Response, r *Request) {
	switch r.Path {
	case "/hello":
		w.Header("Content-Type", "text/plain")
		io.WriteString(w, "hello "+r.Query.Get("name")+" "+r.Header["user-agent"])
	case "/panic":
		panic("boom")
	default:
		NotFound(w, r)
	}
}

// TestServerWithNetHTTPClient: Go's own client, the one Prometheus scrapes with, reads
// the answers, their status, headers and bodies.
func TestServerWithNetHTTPClient(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/hello?name=x%20y", 200, "hello x y Go-http-client/1.1"},
		{"HEAD", "/hello", 200, ""},
		{"GET", "/nothing", 404, "404 page not found\n"},
		{"POST", "/hello", 405, "method POST not allowed\n"},
		{"GET", "/panic", 500, "internal error: boom\n"},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: body: %v", tc.method, tc.path, err)
		}
		if resp.StatusCode != tc.code || string(body) != tc.body {
			t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
		if tc.method == "HEAD" && resp.ContentLength != int64(len("hello  Go-http-client/1.1")) {
			t.Errorf("HEAD Content-Length = %d, want the GET's", resp.ContentLength)
		}
		if tc.code == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("405 without Allow: %v", resp.Header)
		}
		if resp.Header.Get("Date") == "" || !resp.Close {
			t.Errorf("%s %s: want Date and Connection: close, got %v", tc.method, tc.path, resp.Header)
		}
	}
}

func TestServerRejectsBadRequests(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	for _, tc := range []struct{ req, want string }{
		{"GET /hello\r\n\r\n", "HTTP/1.1 400 "},
		{"GET hello HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.1 505 "},
		{"GET /hello HTTP/1.1\r\nno colon\r\n\r\n", "HTTP/1.1 400 "},
		{"GET /hello HTTP/1.1\r\nX: " + strings.Repeat("a", maxHead) + "\r\n\r\n", "HTTP/1.1 431 "},
		{"GET /" + strings.Repeat("a", maxHead) + " HTTP/1.1\r\n\r\n", "HTTP/1.1 431 "},
		{"GET /hello?a=%zz HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
		// HTTP/1.0 and an LF-only client still get their answer.
		{"GET /hello?name=old HTTP/1.0\n\n", "HTTP/1.1 200 OK"},
	} {
		if got := raw(t, addr, tc.req); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%.40q: answer %.60q, want %q", tc.req, got, tc.want)
		}
	}
}

// TestServerLimits: a client that sends nothing is dropped after ReadHeaderTimeout, and
// past MaxConns new connections are closed unanswered while the held ones last.
func TestServerLimits(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo, ReadHeaderTimeout: 200 * time.Millisecond, MaxConns: 2})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// A third connection while both are held: closed without an answer. The server may
	// not have counted the second yet; give it a moment.
	time.Sleep(50 * time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET /hello HTTP/1.1\r\n\r\n")
	// Closed with the request unread: an end of file or a reset, never an answer.
	if got, err := io.ReadAll(c); len(got) != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Errorf("connection over MaxConns answered %.40q, %v", got, err)
	}
	c.Close()
	// The silent ones are closed once ReadHeaderTimeout passes.
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
			t.Errorf("silent connection: read %q, %v; want a close without an answer", b, err)
		}
	}
	if got := raw(t, addr, "GET /hello HTTP/1.1\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Errorf("after the silent ones left: %.40q", got)
	}
}

// TestServerStreamAndClose: a streamed answer reaches the client as it is written, and
// Close ends a handler that waits on Done.
func TestServerStreamAndClose(t *testing.T) {
	s := &Server{Handler: func(w *Response, r *Request) {
		w.Header("Content-Type", "application/octet-stream")
		if err := w.Stream(time.Minute); err != nil {
			return
		}
		io.WriteString(w, "first\n")
		<-r.Done
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first\n" || resp.ContentLength != -1 {
		t.Fatalf("streamed: %q, %v, length %d", line, err, resp.ContentLength)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while a handler waited on Done")
	}
	if err := <-errc; err != ErrServerClosed {
		t.Errorf("Serve = %v", err)
	}
}
