package config

import (
	"reflect"
	"strings"
	"testing"
)

// trackingConf is two instances in a sync group with every kind of tracker, at group
// and instance level.
const trackingConf = `
vrrp_script chk {
  script "/bin/true"
  weight -20
}
track_file prio {
  file /run/prio
  init_file 7 overwrite
}
vrrp_track_file old {
  file /run/old
}
vrrp_sync_group G {
  group {
    VI_1 VI_2
    NOPE
  }
  track_interface {
    eth2 weight -30
  }
  track_file {
    old weight 0
  }
  track_script {
    chk
  }
  notify "/bin/echo group"
  notify_master /bin/true
}
vrrp_instance VI_1 {
  interface eth0
  virtual_router_id 1
  priority 100
  track_interface {
    eth1
    eth3 weight 254
    eth4 bogus
  }
  track_file {
    prio
  }
  dont_track_primary
  notify_deleted "/bin/echo gone"
  virtual_ipaddress {
    10.99.0.100/24
  }
}
vrrp_instance VI_2 {
  interface eth0
  virtual_router_id 2
  priority 100
  track_file {
    prio weight 3 noreverse
  }
  virtual_ipaddress {
    10.99.0.101/24
  }
}
`

func TestKeepalivedTracking(t *testing.T) {
	cfg, ws, err := Parse("t.conf", []byte(trackingConf))
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := cfg.Instance("VI_1")
	v2, _ := cfg.Instance("VI_2")
	// In a sync group without sync_group_tracking_weight, an instance's own weighted
	// interfaces lose their weight, a default-weight file becomes weight 0 and a file with
	// another weight is dropped; the group's trackers keep theirs.
	if want := []TrackInterface{{Interface: "eth1"}, {Interface: "eth3"}, {Interface: "eth2", Weight: -30}}; !reflect.DeepEqual(v1.TrackInterfaces, want) {
		t.Errorf("VI_1 interfaces %+v, want %+v", v1.TrackInterfaces, want)
	}
	if want := []TrackFile{{File: "prio"}, {File: "old"}}; !reflect.DeepEqual(v1.TrackFiles, want) {
		t.Errorf("VI_1 files %+v, want %+v", v1.TrackFiles, want)
	}
	if want := []TrackFile{{File: "old"}}; !reflect.DeepEqual(v2.TrackFiles, want) {
		t.Errorf("VI_2 files %+v, want %+v", v2.TrackFiles, want)
	}
	if want := []TrackScript{{Script: "chk", Weight: -20}}; !reflect.DeepEqual(v2.TrackScripts, want) {
		t.Errorf("VI_2 scripts %+v, want %+v", v2.TrackScripts, want)
	}
	if !v1.DontTrackPrimary || v2.DontTrackPrimary || v1.SyncGroup != "G" || v2.SyncGroup != "G" {
		t.Errorf("dont_track_primary %v %v, groups %q %q", v1.DontTrackPrimary, v2.DontTrackPrimary, v1.SyncGroup, v2.SyncGroup)
	}
	if !v1.Notify.NotifyDeleted || !reflect.DeepEqual(v1.Notify.Deleted.Args, []string{"/bin/echo", "gone"}) {
		t.Errorf("notify_deleted %+v", v1.Notify)
	}
	if len(cfg.SyncGroups) != 1 || !reflect.DeepEqual(cfg.SyncGroups[0].Members, []string{"VI_1", "VI_2"}) ||
		!reflect.DeepEqual(cfg.SyncGroups[0].Notify.Generic.Args, []string{"/bin/echo", "group"}) {
		t.Errorf("sync groups %+v", cfg.SyncGroups)
	}
	wantFiles := []TrackFileSpec{
		{Name: "old", Path: "/run/old", Weight: 1},
		{Name: "prio", Path: "/run/prio", Weight: 1, Init: true, InitValue: 7, Overwrite: true},
	}
	for i := range cfg.TrackFiles {
		cfg.TrackFiles[i].Source = Position{}
	}
	if !reflect.DeepEqual(cfg.TrackFiles, wantFiles) {
		t.Errorf("track files %+v, want %+v", cfg.TrackFiles, wantFiles)
	}
	all := FormatWarnings(ws)
	for _, w := range []string{
		"weight cannot be ±254; using ±253",
		`track_interface eth4: unknown option "bogus"`,
		"virtual router NOPE in sync group G doesn't exist",
		"ignoring weight of tracked interface eth3 due to SYNC group",
		"ignoring weight from tracked file prio due to SYNC group; specify weight 0",
		"ignoring tracked file prio with weight 3 due to SYNC group",
		`"vrrp_track_file" is deprecated`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("no warning %q in:\n%s", w, all)
		}
	}
	if strings.Contains(all, "not supported") {
		t.Errorf("tracking keywords reported unsupported:\n%s", all)
	}
}

