package track

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"
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
	// CAFile, when set, is a PEM file of the CAs an https URL's certificate must chain to,
	// instead of the system's roots: a private CA without TLSSkipVerify. It is re-read
	// when it changes (size or modification time), so a rotated CA applies at the next run.
	CAFile string
}

// Limits of an HTTP check's answer. The status decides; the body is read only to drain it,
// so that a slow or endless body cannot hold the check, and a megabyte of headers fails
// the check rather than fills vrrpd's memory.
const (
	maxBody   = 64 << 10
	maxHeader = 64 << 10
)

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

// get is one GET of c.URL with net/http's client, on a connection of its own (to
// c.Connect when set; the URL still names the Host header and the TLS server name), as
// keepalived's HTTP_GET does it: no proxy, no redirect followed (a 3xx is the answer),
// no connection kept, answer headers and body bounded, the whole bounded by ctx.
func (c Check) get(ctx context.Context) error {
	tr, err := transportFor(c.TLSSkipVerify, c.CAFile)
	if err != nil {
		return err
	}
	if c.Connect.IsValid() {
		ctx = context.WithValue(ctx, connectKey{}, c.Connect)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return err
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("scheme %q: want http or https", req.URL.Scheme)
	}
	req.Header.Set("User-Agent", "vrrpd-health-check")
	client := http.Client{Transport: tr, CheckRedirect: noRedirect}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	switch {
	case c.StatusCode == 0 && (resp.StatusCode < 200 || resp.StatusCode > 299):
		return fmt.Errorf("status %d, want 2xx", resp.StatusCode)
	case c.StatusCode != 0 && resp.StatusCode != c.StatusCode:
		return fmt.Errorf("status %d, want %d", resp.StatusCode, c.StatusCode)
	}
	return err
}

// noRedirect makes the client return a redirect as the answer, as keepalived's HTTP_GET
// does: the check asks one server, not wherever that server points.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// connectKey carries Check.Connect to the transport's dialer in the request's context.
type connectKey struct{}

// dialCheck dials the request's Check.Connect when set, else the URL's address.
func dialCheck(ctx context.Context, network, addr string) (net.Conn, error) {
	if ap, ok := ctx.Value(connectKey{}).(netip.AddrPort); ok {
		addr = ap.String()
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// A transport per TLS setting, shared by the checks that have it: with keep-alives off
// it holds no connection between runs, and making one per run would rebuild the TLS
// configuration (and re-read a CA file) every second for every check.
var (
	transportsMu sync.Mutex
	transports   = map[tlsSetting]*cachedTransport{}
)

type tlsSetting struct {
	skipVerify bool
	caFile     string
}

type cachedTransport struct {
	tr      *http.Transport
	size    int64
	modTime time.Time
}

// transportFor returns the shared transport of a TLS setting, rebuilt when its CA file
// changed.
func transportFor(skipVerify bool, caFile string) (*http.Transport, error) {
	key := tlsSetting{skipVerify, caFile}
	var fi os.FileInfo
	if caFile != "" {
		var err error
		if fi, err = os.Stat(caFile); err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
	}
	transportsMu.Lock()
	defer transportsMu.Unlock()
	if t := transports[key]; t != nil && (fi == nil || (fi.Size() == t.size && fi.ModTime().Equal(t.modTime))) {
		return t.tr, nil
	}
	tc := &tls.Config{InsecureSkipVerify: skipVerify} //nolint:gosec // the check's own setting
	if caFile != "" {
		pool, err := LoadCAFile(caFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	tr := &http.Transport{
		Proxy:                  nil, // never the environment's proxy: the check asks the endpoint itself
		DialContext:            dialCheck,
		TLSClientConfig:        tc,
		DisableKeepAlives:      true,
		DisableCompression:     true, // the body is discarded
		MaxResponseHeaderBytes: maxHeader,
	}
	ct := &cachedTransport{tr: tr}
	if fi != nil {
		ct.size, ct.modTime = fi.Size(), fi.ModTime()
	}
	if old := transports[key]; old != nil {
		old.tr.CloseIdleConnections()
	}
	transports[key] = ct
	return tr, nil
}

// LoadCAFile reads a PEM file of CA certificates into a pool: an error if it cannot be
// read or holds no certificate.
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("ca_file %q: no PEM certificate in it", path)
	}
	return pool, nil
}
