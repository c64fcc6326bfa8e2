package metrics_test

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
)

// TestUpFollowsHealth: keepalived_up and /healthz give the same answer, from the one
// health function; /livez has its own.
func TestUpFollowsHealth(t *testing.T) {
	var sick, dead atomic.Pointer[error]
	check := func(p *atomic.Pointer[error]) func() error {
		return func() error {
			if e := p.Load(); e != nil {
				return *e
			}
			return nil
		}
	}
	srv := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{Health: check(&sick), Live: check(&dead)})
	expect := func(when string, up string, health, live int) {
		t.Helper()
		_, body := get(t, srv.URL+metrics.MetricsPath)
		if !strings.Contains(body, "\nkeepalived_up "+up+"\n") {
			t.Errorf("%s: keepalived_up is not %s in:\n%s", when, up, grepLines(body, "keepalived_up"))
		}
		if resp, body := get(t, srv.URL+metrics.HealthPath); resp.StatusCode != health {
			t.Errorf("%s: /healthz %s %q, want %d", when, resp.Status, body, health)
		}
		if resp, body := get(t, srv.URL+metrics.LivePath); resp.StatusCode != live {
			t.Errorf("%s: /livez %s %q, want %d", when, resp.Status, body, live)
		}
	}
	expect("healthy", "1", http.StatusOK, http.StatusOK)
	e := errors.New("1 instance(s) could not start")
	sick.Store(&e)
	expect("an instance could not start", "0", http.StatusServiceUnavailable, http.StatusOK)
	stalled := errors.New("daemon loop silent")
	dead.Store(&stalled)
	sick.Store(&stalled)
	expect("stalled", "0", http.StatusServiceUnavailable, http.StatusServiceUnavailable)
}

// TestBuildInfo: Options.Program adds <program>_build_info.
func TestBuildInfo(t *testing.T) {
	srv := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{Program: "vrrpd"})
	_, body := get(t, srv.URL+metrics.MetricsPath)
	if want := `vrrpd_build_info{goversion="` + runtime.Version() + `",version="dev"} 1`; !strings.Contains(body, want) {
		t.Errorf("%q not in:\n%s", want, grepLines(body, "build_info"))
	}
}

func grepLines(body, word string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestVIPMaster: one vrrpd_vip_master series per VIP, 1 for a MASTER's, 0 for others.
func TestVIPMaster(t *testing.T) {
	srv := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{})
	_, body := get(t, srv.URL+metrics.MetricsPath)
	got := grepLines(body, "vrrpd_vip_master{")
	want := `vrrpd_vip_master{intf="eth0",name="VI_1",vip="10.99.0.100",vrid="51"} 1` + "\n" +
		`vrrpd_vip_master{intf="eth0",name="VI_6",vip="fd00:99::100",vrid="52"} 0`
	if got != want {
		t.Errorf("vrrpd_vip_master:\n%s\nwant\n%s", got, want)
	}
}