// An address owner drops weighted interfaces and scripts and takes a default-weight file
// as weight 0; in a sync group the group's rule wins (weights cleared, not dropped), as
// in vrrp_complete_instance. A sync group of one member is kept with keepalived's warning.
func TestKeepalivedTrackingOwner(t *testing.T) {
	inst := kaConf("", "interface eth0\npriority 255\ntrack_interface {\neth1\neth2 weight 10\n}\ntrack_file {\nf\n}")
	file := "track_file f {\n  file /run/f\n}\n"
	group := "vrrp_sync_group ONE {\n  group {\n    T\n  }\n}\n"
	for _, tc := range []struct {
		conf string
		ifs  []TrackInterface
	}{
		{file + inst, []TrackInterface{{Interface: "eth1"}}},
		{file + group + inst, []TrackInterface{{Interface: "eth1"}, {Interface: "eth2"}}},
	} {
		cfg, ws, err := Parse("t.conf", []byte(tc.conf))
		if err != nil {
			t.Fatal(err)
		}
		in := cfg.Instances[0]
		if !reflect.DeepEqual(in.TrackInterfaces, tc.ifs) {
			t.Errorf("owner interfaces %+v, want %+v", in.TrackInterfaces, tc.ifs)
		}
		if want := []TrackFile{{File: "f"}}; !reflect.DeepEqual(in.TrackFiles, want) {
			t.Errorf("owner files %+v, want %+v", in.TrackFiles, want)
		}
		if strings.Contains(tc.conf, "ONE") && (len(cfg.SyncGroups) != 1 || !strings.Contains(FormatWarnings(ws), "sync group ONE has only 1 virtual router(s)")) {
			t.Errorf("groups %+v, warnings:\n%s", cfg.SyncGroups, FormatWarnings(ws))
		}
	}
}

// The YAML form gives the same instances, files and groups as trackingConf.
func TestYAMLTrackingSameAsKeepalived(t *testing.T) {
	const y = `
scripts:
  - name: chk
    command: /bin/true
    weight: -20
trackFiles:
  - name: prio
    file: /run/prio
    init: {value: 7, overwrite: true}
  - name: old
    file: /run/old
syncGroups:
  - name: G
    members: [VI_1, VI_2, NOPE]
    trackInterfaces: [{name: eth2, weight: -30}]
    trackFiles: [{name: old, weight: 0}]
    trackScripts: [{name: chk}]
    notify: {all: "/bin/echo group", master: /bin/true}
instances:
  - name: VI_1
    interface: eth0
    vrid: 1
    priority: 100
    trackInterfaces: [{name: eth1}, {name: eth3, weight: 253}]
    trackFiles: [{name: prio}]
    dontTrackPrimary: true
    notify: {deleted: "/bin/echo gone"}
    vips: [10.99.0.100/24]
  - name: VI_2
    interface: eth0
    vrid: 2
    priority: 100
    trackFiles: [{name: prio, weight: 3, reverse: false}]
    vips: [10.99.0.101/24]
`
	ka, _, err := Parse("t.conf", []byte(trackingConf))
	if err != nil {
		t.Fatal(err)
	}
	ym, _, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ka.Instances {
		other, ok := ym.Instance(in.Name)
		if !ok || !in.Equal(other) {
			t.Errorf("%s:\nkeepalived.conf %+v\nYAML            %+v", in.Name, in, other)
		}
	}
	for i := range ym.TrackFiles {
		ym.TrackFiles[i].Source, ka.TrackFiles[i].Source = Position{}, Position{}
	}
	if !reflect.DeepEqual(ka.TrackFiles, ym.TrackFiles) {
		t.Errorf("track files %+v, YAML %+v", ka.TrackFiles, ym.TrackFiles)
	}
	if len(ym.SyncGroups) != 1 || !reflect.DeepEqual(ym.SyncGroups[0].Members, ka.SyncGroups[0].Members) || !ym.SyncGroups[0].Notify.Equal(ka.SyncGroups[0].Notify) {
		t.Errorf("sync groups %+v, YAML %+v", ka.SyncGroups, ym.SyncGroups)
	}
}

// A VRRPv2 instance without VIPs loads with keepalived's warning (cloud setups move an
// address from their notify scripts); VRRPv3 and IPv6 still need one.
func TestKeepalivedV2WithoutVIP(t *testing.T) {
	conf := "vrrp_instance A {\ninterface eth0\nvirtual_router_id 1\nnotify_master \"/usr/local/bin/move-eip\"\nvirtual_ipaddress {\n}\nvirtual_ipaddress_excluded {\n10.0.0.1\n}\n}\n"
	cfg, ws, err := Parse("e.conf", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if in := cfg.Instances[0]; len(in.VIPs) != 0 || in.Version != 2 || len(in.ExcludedVIPs) != 1 {
		t.Errorf("instance %+v", in)
	}
	if got := FormatWarnings(ws); got != "e.conf:1: (A) no VIP specified; at least one is sensible\n" {
		t.Errorf("warnings %q", got)
	}
	if _, _, err := Parse("e.conf", []byte(strings.Replace(conf, "virtual_router_id 1", "virtual_router_id 1\nversion 3", 1))); err == nil {
		t.Error("v3 without VIP accepted")
	}
}
