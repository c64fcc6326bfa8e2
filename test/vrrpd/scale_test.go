package vrrpd_test

// Issue 31, standalone: one vrrp_instance of thousands of VIPs, vrrpd against keepalived
// 2.2.7 with the same keepalived.conf.
//
// Addresses: 2,000 IPv4 VIPs do not fit the lab's 10.99.0.0/24, so they are /32s in
// 10.99.1.1-10.99.8.250 (scaleVIPs). They exist only inside the lab's own namespaces, on
// its bridge, which has no route out, as the /24 does; IPv6 stays in fd00:99::/64.

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// scaleVIPs are n VIPs of one family, in configuration order: IPv4 /32s from 10.99.1.1
// (250 to a third octet, 10.99.1-8.x for 2,000), or fd00:99::5:<i>/64.
func scaleVIPs(n int, ipv6 bool) []netip.Prefix {
	out := make([]netip.Prefix, 0, n)
	for i := range n {
		if ipv6 {
			out = append(out, netip.MustParsePrefix(fmt.Sprintf("fd00:99::5:%x/64", i+1)))
		} else {
			out = append(out, netip.MustParsePrefix(fmt.Sprintf("10.99.%d.%d/32", 1+i/250, 1+i%250)))
		}
	}
	return out
}

// scaleConf is a keepalived.conf with one VRRPv3 instance (VRID 71) of the VIPs, advertising
// every advertInt seconds, with extra global_defs lines (each ending in a newline).
func scaleConf(priority int, advertInt, globals string, vips []netip.Prefix) string {
	s := make([]string, len(vips))
	for i, v := range vips {
		s[i] = v.String()
	}
	return "global_defs {\n  vrrp_version 3\n" + globals + "}\n" + vrrpInstance("VI_1", scaleVRID, priority, advertInt, "", s...)
}

const scaleVRID = 71

// holding counts how many of vips h has on its lab link. A dump of thousands of addresses
// that changed while it was read (NLM_F_DUMP_INTR) is read again.
func holding(t testing.TB, h *netlab.Host, vips []netip.Prefix) int {
	t.Helper()
	for tries := 0; ; tries++ {
		have, err := h.AddrsOn(h.Link)
		if errors.Is(err, netlink.ErrDumpInterrupted) && tries < 100 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return countVIPs(have, vips)
	}
}

// waitAllOn waits until want holds every VIP and other none, then checks for settle that it
// stays so (exactly one master, never an address on both).
func waitAllOn(t testing.TB, timeout, settle time.Duration, vips []netip.Prefix, want, other *netlab.Host) {
	t.Helper()
	var a, b int
	vrrpdtest.WaitFor(t, timeout, fmt.Sprintf("all %d VIPs on %s, none on %s", len(vips), want.Name, other.Name), func() bool {
		a, b = holding(t, want, vips), holding(t, other, vips)
		return a == len(vips) && b == 0
	})
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if a, b = holding(t, want, vips), holding(t, other, vips); a != len(vips) || b != 0 {
			t.Fatalf("after settling: %s holds %d of %d VIPs (missing at %s: %v), %s holds %d", want.Name, a, len(vips),
				time.Now().Format("15:04:05.000"), first(missingOn(t, want, vips)), other.Name, b)
		}
	}
}

// missingOn are the VIPs h does not have, for a failure's message.
func missingOn(t testing.TB, h *netlab.Host, vips []netip.Prefix) []netip.Addr {
	t.Helper()
	have, err := h.AddrsOn(h.Link)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		t.Fatal(err)
	}
	on := make(map[netip.Addr]bool, len(have))
	for _, p := range have {
		on[p.Addr()] = true
	}
	var out []netip.Addr
	for _, v := range vips {
		if !on[v.Addr()] {
			out = append(out, v.Addr())
		}
	}
	return out
}

// advertLog keeps the latest advertisement of each source heard on a lab host (the
// client, which takes no part), decoded, with the count heard.
type advertLog struct {
	mu    sync.Mutex
	last  map[netip.Addr]vrrp.Advertisement
	count map[netip.Addr]int
	bad   []string
}

