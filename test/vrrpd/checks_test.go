package vrrpd_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/kubeproxyhc"
)

// listenIn opens a TCP listener inside h (sockets keep the namespace they were made in).
func listenIn(t *testing.T, h *netlab.Host, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatalf("listen in %s on %s: %v", h.Name, addr, err)
	}
	return ln
}

// TestNativeChecksMoveVIP: a vrrpd_http_check and a vrrpd_tcp_check, each tracked with a
// negative weight, hand the VIP to the peer while failing and take it back when they pass
// (preempt), with no process spawned: the HTTP endpoint answers as kube-proxy's health
// check does (503 without local endpoints), the TCP one is a listener that comes and goes.
func TestNativeChecksMoveVIP(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	hosts := []*netlab.Host{h1, h2}
	hc := kubeproxyhc.Serve(listenIn(t, h1, "127.0.0.1:10256"), "ns", "web")
	defer hc.Close()
	hc.SetEndpoints(1)
	tcpAddr := h1.Addr4.String() + ":6443"
	ln := listenIn(t, h1, tcpAddr)
	go acceptAll(ln)
	defer func() { ln.Close() }()

	checks := fmt.Sprintf(`vrrpd_http_check web {
  url http://127.0.0.1:10256/
  status_code 200
  interval 1
  timeout 1
  fall 2
}
vrrpd_tcp_check api {
  connect_ip %s
  connect_port 6443
  interval 1
  weight -60
}
`, h1.Addr4)
	track := "track_check {\n  web weight -60\n  api\n}\n"
	conf1 := "global_defs {\n  vrrp_version 3\n}\n" + checks + vrrpInstance("VI_1", 51, 150, "0.1", track, vip4.String())
	conf2 := "global_defs {\n  vrrp_version 3\n}\n" + vrrpInstance("VI_1", 51, 100, "0.1", "", vip4.String())
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", conf1), "")
	startVrrpd(t, h2, writeConf(t, "h2.conf", conf2), "")
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)

	// No local endpoint: 503 twice (fall 2), 150-60 = 90 < 100, h2 preempts.
	hc.SetEndpoints(0)
	start := time.Now()
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	if took := time.Since(start); took < time.Second {
		t.Errorf("the VIP moved %v after the first 503; fall 2 at interval 1 s needs two", took)
	}
	in := d1.instance(t, "VI_1")
	if in.Priority != 90 || len(in.TrackScripts) != 2 {
		t.Errorf("h1 status %+v, want effective priority 90", in)
	}
	for _, ts := range in.TrackScripts {
		if want := map[string]string{"web": "FAILED", "api": "GOOD"}[ts.Script]; ts.Status != want {
			t.Errorf("tracker %s is %s, want %s", ts.Script, ts.Status, want)
		}
	}
	if got := metric(d1.scrape(t), "keepalived_script_status", `name="web"`); got != 0 {
		t.Errorf("keepalived_script_status{web} = %v while failing", got)
	}
	hc.SetEndpoints(3)
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)

	// The TCP listener goes away: connection refused, h2 takes over; back, h1 again.
	ln.Close()
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	ln = listenIn(t, h1, tcpAddr)
	go acceptAll(ln)
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
}

func acceptAll(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
