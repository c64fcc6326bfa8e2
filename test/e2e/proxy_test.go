package e2e

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// apiProxy makes the API server reachable from the lab: it listens inside a lab host's
// namespace and forwards every connection, bytes only (TLS stays end to end), to target in
// the root namespace. A socket keeps the namespace it was created in, so only the listener
// is made inside the host; the accept loop and the dials to target run on ordinary
// goroutines, which are in the root namespace.
type apiProxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int64

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// startProxy listens on listen inside h and forwards to target until Close (at the latest
// when the test ends).
func startProxy(t testing.TB, h *netlab.Host, listen, target string) *apiProxy {
	t.Helper()
	p := &apiProxy{target: target, conns: map[net.Conn]struct{}{}}
	err := h.Do(func() error {
		var err error
		p.ln, err = net.Listen("tcp", listen)
		return err
	})
	if err != nil {
		t.Fatalf("proxy listener in %s: %v", h.Name, err)
	}
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

func (p *apiProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *apiProxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer p.forget(c)
	defer c.Close()
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.forget(up)
	defer up.Close()
	// Either direction ending ends the connection: HTTP/2 and watches never half-close on
	// purpose, and a reset on one side must reach the other.
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// track registers a connection for Close; false if the proxy is already closed.
func (p *apiProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *apiProxy) forget(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// Close takes the API server away from the lab: no more connections are accepted (the
// port in the host's namespace refuses them) and every open one is cut.
func (p *apiProxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
