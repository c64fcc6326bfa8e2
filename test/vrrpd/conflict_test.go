package vrrpd_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// conflictOf is vrrpd_vip_conflict for vip answered by mac in one scrape (0 when absent).
func conflictOf(s map[string]float64, vip netip.Prefix, mac string) float64 {
	return metric(s, "vrrpd_vip_conflict", `vip="`+vip.Addr().String()+`"`, `mac="`+mac+`"`)
}

// conflicts is every vrrpd_vip_conflict series of one scrape.
func conflicts(s map[string]float64) []string {
	var out []string
	for k, v := range s {
		if strings.HasPrefix(k, "vrrpd_vip_conflict{") && v != 0 {
			out = append(out, k)
		}
	}
	return out
}

// nft runs nft in h with args, and stdin as its standard input when not empty.
func nft(t *testing.T, h *netlab.Host, stdin string, args ...string) {
	t.Helper()
	cmd := h.Command(t.Context(), "nft", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft %v: %v\n%s", args, err, out)
	}
}

// TestVIPConflictSplit: two vrrpd (IPv4 and IPv6 instances at 100 ms adverts), VRRP
// dropped in the backup's INPUT hook, as a misconfigured firewall or a switch's broken
// multicast snooping does: the backup takes over and both hosts hold both VIPs. Each
// reports the other's MAC in vrrpd_vip_conflict within 5 s of the second holder (scraped
// every 100 ms), warns once, and neither re-announces; once the rule goes, the backup
// steps down and the series are gone within 5 s, the master holding the VIPs alone, and
// it announces them once, so that a client whose neighbour entries h2's takeover moved
// comes back to it. The
// alert's metric is checked against this scrape (TestCountersAtAdvertRateAndMonitoringQueries
// cannot: a healthy pair has none).
func TestVIPConflictSplit(t *testing.T) {
	_, client, h1, h2 := newLab(t)
	v1 := startVrrpd(t, h1, writeConf(t, "h1.conf", dualConf(150)), "")
	v2 := startVrrpd(t, h2, writeConf(t, "h2.conf", dualConf(100)), "")
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, h1, h2)
	waitSoleHolder(t, 5*time.Second, 0, vip6, h1, h1, h2)
	if c := append(conflicts(v1.scrape(t)), conflicts(v2.scrape(t))...); len(c) > 0 {
		t.Fatalf("conflicts before the split: %v", c)
	}
	// The client talks to the VIPs: its neighbour entries point at h1.
	for _, args := range [][]string{{"-c1", "-W1", vip4.Addr().String()}, {"-6", "-c1", "-W1", vip6.Addr().String()}} {
		if out, err := client.Command(t.Context(), "ping", args...).CombinedOutput(); err != nil {
			t.Fatalf("client ping %v: %v\n%s", args, err, out)
		}
	}
	waitNeighbor(t, client, vip4.Addr(), h1)
	waitNeighbor(t, client, vip6.Addr(), h1)

	nft(t, h2, "table inet split {\n chain in {\n  type filter hook input priority 0;\n  meta l4proto vrrp drop\n }\n}\n", "-f", "-")
	var split time.Time
	vrrpdtest.WaitFor(t, 10*time.Second, "both hosts holding both VIPs", func() bool {
		both := len(vrrpdtest.Holders(t, vip4.Addr(), h1, h2)) == 2 && len(vrrpdtest.Holders(t, vip6.Addr(), h1, h2)) == 2
		if both {
			split = time.Now()
		}
		return both
	})
	// h2's takeover announcements moved the client's entries to it.
	waitNeighbor(t, client, vip4.Addr(), h2)
	waitNeighbor(t, client, vip6.Addr(), h2)
	type side struct {
		v         *vrrpd
		other     *netlab.Host
		reported  time.Time
		lastScrap map[string]float64
	}
	sides := []*side{{v: v1, other: h2}, {v: v2, other: h1}}
	for deadline := split.Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		done := true
		for _, s := range sides {
			if !s.reported.IsZero() {
				continue
			}
			sc := s.v.scrape(t)
			s.lastScrap = sc
			if conflictOf(sc, vip4, s.other.MAC.String()) == 1 && conflictOf(sc, vip6, s.other.MAC.String()) == 1 {
				s.reported = time.Now()
			} else {
				done = false
			}
		}
		if done {
			break
		}
	}
	for _, s := range sides {
		if s.reported.IsZero() {
			t.Fatalf("%s never reported %s's MAC %s for both VIPs; its conflicts: %v", s.v.Name, s.other.Name, s.other.MAC, conflicts(s.lastScrap))
		}
		took := s.reported.Sub(split)
		t.Logf("%s reported the conflict %v after both held the VIPs", s.v.Name, took.Round(time.Millisecond))
		if took > 5*time.Second {
			t.Errorf("%s reported the conflict %v after the split, want within 5 s", s.v.Name, took.Round(time.Millisecond))
		}
		sc := s.v.scrape(t)
		for _, vip := range []netip.Prefix{vip4, vip6} {
			name := map[bool]string{true: "VI_4", false: "VI_6"}[vip.Addr().Is4()]
			if metric(sc, "vrrpd_vip_conflict", `name="`+name+`"`, `intf="eth0"`, `vip="`+vip.Addr().String()+`"`) != 1 {
				t.Errorf("%s: the conflict on %v lacks the instance's labels: %v", s.v.Name, vip, conflicts(sc))
			}
		}
		if c := conflicts(sc); len(c) != 2 {
			t.Errorf("%s: %d conflict series, want 2 (one per VIP, the other host's MAC only): %v", s.v.Name, len(c), c)
		}
	}
	// A few seconds more of the split: the conflict stays, one warning per VIP.
	time.Sleep(3 * time.Second)
	for _, s := range sides {
		if c := conflicts(s.v.scrape(t)); len(c) != 2 {
			t.Errorf("%s: conflicts %v during the split", s.v.Name, c)
		}
		if n := strings.Count(s.v.Output(), "VIP answered by another host too"); n != 2 {
			t.Errorf("%s logged the conflict %d times, want once per VIP", s.v.Name, n)
		}
	}

	nft(t, h2, "", "delete", "table", "inet", "split")
	healed := time.Now()
	var cleared time.Time
	vrrpdtest.WaitFor(t, 15*time.Second, "the conflicts gone on both hosts", func() bool {
		if len(conflicts(v1.scrape(t))) == 0 && len(conflicts(v2.scrape(t))) == 0 {
			cleared = time.Now()
			return true
		}
		return false
	})
	took := cleared.Sub(healed)
	t.Logf("conflicts gone %v after the split healed", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("conflicts gone %v after the split healed, want within 5 s", took.Round(time.Millisecond))
	}
	waitSoleHolder(t, 5*time.Second, 500*time.Millisecond, vip4, h1, h1, h2)
	if !strings.Contains(v1.Output(), "VIP no longer answered by another host") {
		t.Error("no line when the conflict ended")
	}
	// h1 announced the VIPs once when the other holder fell silent: the client's entries,
	// which h2's announcements moved, point at h1 again without the client sending
	// anything.
	waitNeighbor(t, client, vip4.Addr(), h1)
	waitNeighbor(t, client, vip6.Addr(), h1)
	if n := strings.Count(v1.Output(), "announcing VIP again"); n != 2 {
		t.Errorf("h1 announced the VIPs again %d times at the conflicts' end, want once each", n)
	}
}

