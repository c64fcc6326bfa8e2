package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// caPEM writes a self-signed CA certificate to a PEM file and returns its path.
func caPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ca_file (caFile in YAML) reaches the check; a file that is missing, not absolute or
// holds no certificate is refused at its line, as are ca_file on an http URL and
// ca_file beside tls_skip_verify.
func TestCheckCAFile(t *testing.T) {
	ca := caPEM(t)
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := func(lines string) string { return "vrrpd_http_check web {\n url https://10.99.0.8/\n" + lines + "}\n" }
	yaml := func(http string) string {
		return "healthChecks:\n  - name: web\n    http:\n      url: https://10.99.0.8/\n" + http +
			"instances:\n  - name: VI_1\n    interface: eth0\n    vrid: 51\n    priority: 100\n    vips: [10.99.0.100/24]\n    trackChecks:\n      - name: web\n"
	}
	tracked := func(s string) string {
		return s + "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n track_check {\n  web\n }\n virtual_ipaddress {\n  10.99.0.100/24\n }\n}\n"
	}
	for _, c := range []struct{ name, file string }{
		{"keepalived.conf", tracked(conf(" ca_file " + ca + "\n"))},
		{"YAML", yaml("      caFile: " + ca + "\n")},
	} {
		file := "x.conf"
		if c.name == "YAML" {
			file = "x.yaml"
		}
		cfg, _, err := Parse(file, []byte(c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(cfg.Scripts) != 1 || cfg.Scripts[0].Check.CAFile != ca {
			t.Errorf("%s: scripts %+v, want web with CAFile %s", c.name, cfg.Scripts, ca)
		}
	}
	for _, tc := range []struct{ file, conf, want string }{
		{"x.conf", conf(" ca_file /nonexistent/ca.pem\n"), "x.conf:3: vrrpd_http_check web: ca_file: open /nonexistent/ca.pem"},
		{"x.conf", conf(" ca_file " + junk + "\n"), "x.conf:3: vrrpd_http_check web: ca_file \"" + junk + "\": no PEM certificate"},
		{"x.conf", conf(" ca_file ca.pem\n"), "x.conf:3: vrrpd_http_check web: ca_file \"ca.pem\": want an absolute path"},
		{"x.conf", conf(" ca_file\n"), "x.conf:3:"},
		{"x.conf", "vrrpd_http_check web {\n url http://10.99.0.8/\n ca_file " + ca + "\n}\n", "x.conf:1: vrrpd_http_check web: ca_file is for an https url"},
		{"x.conf", conf(" ca_file " + ca + "\n tls_skip_verify\n"), "x.conf:1: vrrpd_http_check web: ca_file and tls_skip_verify"},
		{"x.yaml", yaml("      caFile: /nonexistent/ca.pem\n"), "x.yaml:5: health check web: ca_file: open /nonexistent/ca.pem"},
		{"x.yaml", yaml("      caFile: " + junk + "\n"), "x.yaml:5: health check web: ca_file \"" + junk + "\": no PEM certificate"},
		{"x.yaml", yaml("      caFile: " + ca + "\n      tlsSkipVerify: true\n"), "x.yaml:3: health check web: ca_file and tls_skip_verify"},
	} {
		_, _, err := Parse(tc.file, []byte(tc.conf))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one starting %q", tc.conf, err, tc.want)
		}
	}
	// A TCP check has no ca_file: ignored with a warning, as any keyword it lacks.
	_, ws, err := Parse("x.conf", []byte("vrrpd_tcp_check a {\n connect_ip 10.0.0.1\n connect_port 80\n ca_file "+ca+"\n}"))
	if err != nil || len(ws) != 1 || !strings.Contains(ws[0].Error(), `"ca_file"`) {
		t.Errorf("ca_file in a tcp check: err %v warnings %v, want it ignored with a warning", err, ws)
	}
}
