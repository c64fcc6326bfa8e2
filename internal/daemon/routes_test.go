package daemon

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/route"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// fakeRoutes is the route store of the fake host: it logs each call into h.events, in
// order with the VIPs' adds and removals, and keeps what is held in h.routes.
type fakeRoutes struct{ h *fakeHost }

func routeList(rs []route.Route, us []route.Rule) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Dst.String())
	}
	for _, r := range us {
		s = append(s, "rule "+r.From.String())
	}
	return strings.Join(s, ",")
}

func (f fakeRoutes) Hold(holder string, rs []route.Route, us []route.Rule) ([]route.Route, []route.Rule, error) {
	f.h.events = append(f.h.events, "routes+ "+holder+" "+routeList(rs, us))
	if f.h.routes == nil {
		f.h.routes = map[string]bool{}
	}
	for _, r := range rs {
		f.h.routes[holder+" "+r.Dst.String()] = true
	}
	return nil, nil, nil
}

func (f fakeRoutes) Release(holder string, rs []route.Route, us []route.Rule) error {
	f.h.events = append(f.h.events, "routes- "+holder+" "+routeList(rs, us))
	for _, r := range rs {
		delete(f.h.routes, holder+" "+r.Dst.String())
	}
	return nil
}

func (f fakeRoutes) Recover() ([]route.Route, []route.Rule, error) {
	f.h.events = append(f.h.events, "routes recover")
	return nil, nil, nil
}

func routed(ic config.Instance, dsts ...string) config.Instance {
	for _, d := range dsts {
		ic.Routes = append(ic.Routes, route.Route{Dst: netip.MustParsePrefix(d), Dev: "eth0", Src: addr100, Protocol: route.Protocol})
	}
	ic.Rules = []route.Rule{{From: netip.MustParsePrefix("10.99.0.100/32"), Table: 100, Protocol: route.Protocol}}
	return ic
}

