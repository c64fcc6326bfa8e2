package track

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a private CA, as a site runs for its internal endpoints.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serverCert is a certificate for the DNS name and 127.0.0.1, signed by ca.
func (ca testCA) serverCert(t *testing.T, dnsName string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{dnsName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHTTPSCheckCAFile: an https endpoint whose certificate a private CA signed passes
// with that CA's file and no tls_skip_verify, and fails with the system's roots, with
// another CA's file, and for a name the certificate does not carry.
func TestHTTPSCheckCAFile(t *testing.T) {
	ca := newTestCA(t, "site CA")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.serverCert(t, "health.test")}}
	srv.StartTLS()
	defer srv.Close()
	caFile := writeFile(t, "ca.pem", ca.pem)
	otherFile := writeFile(t, "other.pem", newTestCA(t, "other CA").pem)
	to := netip.MustParseAddrPort(srv.Listener.Addr().String())
	byName := "https://health.test:" + strings.Split(srv.URL, ":")[2] + "/healthz"
	for _, tc := range []struct {
		name  string
		check Check
		ok    bool
		why   string
	}{
		{"the site CA by address", Check{Kind: CheckHTTP, URL: srv.URL + "/healthz", CAFile: caFile}, true, ""},
		{"the site CA by name through connect", Check{Kind: CheckHTTP, URL: byName, Connect: to, CAFile: caFile}, true, ""},
		{"the system roots", Check{Kind: CheckHTTP, URL: srv.URL + "/healthz"}, false, "certificate"},
		{"another CA", Check{Kind: CheckHTTP, URL: srv.URL + "/healthz", CAFile: otherFile}, false, "certificate"},
		{"a name the certificate lacks", Check{Kind: CheckHTTP, URL: "https://other.test:" + strings.Split(srv.URL, ":")[2] + "/", Connect: to, CAFile: caFile}, false, "certificate"},
		{"a CA file gone", Check{Kind: CheckHTTP, URL: srv.URL + "/healthz", CAFile: filepath.Join(t.TempDir(), "gone.pem")}, false, "ca_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, _, err := tc.check.Run(context.Background(), 5*time.Second)
			if ok != tc.ok {
				t.Fatalf("ok=%v err=%v, want ok=%v", ok, err, tc.ok)
			}
			if !ok && (err == nil || !strings.Contains(err.Error(), tc.why)) {
				t.Fatalf("err %v, want one about %q", err, tc.why)
			}
		})
	}
	// A rotated CA file applies at the next run: the file now holds the other CA only.
	if err := os.WriteFile(caFile, newTestCA(t, "rotated CA").pem, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(caFile, later, later); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := (Check{Kind: CheckHTTP, URL: srv.URL + "/healthz", CAFile: caFile}).Run(context.Background(), 5*time.Second); ok {
		t.Fatalf("the check still trusts the CA removed from its file (err %v)", err)
	}
}

// An answer whose header is larger than the check reads fails the check, without
// reading it all.
func TestHTTPCheckHugeHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := range 200 {
			w.Header().Set("X-Filler-"+strings.Repeat("a", i%7)+string(rune('a'+i%26))+strings.Repeat("b", i), strings.Repeat("x", 1000))
		}
	}))
	defer srv.Close()
	ok, _, err := (Check{Kind: CheckHTTP, URL: srv.URL + "/"}).Run(context.Background(), 5*time.Second)
	if ok || err == nil || !strings.Contains(err.Error(), "header") {
		t.Fatalf("ok=%v err=%v, want a failure about the header's size", ok, err)
	}
}
