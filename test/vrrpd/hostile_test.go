package vrrpd_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// Bounds of TestHostileClients' attack: how many connections it holds, how long it
// lasts, and how many it may open in all (each evicted or closed connection is opened
// again after attackRedial).
const (
	attackIdle     = 1000
	attackSlow     = 200
	attackFor      = 90 * time.Second // at most: it stops after the 20 scrapes
	attackRedial   = time.Second
	attackMaxDials = 150000
)

// TestHostileClients: from another host, 1,000 idle TCP connections and 200 slowloris
// heads (a header sent a byte a second) against vrrpd's :9650, every one opened again a
// second after vrrpd closes it (about 1,200 new connections a second). Meanwhile a scraper on a third host gets at least 18 of 20
// scrapes of /metrics, each within 2 s; the probe socket (the kubelet's exec probes)
// answers every time; and the real keepalived backing vrrpd up at 100 ms adverts never
// takes the VIP over.
func TestHostileClients(t *testing.T) {
	if testing.Short() {
		t.Skip("namespace test: skipped with -short (make unit)")
	}
	lab := netlabtest.New(t, "client", "h1", "h2", "attacker")
	scraper, h1, h2, attacker := lab.Host("client"), lab.Host("h1"), lab.Host("h2"), lab.Host("attacker")

	stateDir := vrrpdtest.NewStateDir(t)
	v := startVrrpd(t, h1, writeConf(t, "h1.conf", oneInstanceConf(false, 150)), stateDir, "--metrics-address", ":9650", "--log-level", "info")
	startKeepalived(t, h2, writeConf(t, "h2.conf", oneInstanceConf(false, 100)))
	waitSoleHolder(t, 10*time.Second, time.Second, vip4, h1, h1, h2)
	before := v.instance(t, "VI_1").Transitions

	target := netip.AddrPortFrom(h1.Addr4, 9650).String()
	ctx, stop := context.WithTimeout(t.Context(), attackFor)
	defer stop()
	var (
		wg                   sync.WaitGroup
		dials, open, evicted atomic.Int64
		budget               = attackMaxDials
		budgetMu             sync.Mutex
	)
	takeDial := func() bool {
		budgetMu.Lock()
		defer budgetMu.Unlock()
		if budget == 0 {
			return false
		}
		budget--
		return true
	}
	// attack holds one connection open, doing what each (or nothing) between reads, and
	// opens it again when vrrpd closes it, until the attack ends.
	attack := func(each func(net.Conn, int) error) {
		defer wg.Done()
		for ctx.Err() == nil && takeDial() {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := attacker.DialContext(dctx, "tcp", target)
			cancel()
			dials.Add(1)
			if err == nil {
				open.Add(1)
				stopClose := context.AfterFunc(ctx, func() { c.Close() })
				for i := 0; ctx.Err() == nil; i++ {
					if each != nil && each(c, i) != nil {
						break
					}
					_ = c.SetReadDeadline(time.Now().Add(time.Second))
					if _, err := c.Read(make([]byte, 1)); err != nil {
						if ne, ok := err.(net.Error); ok && ne.Timeout() {
							continue
						}
						evicted.Add(1)
						break
					}
				}
				stopClose()
				c.Close()
				open.Add(-1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(attackRedial):
			}
		}
	}
	slowloris := func(c net.Conn, i int) error {
		var b []byte
		switch {
		case i == 0:
			b = []byte("GET /metrics HTTP/1.1\r\nHost: vrrpd\r\nX-Slow: ")
		default:
			b = []byte("a") // never the end of the header
		}
		_, err := c.Write(b)
		return err
	}
	for range attackIdle {
		wg.Add(1)
		go attack(nil)
	}
	for range attackSlow {
		wg.Add(1)
		go attack(slowloris)
	}
	defer func() {
		stop()
		wg.Wait()
		t.Logf("attack: %d connections opened in all, %d closed by vrrpd", dials.Load(), evicted.Load())
	}()
	// vrrpd's cap is far below the attack's 1,200: it cannot hold them all, and closes
	// the oldest idle ones as new ones come. Wait until every attacker has connected once.
	vrrpdtest.WaitFor(t, 30*time.Second, "every attacker connected", func() bool { return dials.Load() >= attackIdle+attackSlow })
	t.Logf("attack under way: %d connections opened, %d open now", dials.Load(), open.Load())

	// The keepalived backup must never hold the VIP during the attack.
	var takenOver atomic.Bool
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ctx.Err() == nil {
			if vrrpdtest.HasAddr(t, h2, vip4.Addr()) {
				takenOver.Store(true)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	client := scraper.HTTPClient(2 * time.Second)
	var answered int
	var slow []string
	for i := range 20 {
		start := time.Now()
		resp, err := client.Get("http://" + target + "/metrics")
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), "keepalived_vrrp_state") && time.Since(start) <= 2*time.Second {
				answered++
			} else {
				err = fmt.Errorf("status %d, read %v, %d bytes", resp.StatusCode, rerr, len(body))
			}
		}
		if err != nil {
			slow = append(slow, fmt.Sprintf("scrape %d after %v: %v", i, time.Since(start).Round(time.Millisecond), err))
		}
		// The probe, as the kubelet runs it: exec in the container, the state directory's socket.
		pctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		pstart := time.Now()
		out, perr := exec.CommandContext(pctx, vrrpdBinary(t), "probe", "live", "--state-dir", stateDir, "--timeout", "2s").CombinedOutput()
		cancel()
		if perr != nil || time.Since(pstart) > 3*time.Second {
			t.Errorf("probe %d during the attack: %v after %v: %s", i, perr, time.Since(pstart), out)
		}
		if d := time.Second - time.Since(start); d > 0 {
			time.Sleep(d)
		}
	}
	t.Logf("scrapes answered within 2 s: %d of 20 (attack holding %d connections); missed: %v", answered, open.Load(), slow)
	if answered < 18 {
		t.Errorf("%d of 20 scrapes answered within 2 s, want at least 18: %s", answered, strings.Join(slow, "; "))
	}
	stop()
	<-watchDone
	if takenOver.Load() {
		t.Error("the keepalived backup held the VIP during the attack")
	}
	if after := v.instance(t, "VI_1").Transitions; after != before {
		t.Errorf("vrrpd's instance changed state %d times during the attack", after-before)
	}
	if hs := vrrpdtest.Holders(t, vip4.Addr(), h1, h2); len(hs) != 1 || hs[0] != h1.Name {
		t.Errorf("after the attack the VIP is held by %v, want h1 alone", hs)
	}
}