// eventsWith are h.events that start with one of the prefixes.
func eventsWith(h *fakeHost, prefixes ...string) []string {
	var out []string
	for _, e := range h.events {
		for _, p := range prefixes {
			if strings.HasPrefix(e, p) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// TestVirtualRoutesFollowMaster: the routes and rules go in after the VIPs on becoming
// master (a route's src may be a VIP) and come out on leaving MASTER and on shutdown.
func TestVirtualRoutesFollowMaster(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, routed(testInstance("VI_1", 1, 100, "10.99.0.100/24"), "192.0.2.0/24"))
	if len(h.routes) != 0 {
		t.Fatalf("routes held as BACKUP: %v", h.routes)
	}
	at := takeover(100)
	advance(d, at)
	want := []string{"add 10.99.0.100/24 dev eth0", "routes+ VI_1 192.0.2.0/24,rule 10.99.0.100/32"}
	if got := eventsWith(h, "add", "routes"); !slices.Equal(got, want) {
		t.Errorf("on becoming master: %q, want %q", got, want)
	}
	// A higher-priority master: back to BACKUP, routes out.
	p := peerAdvert(t, 1, 150, "10.99.0.100/24")
	d.handlePacket(d.byName["VI_1"].conn, &p, at.Add(time.Second))
	if len(h.routes) != 0 {
		t.Errorf("routes still held after leaving MASTER: %v", h.routes)
	}
	if got := eventsWith(h, "routes-"); len(got) != 1 {
		t.Errorf("releases %q, want one", got)
	}
}

func TestStaticEntriesForTheWholeRun(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	static := config.Static{
		Addresses: []config.VIP{{Prefix: netip.MustParsePrefix("10.99.0.50/24"), Dev: "eth0"}},
		Routes:    []route.Route{{Dst: netip.MustParsePrefix("198.51.100.0/24"), Dev: "eth0", Protocol: route.Protocol}},
	}
	cfg := &config.Config{Instances: []config.Instance{testInstance("VI_1", 1, 100, "10.99.0.100/24")}, Static: static}
	d.start(cfg, t0)
	if !h.routes[staticHolder+" 198.51.100.0/24"] || len(h.heldList()) != 1 {
		t.Fatalf("after start: routes %v, addresses %v; want the static ones while BACKUP", h.routes, h.heldList())
	}
	// A reload without the route drops it and keeps the address.
	cfg2 := *cfg
	cfg2.Static = config.Static{Addresses: static.Addresses}
	if err := d.reload(&cfg2, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if len(h.routes) != 0 || len(h.heldList()) != 1 {
		t.Errorf("after reload: routes %v, addresses %v", h.routes, h.heldList())
	}
	d.shutdown(t0.Add(2 * time.Second))
	if len(h.heldList()) != 0 {
		t.Errorf("static address left after shutdown: %v", h.heldList())
	}
}

func TestReloadRefusesAnotherNamespace(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	cfg := &config.Config{Instances: []config.Instance{testInstance("VI_1", 1, 100, "10.99.0.100/24")}, NetNamespace: "a"}
	if err := d.checkNamespace(cfg); err != nil {
		t.Fatal(err)
	}
	d.start(cfg, t0)
	moved := *cfg
	moved.NetNamespace = "b"
	if err := d.reload(&moved, t0.Add(time.Second)); err == nil || !strings.Contains(err.Error(), "net_namespace") {
		t.Errorf("reload into another namespace: %v", err)
	}
	if err := d.reload(cfg, t0.Add(time.Second)); err != nil {
		t.Errorf("reload in the same namespace: %v", err)
	}
}

// TestTrackSrcIP: with track_src_ip, the configured source missing from the interface is
// FAULT; its return clears it. Without, nothing happens.
func TestTrackSrcIP(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	present := true
	d.rt.srcPresent = func(string, netip.Addr) (bool, error) { return present, nil }
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.UnicastSrc = eth0src
	ic.UnicastPeers = []netip.Addr{netip.MustParseAddr("10.99.0.12")}
	ic.TrackSrcIP = true
	startDaemon(t, d, ic)
	d.checkInterfaces(t0)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Fatalf("with the source present: %v", s.State)
	}
	present = false
	d.checkInterfaces(t0.Add(time.Second))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("with the source gone: %v, want FAULT", s.State)
	}
	present = true
	d.checkInterfaces(t0.Add(2 * time.Second))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Fatalf("with the source back: %v, want BACKUP", s.State)
	}
	// A read of addresses that kept changing (NLM_F_DUMP_INTR) and did not list the
	// source says nothing: the state stays, whichever it is, and the next poll looks
	// again.
	var unsure error
	d.rt.srcPresent = func(string, netip.Addr) (bool, error) {
		if unsure != nil {
			return false, unsure
		}
		return present, nil
	}
	unsure = fmt.Errorf("addresses: %w", netlink.ErrDumpInterrupted)
	d.checkInterfaces(t0.Add(3 * time.Second))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup || !d.linkTrouble {
		t.Fatalf("source present, then an interrupted read: %v (look again: %v), want BACKUP kept and a poll", s.State, d.linkTrouble)
	}
	unsure, present = nil, false
	d.checkInterfaces(t0.Add(4 * time.Second))
	unsure = fmt.Errorf("addresses: %w", netlink.ErrDumpInterrupted)
	d.checkInterfaces(t0.Add(5 * time.Second))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("source gone, then an interrupted read: %v, want FAULT kept", s.State)
	}
}

// TestReloadChangesAMastersRoutes: a reload that changes a master's virtual routes takes
// the old ones out and puts the new ones in, the instance staying MASTER.
func TestReloadChangesAMastersRoutes(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := routed(testInstance("VI_1", 1, 100, "10.99.0.100/24"), "192.0.2.0/24")
	startDaemon(t, d, ic)
	at := takeover(100)
	advance(d, at)
	changed := routed(testInstance("VI_1", 1, 100, "10.99.0.100/24"), "198.51.100.0/24")
	if err := d.reload(&config.Config{Instances: []config.Instance{changed}}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster {
		t.Fatalf("after reload: %v, want MASTER kept", s.State)
	}
	if !h.routes["VI_1 198.51.100.0/24"] || h.routes["VI_1 192.0.2.0/24"] {
		t.Errorf("routes after reload %v, want only the new one", h.routes)
	}
}
