package httpserver

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

func start(t *testing.T, l Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }), l, slog.New(slog.DiscardHandler))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func get(t *testing.T, addr string) error {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && string(b) != "ok\n" {
		err = errors.New("unexpected body " + string(b))
	}
	return err
}

// closed reports whether the server closed c within d.
func closed(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// Past the cap, a new connection evicts the one idle the longest: connections that never
// send anything cannot lock a client out, and the newest survive.
func TestCapEvictsOldestIdle(t *testing.T) {
	const max = 8
	addr := start(t, Limits{MaxConns: max, ReadHeaderTimeout: time.Minute})
	var conns []net.Conn
	for range 5 * max {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		time.Sleep(2 * time.Millisecond) // distinct arrival times
	}
	for i := range 5 {
		if err := get(t, addr); err != nil {
			t.Fatalf("GET %d with %d idle connections open: %v", i, len(conns), err)
		}
	}
	if !closed(conns[0], 2*time.Second) {
		t.Error("the oldest idle connection is still open")
	}
	if closed(conns[len(conns)-1], 200*time.Millisecond) {
		t.Error("the newest idle connection was closed")
	}
}

// A connection that has not sent its whole header within ReadHeaderTimeout is closed,
// however slowly it keeps sending.
func TestSlowHeaderClosed(t *testing.T) {
	addr := start(t, Limits{ReadHeaderTimeout: 500 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	begin := time.Now()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")); err != nil {
		t.Fatal(err)
	}
	// A byte every 100 ms, until the server closes the connection.
	for time.Since(begin) < 5*time.Second {
		if _, err := c.Write([]byte("a")); err != nil || closed(c, 100*time.Millisecond) {
			break
		}
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("a header sent a byte at a time was still read after %v (limit 500ms)", took)
	}
}

// The server's limits are those asked, the defaults for zero.
func TestLimits(t *testing.T) {
	s := New(http.NotFoundHandler(), Limits{MaxHeaderBytes: 1024}, nil)
	if s.ReadHeaderTimeout != Defaults.ReadHeaderTimeout || s.IdleTimeout != Defaults.IdleTimeout ||
		s.ReadTimeout != Defaults.ReadTimeout || s.WriteTimeout != Defaults.WriteTimeout || s.MaxHeaderBytes != 1024 || s.ConnState == nil {
		t.Errorf("server limits %+v", s)
	}
}

// The eviction picks the source holding the most connections: a client's one idle
// connection, older than all of the attacker's, outlives them.
func TestCapEvictsTheBusiestSource(t *testing.T) {
	const max = 8
	addr := start(t, Limits{MaxConns: max, ReadHeaderTimeout: time.Minute})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	mine, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	time.Sleep(2 * time.Millisecond)
	for range 5 * max {
		c, err := net.Dial("tcp", addr) // from 127.0.0.1
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		time.Sleep(2 * time.Millisecond)
	}
	if closed(mine, 300*time.Millisecond) {
		t.Error("the one connection of another source was evicted for the attacker's")
	}
	if err := get(t, addr); err != nil {
		t.Errorf("GET: %v", err)
	}
}