// TestVIPConflictStaticHolder: a host that does not speak VRRP has the VIPs as static
// addresses (IPv6 without DAD, as a host configured by hand before vrrpd came). The
// master reports it, with that host's MAC, within 5 s; vrrpd leaves it alone (the
// address stays there, vrrpd stays MASTER); once the address is removed the conflict
// ends.
func TestVIPConflictStaticHolder(t *testing.T) {
	_, client, h1, h2 := newLab(t)
	v1 := startVrrpd(t, h1, writeConf(t, "h1.conf", dualConf(150)), "")
	startVrrpd(t, h2, writeConf(t, "h2.conf", dualConf(100)), "")
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, h1, h2)
	waitSoleHolder(t, 5*time.Second, 0, vip6, h1, h1, h2)

	ip := func(args ...string) {
		t.Helper()
		if out, err := client.Command(t.Context(), "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	ip("addr", "add", vip4.String(), "dev", client.Link)
	ip("addr", "add", vip6.String(), "dev", client.Link, "nodad")
	added := time.Now()
	mac := client.MAC.String()
	var sc map[string]float64
	vrrpdtest.WaitFor(t, 15*time.Second, "the master reporting the static holder", func() bool {
		sc = v1.scrape(t)
		return conflictOf(sc, vip4, mac) == 1 && conflictOf(sc, vip6, mac) == 1
	})
	took := time.Since(added)
	t.Logf("static holder %s reported %v after its addresses were added", mac, took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("reported %v after the static addresses, want within 5 s", took.Round(time.Millisecond))
	}
	if st := v1.instance(t, "VI_4").State; st != "MASTER" {
		t.Errorf("VI_4 is %s during the conflict, want MASTER still", st)
	}
	time.Sleep(2 * time.Second)
	if !vrrpdtest.HasAddr(t, client, vip4.Addr()) || !vrrpdtest.HasAddr(t, client, vip6.Addr()) {
		t.Error("the static addresses are gone from their host")
	}
	if c := conflicts(v1.scrape(t)); len(c) != 2 {
		t.Errorf("conflicts %v, want the two VIPs with %s", c, mac)
	}

	ip("addr", "del", vip4.String(), "dev", client.Link)
	ip("addr", "del", vip6.String(), "dev", client.Link)
	removed := time.Now()
	vrrpdtest.WaitFor(t, 15*time.Second, "the conflict gone", func() bool { return len(conflicts(v1.scrape(t))) == 0 })
	t.Logf("gone %v after the static addresses were removed", time.Since(removed).Round(time.Millisecond))
}

// TestNoVIPConflictOnFailover: a healthy pair reports no conflict, through a failover
// (the master stopped: the backup takes over and announces) and a preemption (the master
// back: it announces while the old one steps down, both holding the VIPs for a moment):
// vrrpd_vip_conflict sampled every 100 ms on both hosts for 10 s after the failover is
// never there, and neither logs a conflict.
func TestNoVIPConflictOnFailover(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	conf1 := writeConf(t, "h1.conf", dualConf(150))
	v1 := startVrrpd(t, h1, conf1, "")
	v2 := startVrrpd(t, h2, writeConf(t, "h2.conf", dualConf(100)), "")
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, h1, h2)

	var samples, seen int
	var found []string
	sample := func(vs ...*vrrpd) {
		for _, v := range vs {
			samples++
			if c := conflicts(v.scrape(t)); len(c) > 0 {
				seen++
				found = c
			}
		}
	}
	v1.MustStop(t) // priority 0: h2 takes over and announces
	failover := time.Now()
	vrrpdtest.WaitFor(t, 5*time.Second, "h2 taking over", func() bool {
		sample(v2)
		return vrrpdtest.HasAddr(t, h2, vip4.Addr()) && vrrpdtest.HasAddr(t, h2, vip6.Addr())
	})
	for time.Since(failover) < 4*time.Second {
		sample(v2)
		time.Sleep(100 * time.Millisecond)
	}
	first := v1
	v1 = startVrrpd(t, h1, conf1, "") // preempts
	for time.Since(failover) < 10*time.Second || !vrrpdtest.HasAddr(t, h1, vip4.Addr()) {
		if time.Since(failover) > 20*time.Second {
			t.Fatal("h1 never took the VIPs back")
		}
		sample(v1, v2)
		time.Sleep(100 * time.Millisecond)
	}
	waitSoleHolder(t, 5*time.Second, 0, vip4, h1, h1, h2)
	for range 10 { // a second more, past the new master's first probes
		sample(v1, v2)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d scrapes over %v, %d with a conflict", samples, time.Since(failover).Round(time.Second), seen)
	if seen > 0 {
		t.Errorf("%d of %d scrapes showed a conflict, e.g. %v", seen, samples, found)
	}
	for _, v := range []*vrrpd{first, v1, v2} {
		if strings.Contains(v.Output(), "answered by another host") {
			t.Errorf("%s logged a conflict:\n%s", v.Name, grepLines(v.Output(), "answered by another host"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(out)
}
