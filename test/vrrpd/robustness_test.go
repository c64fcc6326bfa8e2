package vrrpd_test

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport/rawinject"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestKill9AndRestart: a master killed with SIGKILL leaves its VIPs behind; the backup
// takes over (for a moment both hold the VIP: the dead host cannot know); the restarted
// daemon removes what its record says it added before it joins, then preempts. Once
// settled, exactly one host holds each VIP.
func TestKill9AndRestart(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	hosts := []*netlab.Host{h1, h2}
	conf1 := writeConf(t, "h1.conf", dualConf(150))
	d1 := startVrrpd(t, h1, conf1, "")
	startVrrpd(t, h2, writeConf(t, "h2.conf", dualConf(100)), "")
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	waitSoleHolder(t, 3*time.Second, 0, vip6, h1, hosts...)

	d1.Kill()
	vrrpdtest.WaitFor(t, 3*time.Second, "h2 taking over from the killed master", func() bool {
		return hasAddr(t, h2, vip4) && hasAddr(t, h2, vip6)
	})
	if !hasAddr(t, h1, vip4) {
		t.Fatal("kill -9 should have left the VIP on h1 (nothing could remove it); the test proves nothing")
	}

	d1 = startVrrpd(t, h1, conf1, d1.stateDir)
	waitSoleHolder(t, 5*time.Second, time.Second, vip4, h1, hosts...)
	waitSoleHolder(t, 5*time.Second, 0, vip6, h1, hosts...)
	if out := d1.Output(); !strings.Contains(out, "removed stale VIP left by a previous run") {
		t.Errorf("restarted daemon did not report removing the stale VIPs:\n%s", out)
	}
}

// TestReload: SIGHUP with an unchanged file changes nothing (no transition, counters keep
// counting, no gap in the master's adverts); a changed priority and a removed instance
// take effect without restarting the others.
func TestReload(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	hosts := []*netlab.Host{h1, h2}
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", dualConf(150)), "")
	conf2 := writeConf(t, "h2.conf", dualConf(100))
	d2 := startVrrpd(t, h2, conf2, "")
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	waitSoleHolder(t, 3*time.Second, 0, vip6, h1, hosts...)
	obs := observe(t, h2)
	time.Sleep(300 * time.Millisecond)

	before1, before2 := d1.instance(t, "VI_4"), d2.instance(t, "VI_4")
	hupAt := time.Now()
	d1.MustSignal(t, syscall.SIGHUP)
	d2.MustSignal(t, syscall.SIGHUP)
	vrrpdtest.WaitFor(t, 2*time.Second, "both daemons reloading", func() bool {
		return strings.Count(d1.Output(), "configuration reloaded") == 1 &&
			strings.Count(d2.Output(), "configuration reloaded") == 1
	})
	time.Sleep(500 * time.Millisecond) // for a transition the reload would cause
	// Counters reach /status within the daemon's publish interval (500 ms) of the first
	// change after a publication, so one read now can still see the publication before
	// the reload: read until both moved, for 2 s at most.
	var after1, after2 metrics.InstanceStatus
	counted := func() bool {
		after1, after2 = d1.instance(t, "VI_4"), d2.instance(t, "VI_4")
		return after1.Counters["advert_sent"] > before1.Counters["advert_sent"] &&
			after2.Counters["advert_rcvd"] > before2.Counters["advert_rcvd"]
	}
	for end := time.Now().Add(2 * time.Second); !counted() && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	if after1.Transitions != before1.Transitions || after2.Transitions != before2.Transitions ||
		after1.State != "MASTER" || after2.State != "BACKUP" {
		t.Fatalf("reload of an unchanged config changed states: h1 %s (%d -> %d transitions), h2 %s (%d -> %d)",
			after1.State, before1.Transitions, after1.Transitions, after2.State, before2.Transitions, after2.Transitions)
	}
	if !(after1.Counters["advert_sent"] > before1.Counters["advert_sent"]) || !(after2.Counters["advert_rcvd"] > before2.Counters["advert_rcvd"]) {
		t.Fatalf("counters did not keep counting across the reload: sent %d -> %d, rcvd %d -> %d",
			before1.Counters["advert_sent"], after1.Counters["advert_sent"], before2.Counters["advert_rcvd"], after2.Counters["advert_rcvd"])
	}
	if !strings.Contains(d1.Output(), "kept=2") {
		t.Error("reload log does not say both instances were kept")
	}
	// No blip: h1's adverts never paused long enough for a backup to presume it dead.
	// (Not a timing assertion on the 100 ms rhythm: this machine is shared and loaded.)
	mdi := vrrp.MasterDownInterval(100, 100*time.Millisecond)
	if gap := obs.maxGap(h1.Addr4, 51, hupAt.Add(-300*time.Millisecond), time.Now()); gap >= mdi {
		t.Errorf("h1's adverts paused %v around the reload (SIGHUP at %s)\n%s", gap, hupAt.Format("15:04:05.000"), obs.timeline(h1.Addr4, 51, hupAt.Add(-300*time.Millisecond), time.Now()))
	}
	waitSoleHolder(t, 0, 0, vip4, h1, hosts...)

	// A changed priority: h2 now outranks h1 and takes over, h1 steps down.
	if err := os.WriteFile(conf2, []byte(dualConf(200)), 0o644); err != nil {
		t.Fatal(err)
	}
	d2.MustSignal(t, syscall.SIGHUP)
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	waitSoleHolder(t, 3*time.Second, 0, vip6, h2, hosts...)

	// A removed instance resigns (priority 0) and drops its VIP: h1 takes VI_6 over.
	onlyV4 := dualConf(200)
	onlyV4 = onlyV4[:strings.Index(onlyV4, "vrrp_instance VI_6")]
	if err := os.WriteFile(conf2, []byte(onlyV4), 0o644); err != nil {
		t.Fatal(err)
	}
	d2.MustSignal(t, syscall.SIGHUP)
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip6, h1, hosts...)
	waitSoleHolder(t, 0, 0, vip4, h2, hosts...)
	if n := len(d2.mustStatus(t).Instances); n != 1 {
		t.Errorf("h2 runs %d instances after removing one, want 1", n)
	}
}

