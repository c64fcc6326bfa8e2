package http1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrServerClosed is what Serve returns after Close.
var ErrServerClosed = errors.New("http1: server closed")

// Limits a Server applies when its fields are zero.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultMaxConns          = 64
	// maxHead bounds a request's line and headers together. GETs of vrrpd's endpoints
	// need a few hundred bytes; net/http allows 1 MiB, which 64 slow clients would turn
	// into 64 MiB.
	maxHead = 8 << 10
)

// Request is what a Handler gets: a GET or HEAD without a body.
type Request struct {
	Method string // GET or HEAD
	Path   string // the path, unescaped
	Query  url.Values
	// Header holds the request's header fields by lower-case name, the values of
	// repeated fields joined with ", ".
	Header map[string]string
	// Done is closed when the server closes: a handler that waits (a profile being
	// taken) returns then.
	Done <-chan struct{}
}

// Handler answers one request: it sets headers and the status, then writes the body.
type Handler func(w *Response, r *Request)

// Server serves one Handler on listeners. Set its fields before Serve; the zero value of
// each limit is its Default.
type Server struct {
	Handler           Handler
	ReadHeaderTimeout time.Duration // for the request line and headers to arrive
	WriteTimeout      time.Duration // for the answer to be written (Stream extends it)
	MaxConns          int           // connections served at once; more are closed at once

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
}

// Serve accepts connections on ln and serves each on a goroutine of its own, until Close
// (ErrServerClosed) or an error of ln other than a transient one.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.init()
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of descriptors and the like: wait and retry, as net/http does,
			// rather than give up the endpoint for good.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !s.track(c) {
			c.Close()
			continue
		}
		go s.serve(c)
	}
}

