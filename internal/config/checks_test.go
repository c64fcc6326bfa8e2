package config

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

const checksConf = `vrrpd_http_check web {
    url http://app.example/healthz
    status_code 200
    connect_ip 10.99.0.7
    interval 2
    timeout 1
    rise 2
    fall 3
    weight -50
}
vrrpd_http_check tls {
    url https://10.99.0.8/
    tls_skip_verify
}
vrrpd_tcp_check api {
    connect_ip 10.99.0.9
    connect_port 6443
}
vrrp_script proc {
    script /bin/true
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority 100
    track_check {
        web
        api weight -20 reverse
        proc
    }
    track_script {
        web
        proc
    }
    virtual_ipaddress {
        10.99.0.100/24
    }
}
`

const checksYAML = `healthChecks:
  - name: web
    http:
      url: http://app.example/healthz
      statusCode: 200
      connect: 10.99.0.7
    interval: 2s
    timeout: 1s
    rise: 2
    fall: 3
    weight: -50
  - name: tls
    http:
      url: https://10.99.0.8/
      tlsSkipVerify: true
  - name: api
    tcp:
      connect: 10.99.0.9:6443
scripts:
  - name: proc
    command: /bin/true
instances:
  - name: VI_1
    interface: eth0
    vrid: 51
    priority: 100
    vips: [10.99.0.100/24]
    trackChecks:
      - name: web
      - name: api
        weight: -20
        reverse: true
    trackScripts:
      - name: proc
`

func TestKeepalivedChecks(t *testing.T) {
	cfg, ws, err := Parse("c.conf", []byte(checksConf))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Error())
	}
	// A track_check naming a script and a track_script naming a check track nothing.
	for _, want := range []string{
		"c.conf:29: (VI_1) track_check proc: no vrrpd_http_check or vrrpd_tcp_check of that name; ignored",
		"c.conf:32: (VI_1) track_script web: no vrrp_script of that name; ignored",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
	want := []TrackScript{{Script: "web", Weight: -50}, {Script: "api", Weight: -20, Reverse: true}, {Script: "proc"}}
	if in := cfg.Instances[0]; !slices.Equal(in.TrackScripts, want) {
		t.Errorf("tracks %+v, want %+v", in.TrackScripts, want)
	}
	byName := map[string]Script{}
	for _, sc := range cfg.Scripts {
		byName[sc.Name] = sc
	}
	if _, ok := byName["tls"]; ok || len(cfg.Scripts) != 3 {
		t.Errorf("scripts %+v: want web, api and proc (tls is tracked by nobody)", cfg.Scripts)
	}
	web := byName["web"]
	if web.Check != (track.Check{Kind: track.CheckHTTP, URL: "http://app.example/healthz", StatusCode: 200,
		Connect: netip.MustParseAddrPort("10.99.0.7:80")}) ||
		web.Interval != 2*time.Second || web.Timeout != time.Second || web.Rise != 2 || web.Fall != 3 || web.Weight != -50 {
		t.Errorf("web %+v", web)
	}
	if api := byName["api"]; api.Check != (track.Check{Kind: track.CheckTCP, Connect: netip.MustParseAddrPort("10.99.0.9:6443")}) || api.Interval != time.Second {
		t.Errorf("api %+v", api)
	}
	if p := byName["proc"]; p.IsCheck() || len(p.Command) != 1 {
		t.Errorf("proc %+v is not a process script", p)
	}
}

func TestKeepalivedCheckErrors(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{"vrrpd_http_check a {\n status_code 200\n}", "x.conf:1: vrrpd_http_check a: needs a url"},
		{"vrrpd_http_check a {\n url ftp://h/\n}", "want http:// or https://"},
		{"vrrpd_http_check a {\n url http://h/\n status_code 700\n}", "x.conf:3:"},
		{"vrrpd_http_check a {\n url http://h/\n connect_port 81\n}", "connect_port needs connect_ip"},
		{"vrrpd_tcp_check a {\n connect_ip 10.0.0.1\n}", "needs connect_port"},
		{"vrrpd_tcp_check a {\n connect_port 80\n}", "needs connect_ip and connect_port"},
		{"vrrpd_tcp_check a {\n connect_ip nohost\n connect_port 80\n}", "x.conf:2:"},
		{"vrrpd_tcp_check {\n}", "needs a name"},
	} {
		_, _, err := Parse("x.conf", []byte(tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.conf, err, tc.want)
		}
	}
	// A check runs no process: script and user are not its keywords.
	_, ws, err := Parse("x.conf", []byte("vrrpd_tcp_check a {\n connect_ip 10.0.0.1\n connect_port 80\n script /bin/sh\n}"))
	if err != nil || len(ws) != 1 || !strings.Contains(ws[0].Error(), `"script"`) {
		t.Errorf("script in a check: err %v warnings %v, want it ignored with a warning", err, ws)
	}
}

func TestYAMLChecksMatchKeepalived(t *testing.T) {
	y, _, err := Parse("c.yaml", []byte(checksYAML))
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := Parse("c.conf", []byte(checksConf))
	if err != nil {
		t.Fatal(err)
	}
	if len(y.Scripts) != len(k.Scripts) {
		t.Fatalf("yaml scripts %+v, conf %+v", y.Scripts, k.Scripts)
	}
	for i := range y.Scripts {
		a, b := y.Scripts[i], k.Scripts[i]
		a.Source, b.Source = Position{}, Position{}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("yaml %+v, conf %+v", a, b)
		}
	}
	byScript := func(a, b TrackScript) int { return strings.Compare(a.Script, b.Script) }
	slices.SortFunc(y.Instances[0].TrackScripts, byScript)
	slices.SortFunc(k.Instances[0].TrackScripts, byScript)
	if !slices.Equal(y.Instances[0].TrackScripts, k.Instances[0].TrackScripts) {
		t.Errorf("yaml tracks %+v, conf %+v", y.Instances[0].TrackScripts, k.Instances[0].TrackScripts)
	}
	for _, bad := range []struct{ from, to, line string }{
		{"      connect: 10.99.0.9:6443", "      connect: 10.99.0.9", "c.yaml:17:"},
		{"      statusCode: 200", "      statusCode: 99", "c.yaml:3:"},
		{"      url: https://10.99.0.8/", "      url: gopher://x/", "c.yaml:13:"},
		{"    tcp:\n", "    http: {url: http://x/}\n    tcp:\n", "c.yaml:16:"},
		{"    weight: -50", "    weight: -254", "c.yaml:11:"},
		{"  - name: api\n", "  - name: proc\n", "c.yaml:16:"},
		{"      - name: web", "      - name: web\n        weight: 300", "c.yaml:30:"},
	} {
		_, _, err := Parse("c.yaml", []byte(strings.Replace(checksYAML, bad.from, bad.to, 1)))
		if err == nil || !strings.HasPrefix(err.Error(), bad.line) {
			t.Errorf("%q: err %v, want one at %s", bad.to, err, bad.line)
		}
	}
}