// TestMalformedPackets injects broken advertisements from the client host and checks that
// each lands in its own counter on the backup, that nothing else changes, and that the
// daemons keep running.
func TestMalformedPackets(t *testing.T) {
	_, client, h1, h2 := newLab(t)
	hosts := []*netlab.Host{h1, h2}
	conf := func(prio int) string {
		return dualConf(prio) + vrrpInstance("VI_2", 53, prio, "1", "version 2\n"+passAuth, "10.99.0.102/24")
	}
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", conf(150)), "")
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", conf(100)), "")
	waitSoleHolder(t, 3*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	waitSoleHolder(t, 5*time.Second, 0, netip.MustParsePrefix("10.99.0.102/24"), h1, hosts...)

	src, group := client.Addr4, vrrp.MulticastIPv4
	v3 := func() []byte {
		a := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: 51, Priority: 1,
			MaxAdvertInterval: 10, Addresses: []netip.Addr{vip4.Addr()}}
		b, err := a.AppendMarshal(nil, src, group)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v2 := func(pass string) []byte {
		a := vrrp.Advertisement{Version: vrrp.Version2, Type: vrrp.TypeAdvertisement, VRID: 53, Priority: 1,
			AdvertIntervalSeconds: 1, AuthType: vrrp.AuthSimple, Addresses: []netip.Addr{netip.MustParseAddr("10.99.0.102")}}
		copy(a.AuthData[:], pass)
		b, err := a.AppendMarshal(nil, src, group)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name     string
		instance string
		counter  string // metric name
		ttl      uint8
		payload  func() []byte
	}{
		{"ttl 254", "VI_4", "keepalived_vrrp_ip_ttl_err", 254, v3},
		{"bad checksum", "VI_4", "vrrpd_checksum_err", 255, func() []byte { b := v3(); b[7] ^= 0x5a; return b }},
		{"truncated", "VI_4", "keepalived_vrrp_packet_len_err", 255, func() []byte { return v3()[:10] }},
		{"wrong version", "VI_4", "vrrpd_version_err", 255, func() []byte { b := v3(); b[0] = 1<<4 | 1; return b }},
		{"unknown type", "VI_4", "keepalived_vrrp_invalid_type_rcvd", 255, func() []byte { b := v3(); b[0] = 3<<4 | 2; return b }},
		{"wrong password", "VI_2", "keepalived_vrrp_auth_failure", 255, func() []byte { return v2("wrong") }},
	}
	const n = 3
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			before := errorCounters(d2.scrape(t))
			st1, st2 := d1.mustStatus(t), d2.mustStatus(t)
			for range n {
				err := client.Do(func() error {
					return rawinject.SendIPv4(client.Link, rawinject.IPv4{Src: src, Dst: group, TTL: tc.ttl, Payload: tc.payload()})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			key := tc.counter + "/" + tc.instance
			vrrpdtest.WaitFor(t, 2*time.Second, key+" to count the injected packets", func() bool {
				return errorCounters(d2.scrape(t))[key] >= before[key]+n
			})
			time.Sleep(250 * time.Millisecond) // anything else that would change has by now
			after := errorCounters(d2.scrape(t))
			want := maps.Clone(before)
			want[key] += n
			for k, v := range after {
				if v != want[k] {
					t.Errorf("%s = %v, want %v", k, v, want[k])
				}
			}
			for _, p := range []struct {
				d      *vrrpd
				before []string
			}{{d1, states(st1)}, {d2, states(st2)}} {
				if !p.d.Running() {
					t.Fatalf("%s died", p.d.Name)
				}
				if got := states(p.d.mustStatus(t)); strings.Join(got, ",") != strings.Join(p.before, ",") {
					t.Errorf("%s states changed: %v -> %v", p.d.Name, p.before, got)
				}
			}
		})
	}

	// Packets no instance can own are counted per interface: a runt too short to name a
	// VRID in vrrpd_malformed_dropped_total, an advert for a VRID nobody here runs (another
	// router on the segment) in vrrpd_other_vrid_total, never as malformed.
	t.Run("unknown_vrid_and_runt", func(t *testing.T) {
		sock := []string{`intf="eth0"`, `family="inet"`}
		s := d2.scrape(t)
		malformed, otherVRID := metric(s, "vrrpd_malformed_dropped_total", sock...), metric(s, "vrrpd_other_vrid_total", sock...)
		other := v3()
		other[1] = 99 // an advert for VRID 99, which nobody here runs
		for _, payload := range [][]byte{other, v3()[:5]} {
			if err := client.Do(func() error {
				return rawinject.SendIPv4(client.Link, rawinject.IPv4{Src: src, Dst: group, Payload: payload})
			}); err != nil {
				t.Fatal(err)
			}
		}
		vrrpdtest.WaitFor(t, 2*time.Second, "the runt and the other VRID counted apart on eth0", func() bool {
			s := d2.scrape(t)
			return metric(s, "vrrpd_malformed_dropped_total", sock...) == malformed+1 &&
				metric(s, "vrrpd_other_vrid_total", sock...) == otherVRID+1
		})
	})
}

// errorCounters returns every per-instance error counter of a scrape as
// "metric/instance" -> value (advert_rcvd and advert_sent move by themselves and are left
// out).
func errorCounters(samples map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range samples {
		name, labels, ok := strings.Cut(k, "{")
		if !ok || !(strings.HasSuffix(name, "_err") || strings.Contains(name, "auth") || strings.Contains(name, "invalid_type") || strings.Contains(name, "pri_zero")) {
			continue
		}
		i := strings.Index(labels, `name="`)
		if i < 0 {
			continue
		}
		inst := labels[i+6:]
		inst = inst[:strings.IndexByte(inst, '"')]
		out[name+"/"+inst] += v
	}
	return out
}

// states lists "name=STATE/transitions" for every instance.
func states(s metrics.Status) []string {
	var out []string
	for _, in := range s.Instances {
		out = append(out, fmt.Sprintf("%s=%s/%d", in.Name, in.State, in.Transitions))
	}
	return out
}
