package http1

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// maxResponseHead bounds an answer's status line and headers. A health check may talk to
// any server; a megabyte of headers should fail it rather than fill vrrpd's memory.
const maxResponseHead = 64 << 10

// WriteGet writes a GET of u with Connection: close, a Host from u and, when u carries
// a user, Basic authorization, as net/http would. userAgent may be empty.
func WriteGet(w io.Writer, u *url.URL, userAgent string) error {
	host := u.Host
	if host == "" || !isASCIIPrintable(host) {
		return fmt.Errorf("host %q: want ASCII (write a name in punycode)", host)
	}
	target := u.RequestURI()
	if !isASCIIPrintable(target) {
		return fmt.Errorf("request target %q: not printable ASCII", target)
	}
	var b strings.Builder
	b.WriteString("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n")
	if userAgent != "" {
		b.WriteString("User-Agent: " + userAgent + "\r\n")
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		b.WriteString("Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)) + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Addr is where a GET of u connects: u's host and port, the scheme's port (80, or 443
// for https) when u names none.
func Addr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// isASCIIPrintable reports whether s is printable ASCII without spaces, so that it can
// go into a request line or a Host field as it is.
func isASCIIPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// ClientResponse is an answer read by ReadResponse.
type ClientResponse struct {
	StatusCode int
	Status     string // "200 OK"
	// Header holds the header fields by lower-case name, repeated fields joined with ", ".
	Header map[string]string
	// Body reads the body, whatever its framing: a length, chunks, or the connection's
	// end. A body cut short is an error (io.ErrUnexpectedEOF).
	Body io.Reader
}

// ReadResponse reads the answer to a GET from br: its status line and headers, leaving
// the body in Body. Interim answers (1xx) are skipped.
func ReadResponse(br *bufio.Reader) (*ClientResponse, error) {
	for {
		resp, err := readResponseHead(br)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == 101 {
			return resp, nil
		}
	}
}

func readResponseHead(br *bufio.Reader) (*ClientResponse, error) {
	budget := maxResponseHead
	line, err := readLine(br, &budget)
	if err != nil {
		return nil, responseErr(err)
	}
	proto, status, _ := strings.Cut(line, " ")
	codeText, _, _ := strings.Cut(status, " ")
	code, err := strconv.Atoi(codeText)
	if !strings.HasPrefix(proto, "HTTP/1.") || len(codeText) != 3 || err != nil || code < 100 {
		return nil, fmt.Errorf("malformed status line %q", truncate(line, 64))
	}
	resp := &ClientResponse{StatusCode: code, Status: status, Header: make(map[string]string)}
	for {
		line, err := readLine(br, &budget)
		if err != nil {
			return nil, responseErr(err)
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("malformed header field %q", truncate(line, 64))
		}
		name, value = strings.ToLower(name), strings.TrimSpace(value)
		if prev, dup := resp.Header[name]; dup {
			value = prev + ", " + value
		}
		resp.Header[name] = value
	}
	switch {
	case code < 200 || code == 204 || code == 304:
		resp.Body = strings.NewReader("")
	case hasChunked(resp.Header["transfer-encoding"]):
		resp.Body = &chunkedReader{br: br}
	case resp.Header["content-length"] != "" && resp.Header["transfer-encoding"] == "":
		n, err := strconv.ParseInt(resp.Header["content-length"], 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("malformed Content-Length %q", truncate(resp.Header["content-length"], 32))
		}
		resp.Body = &exactReader{r: br, left: n}
	default:
		resp.Body = br // until the server closes
	}
	return resp, nil
}

func responseErr(err error) error {
	if errors.Is(err, errHeadTooLarge) {
		return fmt.Errorf("answer's header over %d bytes", maxResponseHead)
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("connection closed before an answer: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// hasChunked reports whether a Transfer-Encoding's last coding is chunked.
func hasChunked(te string) bool {
	codings := strings.Split(te, ",")
	return strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// exactReader reads a body of a known length.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) && e.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// chunkedReader reads a chunked body (RFC 9112, section 7.1), its trailer fields
// discarded.
type chunkedReader struct {
	br   *bufio.Reader
	left int64 // of the current chunk
	done bool
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	budget := maxResponseHead
	if c.left == 0 {
		line, err := readLine(c.br, &budget)
		if err != nil {
			return 0, chunkErr(err)
		}
		size, _, _ := strings.Cut(line, ";") // extensions mean nothing to us
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("malformed chunk size %q", truncate(line, 32))
		}
		if n == 0 {
			for { // the trailer, up to its empty line
				line, err := readLine(c.br, &budget)
				if err != nil {
					return 0, chunkErr(err)
				}
				if line == "" {
					c.done = true
					return 0, io.EOF
				}
			}
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if err != nil {
		return n, chunkErr(err)
	}
	if c.left == 0 {
		if line, err := readLine(c.br, &budget); err != nil || line != "" {
			return n, fmt.Errorf("chunk not followed by CRLF")
		}
	}
	return n, nil
}

func chunkErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
