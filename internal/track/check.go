package track

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/http1"
)

// CheckKind says what a native check does; CheckNone means the script is a process.
type CheckKind uint8

// The kinds of native check.
const (
	CheckNone CheckKind = iota
	// CheckHTTP is a GET of URL (http or https) that succeeds on the expected status.
	CheckHTTP
	// CheckTCP is a TCP connect to Addr that succeeds when the handshake completes.
	CheckTCP
)

func (k CheckKind) String() string {
	switch k {
	case CheckHTTP:
		return "http"
	case CheckTCP:
		return "tcp"
	}
	return "script"
}

// Check is a native health check: run in the daemon's process, never as a child, so it
// needs no script user and costs no fork. It is comparable, so that a reload can tell
// whether a check changed.
type Check struct {
	Kind CheckKind
	// URL is what an HTTP check gets.
	URL string
	// Connect, when valid, is where an HTTP check connects instead of the URL's host
	// (the URL still names the Host header and the TLS server name), and where a TCP
	// check connects.
	Connect netip.AddrPort
	// StatusCode is the status an HTTP check wants; 0 takes any 2xx.
	StatusCode int
	// TLSSkipVerify accepts any certificate of an https URL.
	TLSSkipVerify bool
}

// maxBody bounds how much of an HTTP answer a check reads: the status decides, the body
// is only drained so that a slow or endless body cannot hold the check.
const maxBody = 64 << 10

// Run runs the check once within timeout. ok is the verdict; timedOut says the timeout
// ended it; err says why it failed.
func (c Check) Run(ctx context.Context, timeout time.Duration) (ok, timedOut bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch c.Kind {
	case CheckHTTP:
		err = c.get(ctx)
	case CheckTCP:
		err = c.dial(ctx)
	default:
		err = errors.New("not a native check")
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false, true, err
	}
	return err == nil, false, err
}

func (c Check) dial(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.Connect.String())
	if err != nil {
		return err
	}
	return conn.Close()
}

// get is one GET of c.URL on a connection of its own (to c.Connect when set), written
// and read by hand (package http1) rather than through net/http: a Transport per run
// (proxies, connection pools, two goroutines per connection) cost more than the probe
// itself with hundreds of checks a second, and net/http's code costs every vrrpd memory.
// No proxy, no redirects followed (the redirect is the answer), Connection: close, at
// most maxBody of the body read.
func (c Check) get(ctx context.Context) error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	addr := c.Connect.String()
	if !c.Connect.IsValid() {
		addr = http1.Addr(u)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	// The context's end closes the connection, which ends a read or write in progress.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if u.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: c.TLSSkipVerify}) //nolint:gosec // the check's own setting
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
		conn = tc
	}
	if err := http1.WriteGet(conn, u, "vrrpd-health-check"); err != nil {
		return ctxErr(ctx, err)
	}
	resp, err := http1.ReadResponse(bufio.NewReaderSize(conn, 4096))
	if err != nil {
		return ctxErr(ctx, err)
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	switch {
	case c.StatusCode == 0 && (resp.StatusCode < 200 || resp.StatusCode > 299):
		return fmt.Errorf("status %d, want 2xx", resp.StatusCode)
	case c.StatusCode != 0 && resp.StatusCode != c.StatusCode:
		return fmt.Errorf("status %d, want %d", resp.StatusCode, c.StatusCode)
	}
	return ctxErr(ctx, err)
}

// ctxErr is err, or the context's error when the context's end caused it (by closing
// the connection).
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}