// Close closes the listeners and every open connection, and waits for the handlers to
// return.
func (s *Server) Close() error {
	s.mu.Lock()
	s.init()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// init makes the maps and channel; s.mu is held.
func (s *Server) init() {
	if s.listeners == nil {
		s.listeners = make(map[net.Listener]struct{})
		s.conns = make(map[net.Conn]struct{})
		s.done = make(chan struct{})
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track records c as open and counts its handler for Close to wait on, unless the server
// is closed or MaxConns are already open. Under the lock, so that Close never waits while
// a handler is being added.
func (s *Server) track(c net.Conn) bool {
	limit := s.MaxConns
	if limit <= 0 {
		limit = DefaultMaxConns
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns) >= limit {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	readTimeout := s.ReadHeaderTimeout
	if readTimeout <= 0 {
		readTimeout = DefaultReadHeaderTimeout
	}
	writeTimeout := s.WriteTimeout
	if writeTimeout <= 0 {
		writeTimeout = DefaultWriteTimeout
	}
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	br := bufio.NewReaderSize(c, 1024)
	req, code, msg := readRequest(br)
	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	w := &Response{conn: c, status: 200, header: make(map[string]string)}
	switch {
	case req == nil:
		if code == 0 {
			return // the client went away or said nothing in time: no one to answer
		}
		Error(w, code, msg)
	case req.Method != "GET" && req.Method != "HEAD":
		w.Header("Allow", "GET, HEAD")
		Error(w, 405, "method "+req.Method+" not allowed")
	default:
		w.head = req.Method == "HEAD"
		req.Done = s.done
		if !s.handle(w, req) {
			return
		}
	}
	if err := w.finish(); err != nil {
		return
	}
	// Close gently: a close with unread bytes in the receive queue sends RST, which can
	// destroy the answer before the client has read it. Half-close, then read what the
	// client still sends until it closes, for a moment at most.
	if tc, ok := c.(interface{ CloseWrite() error }); ok && tc.CloseWrite() == nil {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
}

// handle runs the handler, turning a panic into a 500 (or a cut answer when part of it
// is on the wire already): a bug in one endpoint must not stop the daemon. It reports
// whether the answer can still be finished.
func (s *Server) handle(w *Response, req *Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if w.sent {
				ok = false
				return
			}
			w.header = make(map[string]string)
			w.body.Reset()
			Error(w, 500, fmt.Sprint("internal error: ", p))
			ok = true
		}
	}()
	s.Handler(w, req)
	return true
}

// readRequest reads a request's line and headers. On failure it returns the status to
// answer with (0: no answer, the connection is dead or silent) and why.
func readRequest(br *bufio.Reader) (*Request, int, string) {
	budget := maxHead
	line, err := readLine(br, &budget)
	if err != nil {
		if errors.Is(err, errHeadTooLarge) {
			return nil, 431, "request line too long"
		}
		return nil, 0, ""
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" || strings.ContainsAny(method, "\t ") {
		return nil, 400, "malformed request line"
	}
	if proto != "HTTP/1.1" && proto != "HTTP/1.0" {
		if strings.HasPrefix(proto, "HTTP/") {
			return nil, 505, "HTTP version " + proto + " not supported"
		}
		return nil, 400, "malformed request line"
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || u.Path == "" || u.Path[0] != '/' {
		return nil, 400, "malformed request target"
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, 400, "malformed query"
	}
	req := &Request{Method: method, Path: u.Path, Query: q, Header: make(map[string]string)}
	for {
		line, err := readLine(br, &budget)
		if err != nil {
			if errors.Is(err, errHeadTooLarge) {
				return nil, 431, "request header fields too large"
			}
			return nil, 0, ""
		}
		if line == "" {
			return req, 0, ""
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, 400, "malformed header field"
		}
		name, value = strings.ToLower(name), strings.TrimSpace(value)
		if prev, dup := req.Header[name]; dup {
			value = prev + ", " + value
		}
		req.Header[name] = value
	}
}

var errHeadTooLarge = errors.New("http1: head too large")

// readLine reads one CRLF- (or LF-) terminated line, charging it to *budget.
func readLine(br *bufio.Reader, budget *int) (string, error) {
	var buf []byte
	for {
		part, err := br.ReadSlice('\n')
		*budget -= len(part)
		if *budget < 0 {
			return "", errHeadTooLarge
		}
		buf = append(buf, part...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
	buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
	return string(buf), nil
}

// Response is a Handler's answer. Its body is held until the handler returns, then sent
// with its length, unless the handler calls Stream.
type Response struct {
	conn      net.Conn
	status    int
	header    map[string]string
	body      bytes.Buffer
	head      bool // a HEAD request: headers only
	streaming bool
	sent      bool // the status line and headers are on the wire
}

// Header sets a header field of the answer. Content-Length and Connection are the
// server's.
func (w *Response) Header(name, value string) { w.header[name] = value }

// WriteHeader sets the answer's status code (200 unless called).
func (w *Response) WriteHeader(code int) { w.status = code }

// Write adds p to the body.
func (w *Response) Write(p []byte) (int, error) {
	if !w.streaming {
		return w.body.Write(p)
	}
	if w.head {
		return len(p), nil
	}
	return w.conn.Write(p)
}

// Stream sends the status and headers now, without a length, so that what the handler
// writes next goes straight to the client and the connection's close ends it: for long
// answers (profiles, traces) that should not be held in memory. The write deadline moves
// to timeout from now.
func (w *Response) Stream(timeout time.Duration) error {
	_ = w.conn.SetWriteDeadline(time.Now().Add(timeout))
	w.streaming = true
	return w.writeHead(-1)
}

// finish sends the answer, or ends a streamed one.
func (w *Response) finish() error {
	if w.streaming {
		return nil
	}
	if err := w.writeHead(w.body.Len()); err != nil {
		return err
	}
	if w.head {
		return nil
	}
	_, err := w.conn.Write(w.body.Bytes())
	return err
}

// writeHead writes the status line and headers; length < 0 means none is known.
func (w *Response) writeHead(length int) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", w.status, StatusText(w.status))
	for name, value := range w.header {
		// A handler's value with a line break would let it write fields of its own;
		// none does, but the server does not rely on it.
		if strings.ContainsAny(name+value, "\r\n") {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\r\n", name, value)
	}
	if length >= 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", length)
	}
	b.WriteString("Date: " + time.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT") + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	w.sent = true
	_, err := w.conn.Write(b.Bytes())
	return err
}

// Error answers with code and msg as plain text.
func Error(w *Response, code int, msg string) {
	w.Header("Content-Type", "text/plain; charset=utf-8")
	w.Header("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// NotFound answers 404.
func NotFound(w *Response, r *Request) { Error(w, 404, "404 page not found") }

// StatusText is the reason phrase of the codes vrrpd's endpoints answer with.
func StatusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 409:
		return "Conflict"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 503:
		return "Service Unavailable"
	case 505:
		return "HTTP Version Not Supported"
	}
	return "Status " + strconv.Itoa(code)
}
