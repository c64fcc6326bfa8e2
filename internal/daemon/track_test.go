package daemon

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// startTracking starts one instance at 150 tracking script chk with weight, on the fake
// host. The script's runs are replaced by results the test hands to the loop: its one
// real run sleeps through the test, since scriptResults drains the runner's results
// with the test's and a real one would race them.
func startTracking(t *testing.T, weight int) (*fakeHost, *Daemon) {
	t.Helper()
	h := newFakeHost()
	d := newTestDaemon(t, h)
	t.Cleanup(d.trk.runner.Stop)
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.TrackScripts = []config.TrackScript{{Script: "chk", Weight: weight}}
	cfg := &config.Config{Instances: []config.Instance{ic},
		Scripts:        []config.Script{{Name: "chk", Command: []string{"/bin/sleep", "3600"}, Interval: time.Hour, Rise: 1, Fall: 1}},
		ScriptSettings: config.ScriptSettings{NotifyFIFO: filepath.Join(t.TempDir(), "fifo")}}
	d.recoverVIPs()
	d.start(cfg, t0)
	t.Cleanup(func() {
		for _, f := range d.trk.fifos {
			f.Close()
		}
	})
	return h, d
}

// fifoLines opens the daemon's notify FIFO for reading; the returned function reads
// what it holds so far.
func fifoLines(t *testing.T, d *Daemon) func() string {
	t.Helper()
	fd, err := syscall.Open(d.trk.settings.NotifyFIFO, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return func() string {
		buf := make([]byte, 4096)
		n, _ := syscall.Read(fd, buf)
		return string(buf[:max(n, 0)])
	}
}

// result hands the loop one run of chk that moved it to status.
func result(d *Daemon, ok bool, now time.Time) {
	st := track.StatusGood
	if !ok {
		st = track.StatusFailed
	}
	d.scriptResults(track.Event{Script: "chk", Gen: d.trk.runner.Gen("chk"), OK: ok, Status: st, Changed: true}, now)
}

func TestTrackWeightMovesPriority(t *testing.T) {
	h, d := startTracking(t, -60)
	now := t0.Add(vrrp.MasterDownInterval(150, time.Second))
	advance(d, now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster || s.Priority != 150 {
		t.Fatalf("start: %v at %d, want MASTER at 150 (a script in init changes nothing)", s.State, s.Priority)
	}
	result(d, false, now)
	if p := h.priorities(); p[len(p)-1] != 90 {
		t.Fatalf("after the failure the master advertised %v, want 90 at once", p)
	}
	s := snapOf(t, d, "VI_1")
	if s.Priority != 90 || s.BasePriority != 150 || len(s.Tracked) != 1 || s.Tracked[0].Status != "FAILED" {
		t.Fatalf("snapshot %+v", s)
	}
	if sc := d.Snapshot().Scripts; len(sc) != 1 || sc[0].Runs != 1 || sc[0].Failures != 1 {
		t.Fatalf("scripts %+v", sc)
	}
	result(d, true, now)
	if p := h.priorities(); p[len(p)-1] != 150 {
		t.Fatalf("after recovery the master advertised %v, want 150", p)
	}
	// A result of a copy a reload replaced is ignored.
	d.scriptResults(track.Event{Script: "chk", Gen: 0, Status: track.StatusFailed, Changed: true}, now)
	if s := snapOf(t, d, "VI_1"); s.Priority != 150 {
		t.Fatalf("a stale result moved the priority to %d", s.Priority)
	}
}

// weight 0: the instance waits in FAULT for the first result, is FAULT while the script
// fails, and an interface that comes back does not clear a script's FAULT.
func TestTrackWeightZeroFault(t *testing.T) {
	h, d := startTracking(t, 0)
	read := fifoLines(t, d)
	now := t0.Add(10 * time.Second)
	advance(d, now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("before the first result: %v, want FAULT", s.State)
	}
	result(d, true, now)
	now = now.Add(vrrp.MasterDownInterval(150, time.Second))
	advance(d, now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateMaster {
		t.Fatalf("after success: %v, want MASTER", s.State)
	}
	result(d, false, now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault || len(h.held) != 0 {
		t.Fatalf("after failure: %v holding %v, want FAULT holding nothing", s.State, h.heldList())
	}
	h.linkErr["eth0"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	delete(h.linkErr, "eth0")
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("interface back while the script fails: %v, want FAULT", s.State)
	}
	h.linkErr["eth0"] = transport.ErrInterfaceDown
	d.checkInterfaces(now)
	result(d, true, now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("script good while the interface is down: %v, want FAULT", s.State)
	}
	delete(h.linkErr, "eth0")
	d.checkInterfaces(now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Fatalf("both good: %v, want BACKUP", s.State)
	}
	// Waiting for the first result is not a FAULT the hooks hear of (keepalived keeps
	// the instance in INIT); the script's FAULT is, once.
	want := "INSTANCE \"VI_1\" BACKUP 150\nINSTANCE \"VI_1\" MASTER 150\nINSTANCE \"VI_1\" FAULT 150\nINSTANCE \"VI_1\" BACKUP 150\n"
	if got := read(); got != want {
		t.Errorf("notify fifo:\n%s\nwant:\n%s", got, want)
	}
}

// A first result that fails turns the quiet wait into a FAULT the hooks hear of.
func TestTrackWaitThenFail(t *testing.T) {
	_, d := startTracking(t, 0)
	read := fifoLines(t, d)
	now := t0.Add(time.Second)
	advance(d, now)
	if got := read(); got != "" {
		t.Fatalf("notified %q while waiting for the first result", got)
	}
	result(d, false, now)
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateFault {
		t.Fatalf("after a failing first result: %v, want FAULT", s.State)
	}
	if got, want := read(), "INSTANCE \"VI_1\" FAULT 150\n"; got != want {
		t.Errorf("notify fifo %q, want %q", got, want)
	}
}