func listenAdverts(t testing.TB, h *netlab.Host, fam transport.Family, vrid uint8) *advertLog {
	t.Helper()
	l := &advertLog{last: map[netip.Addr]vrrp.Advertisement{}, count: map[netip.Addr]int{}}
	c := openIn(t, h, fam, "listening")
	done := make(chan struct{})
	go func() {
		defer close(done)
		pkts := make([]transport.Packet, 16)
		for {
			n, err := c.ReadBatch(pkts)
			if err != nil {
				return
			}
			for _, p := range pkts[:n] {
				if _, id, ok := vrrp.ParseHeader(p.Payload); !ok || id != vrid {
					continue
				}
				var a vrrp.Advertisement
				err := a.Unmarshal(p.Payload, p.Src, p.Dst)
				l.mu.Lock()
				if err != nil {
					l.bad = append(l.bad, fmt.Sprintf("from %v: %v", p.Src, err))
				} else {
					a.Addresses = slices.Clone(a.Addresses)
					l.last[p.Src], l.count[p.Src] = a, l.count[p.Src]+1
				}
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return l
}

// latest waits up to timeout for an advertisement of src of priority prio heard after
// the call, and returns it.
func (l *advertLog) latest(t testing.TB, src netip.Addr, prio uint8, timeout time.Duration) vrrp.Advertisement {
	t.Helper()
	l.mu.Lock()
	from := l.count[src]
	l.mu.Unlock()
	var a vrrp.Advertisement
	vrrpdtest.WaitFor(t, timeout, fmt.Sprintf("an advert of priority %d from %v", prio, src), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		a = l.last[src]
		return l.count[src] > from && a.Priority == prio
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) > 0 {
		t.Errorf("adverts that do not decode: %s", strings.Join(l.bad, "; "))
	}
	return a
}

// TestScaleKeepalivedInterop: one vrrp_instance of 2,000 IPv4 VIPs, and one of 1,000 IPv6
// VIPs, vrrpd (priority 150) and keepalived 2.2.7 (100) with the same keepalived.conf.
// vrrpd is master with every VIP, keepalived none; vrrpd stops (a priority-0 advert) and
// keepalived takes every VIP over; vrrpd starts again and preempts, taking every VIP
// back. Exactly one host holds the VIPs after each step, and vrrpd never goes FAULT. The adverts of both, heard on
// the client, carry the same address list: keepalived's rule (vrrp.AddressesThatFit: 255
// IPv4, 89 IPv6 at MTU 1500), the first ones in configuration order, the rest excluded
// (added on MASTER, never advertised).
func TestScaleKeepalivedInterop(t *testing.T) {
	keepalivedBinary(t)
	for _, fam := range []struct {
		name string
		ipv6 bool
		n    int
	}{{"ipv4-2000", false, 2000}, {"ipv6-1000", true, 1000}} {
		t.Run(fam.name, func(t *testing.T) {
			_, client, h1, h2 := newLab(t)
			vips := scaleVIPs(fam.n, fam.ipv6)
			tf, vf, src1, src2 := transport.IPv4, vrrp.IPv4, h1.Addr4, h2.Addr4
			if fam.ipv6 {
				tf, vf, src1, src2 = transport.IPv6, vrrp.IPv6, linkLocal(t, h1), linkLocal(t, h2)
			}
			fit := vrrp.AddressesThatFit(vrrp.Version3, vf, 1500)
			want := make([]netip.Addr, fit)
			for i := range want {
				want[i] = vips[i].Addr()
			}
			adverts := listenAdverts(t, client, tf, scaleVRID)
			// Adverts every second: 2,000 addresses are a second or more of netlink work
			// for keepalived on the loaded test machine, and this test is about who holds
			// what, not about timing (the benchmarks are).
			conf1 := writeConf(t, "h1.conf", scaleConf(150, "1", "", vips))
			conf2 := writeConf(t, "h2.conf", scaleConf(100, "1", "", vips))
			startKeepalived(t, h2, conf2)
			v := startVrrpd(t, h1, conf1, "")
			const timeout, settle = 60 * time.Second, 2 * time.Second

			waitAllOn(t, timeout, settle, vips, h1, h2)
			if st := v.instance(t, "VI_1"); st.State != "MASTER" {
				t.Fatalf("vrrpd's VI_1 is %s", st.State)
			}
			fromVrrpd := adverts.latest(t, src1, 150, 5*time.Second)

			v.MustStop(t)
			waitAllOn(t, timeout, settle, vips, h2, h1)
			fromKeepalived := adverts.latest(t, src2, 100, 5*time.Second)
			t.Logf("keepalived took over all %d VIPs after vrrpd stopped", fam.n)

			stopped := v
			v = startVrrpd(t, h1, conf1, v.stateDir)
			waitAllOn(t, timeout, settle, vips, h1, h2)
			again := adverts.latest(t, src1, 150, 5*time.Second)
			t.Logf("vrrpd preempted and holds all %d VIPs again", fam.n)
			// A master's own adds must not unsettle it: its interface's addresses change
			// for a while after a takeover of 1,000 (the kernel announces IPv6 ones from a
			// work queue), and a read of them flagged as interrupted was once taken for a
			// lost source, a FAULT that dropped every VIP and came back as MASTER a few
			// seconds later, which the settle checks could miss.
			for _, p := range []*vrrpd{stopped, v} {
				if n := strings.Count(p.Output(), "Entering FAULT STATE"); n > 0 {
					t.Errorf("%s went FAULT %d times:\n%s", p.Name, n, grepLines(p.Output(), "interface unusable"))
				}
			}

			for _, a := range []struct {
				who string
				adv vrrp.Advertisement
			}{{"vrrpd", fromVrrpd}, {"keepalived", fromKeepalived}, {"vrrpd after preempting", again}} {
				if !slices.Equal(a.adv.Addresses, want) {
					t.Errorf("%s's advert lists %d addresses (first %v), want the first %d of the configuration", a.who, len(a.adv.Addresses), first(a.adv.Addresses), fit)
				}
			}
			if !slices.Equal(fromVrrpd.Addresses, fromKeepalived.Addresses) {
				t.Errorf("the address lists differ on the wire: vrrpd %d, keepalived %d", len(fromVrrpd.Addresses), len(fromKeepalived.Addresses))
			}
			if st := v.instance(t, "VI_1"); st.Counters["addr_list_err"] != 0 {
				t.Errorf("vrrpd counted %d address-list errors in keepalived's adverts", st.Counters["addr_list_err"])
			}
			t.Logf("both advertise %d of %d addresses, the first %d of the configuration; %d excluded", len(fromVrrpd.Addresses), fam.n, fit, fam.n-fit)
		})
	}
}

func first(a []netip.Addr) []netip.Addr { return a[:min(len(a), 3)] }

// linkLocal is h's IPv6 link-local address on its lab link, the source of its IPv6 adverts.
func linkLocal(t testing.TB, h *netlab.Host) netip.Addr {
	t.Helper()
	var ll netip.Addr
	vrrpdtest.WaitFor(t, 10*time.Second, h.Name+"'s link-local address", func() bool {
		have, err := h.AddrsOn(h.Link)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range have {
			if p.Addr().IsLinkLocalUnicast() {
				ll = p.Addr()
				return true
			}
		}
		return false
	})
	return ll
}
