package config

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

func TestInstanceEqual(t *testing.T) {
	cfg, _, err := Load(fixture.Keepalived("v3-unicast-h1.conf"))
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.Instances[0]
	moved := base
	moved.Source = Position{File: "other.conf", Line: 99}
	if !base.Equal(moved) {
		t.Error("Equal must ignore Source")
	}
	// A deep copy with fresh slices is still Equal.
	cp := base
	cp.UnicastPeers = append([]netip.Addr(nil), base.UnicastPeers...)
	cp.VIPs = append([]VIP(nil), base.VIPs...)
	if !base.Equal(cp) {
		t.Error("copy not Equal")
	}
	// Every setting counts.
	changes := map[string]func(*Instance){
		"Name":           func(i *Instance) { i.Name = "x" },
		"Interface":      func(i *Instance) { i.Interface = "eth1" },
		"Family":         func(i *Instance) { i.Family = IPv6 },
		"VRID":           func(i *Instance) { i.VRID++ },
		"Priority":       func(i *Instance) { i.Priority++ },
		"Version":        func(i *Instance) { i.Version = vrrp.Version2 },
		"AdvertInterval": func(i *Instance) { i.AdvertInterval += time.Millisecond },
		"Preempt":        func(i *Instance) { i.Preempt = !i.Preempt },
		"PreemptDelay":   func(i *Instance) { i.PreemptDelay = time.Second },
		"AcceptMode":     func(i *Instance) { i.AcceptMode = !i.AcceptMode },
		"InitialState":   func(i *Instance) { i.InitialState = StateMaster },
		"UnicastSrc":     func(i *Instance) { i.UnicastSrc = netip.MustParseAddr("10.99.0.99") },
		"UnicastPeers":   func(i *Instance) { i.UnicastPeers = []netip.Addr{netip.MustParseAddr("10.99.0.13")} },
		"MulticastGroup": func(i *Instance) { i.MulticastGroup = netip.MustParseAddr("224.0.0.19") },
		"AuthType":       func(i *Instance) { i.AuthType = vrrp.AuthSimple },
		"AuthPass":       func(i *Instance) { i.AuthPass = "x" },
		"VIPs":           func(i *Instance) { i.VIPs = []VIP{{Prefix: netip.MustParsePrefix("10.99.0.100/25"), Dev: "eth0"}} },
		"VIP label":      func(i *Instance) { i.VIPs = []VIP{{Prefix: i.VIPs[0].Prefix, Dev: "eth0", Label: "eth0:a"}} },
		"ExcludedVIPs":   func(i *Instance) { i.ExcludedVIPs = []VIP{{Prefix: netip.MustParsePrefix("10.99.0.7/32")}} },
		"GARP":           func(i *Instance) { i.GARP.MasterRefresh = time.Second },
	}
	for name, change := range changes {
		c := base
		c.UnicastPeers = append([]netip.Addr(nil), base.UnicastPeers...)
		c.VIPs = append([]VIP(nil), base.VIPs...)
		change(&c)
		if base.Equal(c) || c.Equal(base) {
			t.Errorf("changing %s: still Equal", name)
		}
	}
}

func TestConfigInstanceLookup(t *testing.T) {
	cfg, _, err := Load(fixture.Keepalived("garp-na-h1.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if in, ok := cfg.Instance("V6"); !ok || in.VRID != 62 {
		t.Errorf("Instance(V6) = %+v, %v", in, ok)
	}
	if _, ok := cfg.Instance("nope"); ok {
		t.Error("Instance(nope) found")
	}
}

// Every instance the loader accepts is one the state machine accepts.
func TestStateMachineConfigValid(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*"))
	confs, _ := fixture.KeepalivedConfigs()
	files = append(files, confs...)
	files = append(files, filepath.Join("..", "..", "deploy", "vrrpd", "vrrpd.yaml"))
	n := 0
	for _, f := range files {
		cfg, _, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, in := range cfg.Instances {
			primary := netip.MustParseAddr("10.99.0.11")
			if in.Family == IPv6 {
				primary = netip.MustParseAddr("fe80::11")
			}
			sm := in.StateMachineConfig(primary)
			if err := sm.Validate(); err != nil {
				t.Errorf("%s %s: %v", f, in.Name, err)
			}
			if sm.Name != in.Name || sm.VRID != in.VRID || len(sm.VIPs) != len(in.VIPs) || sm.VIPs[0] != in.VIPs[0].Prefix ||
				sm.AuthPass != in.AuthPass || sm.AdvertInterval != in.AdvertInterval || sm.Primary != primary {
				t.Errorf("%s %s: %+v from %+v", f, in.Name, sm, in)
			}
			n++
		}
	}
	if n < 14 {
		t.Errorf("only %d instances checked", n)
	}
}
