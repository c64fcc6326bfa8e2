// Package httpserver makes vrrpd's HTTP servers (the metrics port, the probe socket and the
// profiling port): net/http's http.Server with timeouts on every phase of a connection,
// bounded headers, and a cap on open connections that evicts the connections doing
// nothing rather than refusing the newcomer.
//
// Any host that reaches a node reaches :9650. A server that refuses connections past a
// cap lets a few idle connections lock everyone out; one without a cap lets them exhaust
// the process' file descriptors. Here a connection counts as evictable while it has not
// sent a complete request header (net/http's StateNew) or waits between requests
// (StateIdle); past the cap, one of them is closed: of the source address holding the most
// connections, the one that has been so the longest. An attacker then only displaces its
// own connections, however fast it opens them, while a scraper, one connection from its
// own address, is not touched; attackers from many addresses displace the oldest first,
// and a scraper, whose header arrives in one packet, is served before enough newer
// connections arrive to displace it. A
// connection that has not sent its full header within ReadHeaderTimeout is closed in any
// case, so a slowloris head lives a few seconds.
package httpserver

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Limits bound a server's connections. Zero fields take the Defaults' values.
type Limits struct {
	// MaxConns is how many connections may be open at once; a new one past it closes
	// the oldest that has not sent a complete header or is idle.
	MaxConns int
	// ReadHeaderTimeout bounds the time from accepting a connection (or from the first
	// byte of a further request on it) to the end of the request's header.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request.
	ReadTimeout time.Duration
	// WriteTimeout bounds the writing of an answer, from the end of the request's
	// header; a handler that streams for longer extends it (http.ResponseController).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no further request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes int
}

// Defaults are vrrpd's: a scrape, a probe or a status request is one small GET, answered
// in milliseconds. 256 connections are far more than the scrapers and probes of a node;
// 5 s for a header is forever for a client on a working network.
var Defaults = Limits{
	MaxConns:          256,
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    8 << 10,
}

// New returns an http.Server for h with the limits l (zero fields: Defaults'). Its
// errors (a client's broken TLS, a failed accept) go to logger at debug level: they are
// the clients' business. The caller sets Addr or calls Serve.
func New(h http.Handler, l Limits, logger *slog.Logger) *http.Server {
	// A zero (or negative) field takes the default.
	def := Defaults
	l.MaxConns = positive(l.MaxConns, def.MaxConns)
	l.ReadHeaderTimeout = positive(l.ReadHeaderTimeout, def.ReadHeaderTimeout)
	l.ReadTimeout = positive(l.ReadTimeout, def.ReadTimeout)
	l.WriteTimeout = positive(l.WriteTimeout, def.WriteTimeout)
	l.IdleTimeout = positive(l.IdleTimeout, def.IdleTimeout)
	l.MaxHeaderBytes = positive(l.MaxHeaderBytes, def.MaxHeaderBytes)
	if logger == nil {
		logger = slog.Default()
	}
	t := &Tracker{max: l.MaxConns, conns: make(map[net.Conn]*conn), perSource: make(map[netip.Addr]int)}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         t.observe,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
}

// positive is v if it is above zero, else def.
func positive[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Tracker follows a server's connections through http.Server.ConnState and evicts past
// its cap.
type Tracker struct {
	max       int
	mu        sync.Mutex
	conns     map[net.Conn]*conn
	perSource map[netip.Addr]int // open connections by source address
}

type conn struct {
	state  http.ConnState
	since  time.Time  // when it entered state
	source netip.Addr // the peer's address; the zero Addr for a Unix socket's peers
}

// sourceOf is c's peer address, without the port.
func sourceOf(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// evictable says whether a connection in state s may be closed to make room: it has not
// sent a complete header (StateNew) or waits for its next request (StateIdle). A
// connection whose request is being answered is bounded by the read and write timeouts.
func evictable(s http.ConnState) bool { return s == http.StateNew || s == http.StateIdle }

// observe is the server's ConnState hook. net/http calls it with StateNew from the accept
// loop, before the connection's goroutine starts, so an eviction happens before the
// next accept.
func (t *Tracker) observe(c net.Conn, s http.ConnState) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch s {
	case http.StateNew:
		src := sourceOf(c)
		t.conns[c] = &conn{state: s, since: now, source: src}
		t.perSource[src]++
		for len(t.conns) > t.max {
			if !t.evictOldest() {
				break
			}
		}
	case http.StateActive, http.StateIdle:
		if e := t.conns[c]; e != nil {
			e.state, e.since = s, now
		}
	case http.StateHijacked, http.StateClosed:
		t.forget(c)
	}
}

// forget drops c from the books (once: the eviction forgets it before its goroutine
// reports it closed).
func (t *Tracker) forget(c net.Conn) {
	e := t.conns[c]
	if e == nil {
		return
	}
	delete(t.conns, c)
	if t.perSource[e.source]--; t.perSource[e.source] <= 0 {
		delete(t.perSource, e.source)
	}
}

// evictOldest closes, of the source with the most connections that has an evictable one,
// the connection evictable for the longest; false if none is.
func (t *Tracker) evictOldest() bool {
	type pick struct {
		c     net.Conn
		since time.Time
	}
	oldest := map[netip.Addr]pick{} // per source, its connection evictable the longest
	for c, e := range t.conns {
		if p, ok := oldest[e.source]; evictable(e.state) && (!ok || e.since.Before(p.since)) {
			oldest[e.source] = pick{c, e.since}
		}
	}
	var (
		victim net.Conn
		most   int
		since  time.Time
	)
	for src, p := range oldest {
		n := t.perSource[src]
		if victim == nil || n > most || (n == most && p.since.Before(since)) {
			victim, most, since = p.c, n, p.since
		}
	}
	if victim == nil {
		return false
	}
	// Forgotten at once, so the next arrival does not pick it again before its
	// goroutine reports it closed. Close does not block on a TCP or Unix socket.
	t.forget(victim)
	_ = victim.Close()
	return true
}
