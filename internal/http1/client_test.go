package http1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// get sends WriteGet to addr and reads the whole answer with ReadResponse.
func get(t *testing.T, rawURL string) (*ClientResponse, string, error) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := WriteGet(c, u, "test-agent"); err != nil {
		t.Fatal(err)
	}
	resp, err := ReadResponse(bufio.NewReader(c))
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

// TestClientAgainstNetHTTP: the request is one net/http's server understands (path,
// query, Host, user agent, Basic authorization), and every framing of its answers reads
// back whole.
func TestClientAgainstNetHTTP(t *testing.T) {
	big := strings.Repeat("0123456789", 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			user, pass, _ := r.BasicAuth()
			io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+r.Host+" "+r.UserAgent()+" "+user+":"+pass)
		case "/chunked":
			w.WriteHeader(201)
			for i := 0; i < len(big); i += 4096 {
				io.WriteString(w, big[i:min(i+4096, len(big))])
				w.(http.Flusher).Flush() // no length known: chunks
			}
		case "/none":
			w.WriteHeader(204)
		case "/interim":
			w.WriteHeader(103) // Early Hints, then the answer
			w.WriteHeader(200)
			io.WriteString(w, "after 103")
		case "/cut":
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "short")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-body
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	resp, body, err := get(t, "http://u:p%40ss@"+host+"/echo?a=1&b=%2F")
	if err != nil || resp.StatusCode != 200 || body != "GET /echo?a=1&b=%2F "+host+" test-agent u:p@ss" {
		t.Errorf("echo: %v %q %v", resp, body, err)
	}
	resp, body, err = get(t, srv.URL+"/chunked")
	if err != nil || resp.StatusCode != 201 || body != big || resp.Header["transfer-encoding"] != "chunked" {
		t.Errorf("chunked: code %v, %d bytes, %v", resp, len(body), err)
	}
	if resp, body, err = get(t, srv.URL+"/none"); err != nil || resp.StatusCode != 204 || body != "" {
		t.Errorf("204: %v %q %v", resp, body, err)
	}
	if resp, body, err = get(t, srv.URL+"/interim"); err != nil || resp.StatusCode != 200 || body != "after 103" {
		t.Errorf("103 then 200: %v %q %v", resp, body, err)
	}
	if _, body, err = get(t, srv.URL+"/cut"); err != io.ErrUnexpectedEOF {
		t.Errorf("body cut short: %q, %v; want io.ErrUnexpectedEOF", body, err)
	}
}

func TestClientRejectsBadAnswers(t *testing.T) {
	for _, tc := range []struct{ answer, want string }{
		{"SSH-2.0-OpenSSH_9.2\r\n", "malformed status line"},
		{"HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"},
		{"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxResponseHead) + "\r\n\r\n", "header over"},
		{"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", "CRLF"},
		{"", "connection closed before an answer"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, tc.answer)
			c.Close()
		}()
		_, _, err = get(t, "http://"+ln.Addr().String()+"/")
		ln.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("answer %.30q: error %v, want %q", tc.answer, err, tc.want)
		}
	}
}

func TestWriteGetRejectsUnsendable(t *testing.T) {
	for _, raw := range []string{"http://bücher.example/", "http:///path"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteGet(io.Discard, u, ""); err == nil {
			t.Errorf("WriteGet(%q) = nil, want an error", raw)
		}
	}
}

func TestAddr(t *testing.T) {
	for raw, want := range map[string]string{
		"http://example.com/x":     "example.com:80",
		"https://example.com/x":    "example.com:443",
		"http://10.99.0.1:9650/":   "10.99.0.1:9650",
		"https://[fd00:99::1]/":    "[fd00:99::1]:443",
		"http://[fd00:99::1]:8080": "[fd00:99::1]:8080",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := Addr(u); got != want {
			t.Errorf("Addr(%s) = %s, want %s", raw, got, want)
		}
	}
}
