package daemon

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// startWith starts cfg on a fake host, with a notify FIFO whose lines read returns.
func startWith(t *testing.T, cfg *config.Config) (*fakeHost, *Daemon, func() string) {
	t.Helper()
	h := newFakeHost()
	d := newTestDaemon(t, h)
	t.Cleanup(d.trk.runner.Stop)
	cfg.ScriptSettings.NotifyFIFO = filepath.Join(t.TempDir(), "fifo")
	d.recoverVIPs()
	d.start(cfg, t0)
	t.Cleanup(func() {
		for _, f := range d.trk.fifos {
			f.Close()
		}
	})
	return h, d, fifoLines(t, d)
}

// A tracked interface of weight 0 makes FAULT while it is down; one with a weight moves
// the priority instead; the status shows both.
func TestTrackInterface(t *testing.T) {
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.TrackInterfaces = []config.TrackInterface{{Interface: "eth1"}, {Interface: "eth2", Weight: -40}}
	h, d, _ := startWith(t, &config.Config{Instances: []config.Instance{ic}})
	now := takeover(150)
	advance(d, now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster || len(s.Trackers) != 2 || s.Trackers[0].Status != "UP" {
		t.Fatalf("start: %+v", s)
	}
	h.linkErr["eth2"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.Priority != 110 || s.Trackers[1].Offset != -40 || s.Trackers[1].Status != "DOWN" {
		t.Fatalf("eth2 down: priority %d trackers %+v, want 110", s.Priority, s.Trackers)
	}
	h.linkErr["eth1"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || len(h.held) != 0 {
		t.Fatalf("eth1 down: %v holding %v, want FAULT holding nothing", s.State, h.heldList())
	}
	delete(h.linkErr, "eth1")
	delete(h.linkErr, "eth2")
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup || s.Priority != 150 {
		t.Fatalf("back: %v at %d, want BACKUP at 150", s.State, s.Priority)
	}
}

// A tracked interface missing at start is not tracked (keepalived ignores it).
func TestTrackInterfaceMissingIgnored(t *testing.T) {
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.TrackInterfaces = []config.TrackInterface{{Interface: "nope"}}
	h := newFakeHost()
	h.linkErr["nope"] = transport.ErrNoInterface
	d := newTestDaemon(t, h)
	t.Cleanup(d.trk.runner.Stop)
	d.recoverVIPs()
	d.start(&config.Config{Instances: []config.Instance{ic}}, t0)
	advance(d, takeover(150))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster || s.Trackers[0].Status != "UNTRACKED" {
		t.Fatalf("%v %+v, want MASTER with the interface untracked", s.State, s.Trackers)
	}
}

// dont_track_primary: the instance's own link going down is not a FAULT.
func TestDontTrackPrimary(t *testing.T) {
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.DontTrackPrimary = true
	h, d, _ := startWith(t, &config.Config{Instances: []config.Instance{ic}})
	now := takeover(150)
	advance(d, now)
	h.linkErr["eth0"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster {
		t.Fatalf("own link down with dont_track_primary: %v, want MASTER", s.State)
	}
}

// A track file's value times the weight moves the priority; at -254 or below it is
// FAULT; weight 0 is FAULT while the value is not 0.
func TestTrackFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prio")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.TrackFiles = []config.TrackFile{{File: "f", Weight: -10}}
	ic2 := testInstance("VI_2", 2, 150, "10.99.0.101/24")
	ic2.TrackFiles = []config.TrackFile{{File: "f", Weight: 0}}
	cfg := &config.Config{Instances: []config.Instance{ic, ic2},
		TrackFiles: []config.TrackFileSpec{{Name: "f", Path: path, Weight: 1, Init: true, InitValue: 0}}}
	_, d, _ := startWith(t, cfg)
	if b, err := os.ReadFile(path); err != nil || string(b) != "0\n" {
		t.Fatalf("init_file wrote %q, %v", b, err)
	}
	now := takeover(150)
	advance(d, now)
	write("3\n")
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.Priority != 120 || s.Trackers[0].Value != 3 {
		t.Fatalf("value 3 × -10: priority %d %+v, want 120", s.Priority, s.Trackers)
	}
	if s := snapOf(t, d, "VI_2"); s.State != vrrp.StateFault {
		t.Fatalf("weight 0, value 3: %v, want FAULT", s.State)
	}
	write("0x20") // 32 × -10 = -320: FAULT
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("value 32 × -10: %v, want FAULT", s.State)
	}
	if err := os.Remove(path); err != nil { // a missing file is 0
		t.Fatal(err)
	}
	d.checkInterfaces(now)
	for _, n := range []string{"VI_1", "VI_2"} {
		if s := snapOf(t, d, n); s.State != vrrp.StateBackup || s.Priority != 150 {
			t.Fatalf("%s with the file gone: %v at %d, want BACKUP at 150", n, s.State, s.Priority)
		}
	}
}

// A sync group's members share FAULT, and its hooks hear the group's state with GROUP
// after the instances' lines, as keepalived writes them.
func TestSyncGroupFault(t *testing.T) {
	a := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	a.TrackInterfaces = []config.TrackInterface{{Interface: "eth1"}}
	a.SyncGroup = "G"
	b := testInstance("VI_2", 2, 150, "10.99.0.101/24")
	b.SyncGroup = "G"
	cfg := &config.Config{Instances: []config.Instance{a, b},
		SyncGroups: []config.SyncGroup{{Name: "G", Members: []string{"VI_1", "VI_2"}}}}
	h, d, read := startWith(t, cfg)
	now := takeover(150)
	advance(d, now)
	h.linkErr["eth1"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	for _, n := range []string{"VI_1", "VI_2"} {
		if s := snapOf(t, d, n); s.State != vrrp.StateFault {
			t.Fatalf("%s: %v, want FAULT with its group", n, s.State)
		}
	}
	if len(h.held) != 0 {
		t.Fatalf("holding %v", h.heldList())
	}
	delete(h.linkErr, "eth1")
	d.checkInterfaces(now)
	now = now.Add(vrrp.MasterDownInterval(150, time.Second))
	advance(d, now)
	if g := d.Snapshot().SyncGroups; len(g) != 1 || g[0].State != "MASTER" {
		t.Fatalf("groups %+v", g)
	}
	d.stopGroups(now)
	want := strings.Join([]string{
		`GROUP "G" BACKUP 0`, `INSTANCE "VI_1" BACKUP 150`, `INSTANCE "VI_2" BACKUP 150`,
		`INSTANCE "VI_1" MASTER 150`, `INSTANCE "VI_2" MASTER 150`, `GROUP "G" MASTER 0`,
		`INSTANCE "VI_1" FAULT 150`, `INSTANCE "VI_2" FAULT 150`, `GROUP "G" FAULT 0`,
		`INSTANCE "VI_1" BACKUP 150`, `INSTANCE "VI_2" BACKUP 150`, `GROUP "G" BACKUP 0`,
		`INSTANCE "VI_1" MASTER 150`, `INSTANCE "VI_2" MASTER 150`, `GROUP "G" MASTER 0`,
		`GROUP "G" STOP 0`, ""}, "\n")
	if got := read(); got != want {
		t.Errorf("FIFO:\n%s\nwant:\n%s", got, want)
	}
}

// A member leaving MASTER for BACKUP takes the others with it, without priority 0.
func TestSyncGroupStepDown(t *testing.T) {
	a := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	a.SyncGroup = "G"
	b := testInstance("VI_2", 2, 150, "10.99.0.101/24")
	b.SyncGroup = "G"
	cfg := &config.Config{Instances: []config.Instance{a, b},
		SyncGroups: []config.SyncGroup{{Name: "G", Members: []string{"VI_1", "VI_2"}}}}
	h, d, _ := startWith(t, cfg)
	now := takeover(150)
	advance(d, now)
	in := d.byName["VI_1"]
	var adv vrrp.Advertisement
	c := in.sm.Config()
	c.Priority = 200
	c.AdvertisementFields(&adv, 200)
	zeros := func() (n int) {
		for _, p := range h.priorities() {
			if p == 0 {
				n++
			}
		}
		return n
	}
	before := zeros()
	d.acts = in.sm.HandleAdvert(now, &adv, netip.MustParseAddr("10.99.0.9"), d.acts[:0])
	d.execute(in, now)
	for _, n := range []string{"VI_1", "VI_2"} {
		if s := snapOf(t, d, n); s.State != vrrp.StateBackup {
			t.Fatalf("%s: %v, want BACKUP with its group", n, s.State)
		}
	}
	if zeros() != before {
		t.Errorf("priority 0 sent while following the group")
	}
}

// notify_deleted: an instance a reload removes is reported DELETED; without it FAULT
// (keepalived's older way), and STOP in neither case.
func TestNotifyDeleted(t *testing.T) {
	for _, nd := range []bool{true, false} {
		a := testInstance("VI_1", 1, 150, "10.99.0.100/24")
		a.Notify.NotifyDeleted = nd
		b := testInstance("VI_2", 2, 150, "10.99.0.101/24")
		_, d, read := startWith(t, &config.Config{Instances: []config.Instance{a, b}})
		now := takeover(150)
		advance(d, now)
		read()
		cfg := &config.Config{Instances: []config.Instance{b}, ScriptSettings: d.trk.settings}
		if err := d.reload(cfg, now); err != nil {
			t.Fatal(err)
		}
		want := `INSTANCE "VI_1" FAULT 150` + "\n"
		if nd {
			want = `INSTANCE "VI_1" DELETED 150` + "\n"
		}
		if got := read(); got != want {
			t.Errorf("notify_deleted %v: FIFO %q, want %q", nd, got, want)
		}
	}
}

// A reload that takes the faulted member out of the group releases the other.
func TestSyncGroupReload(t *testing.T) {
	a := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	a.TrackInterfaces = []config.TrackInterface{{Interface: "eth1"}}
	a.SyncGroup = "G"
	b := testInstance("VI_2", 2, 150, "10.99.0.101/24")
	b.SyncGroup = "G"
	cfg := &config.Config{Instances: []config.Instance{a, b},
		SyncGroups: []config.SyncGroup{{Name: "G", Members: []string{"VI_1", "VI_2"}}}}
	h, d, _ := startWith(t, cfg)
	now := takeover(150)
	advance(d, now)
	h.linkErr["eth1"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_2"); s.State != vrrp.StateFault {
		t.Fatalf("VI_2 %v, want FAULT with its group", s.State)
	}
	a.SyncGroup, b.SyncGroup = "", ""
	if err := d.reload(&config.Config{Instances: []config.Instance{a, b}, ScriptSettings: d.trk.settings}, now); err != nil {
		t.Fatal(err)
	}
	if s := snapOf(t, d, "VI_2"); s.State != vrrp.StateBackup {
		t.Errorf("VI_2 out of the group: %v, want BACKUP", s.State)
	}
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Errorf("VI_1 with eth1 down: %v, want FAULT", s.State)
	}
}

// Two members with faults of their own: the group stays in FAULT until both clear, and
// the member that recovers first does not pass through BACKUP meanwhile.
func TestSyncGroupTwoFaults(t *testing.T) {
	a := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	a.TrackInterfaces = []config.TrackInterface{{Interface: "eth1"}}
	a.SyncGroup = "G"
	b := testInstance("VI_2", 2, 150, "10.99.0.101/24")
	b.TrackInterfaces = []config.TrackInterface{{Interface: "eth2"}}
	b.SyncGroup = "G"
	cfg := &config.Config{Instances: []config.Instance{a, b},
		SyncGroups: []config.SyncGroup{{Name: "G", Members: []string{"VI_1", "VI_2"}}}}
	h, d, read := startWith(t, cfg)
	now := takeover(150)
	advance(d, now)
	read()
	h.linkErr["eth1"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	h.linkErr["eth2"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	delete(h.linkErr, "eth1")
	d.checkInterfaces(now)
	for _, n := range []string{"VI_1", "VI_2"} {
		if s := snapOf(t, d, n); s.State != vrrp.StateFault {
			t.Fatalf("%s: %v with eth2 still down, want FAULT", n, s.State)
		}
	}
	delete(h.linkErr, "eth2")
	d.checkInterfaces(now)
	want := `INSTANCE "VI_1" FAULT 150` + "\n" + `INSTANCE "VI_2" FAULT 150` + "\n" + `GROUP "G" FAULT 0` + "\n" +
		`INSTANCE "VI_2" BACKUP 150` + "\n" + `INSTANCE "VI_1" BACKUP 150` + "\n" + `GROUP "G" BACKUP 0` + "\n"
	if got := read(); got != want {
		t.Errorf("FIFO:\n%s\nwant:\n%s", got, want)
	}
}
