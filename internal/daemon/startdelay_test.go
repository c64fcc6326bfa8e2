package daemon

import (
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestStartDelay: an instance with a StartDelay is BACKUP from its start and takes over
// Master_Down_Interval after start + StartDelay, not before; one without takes over at
// Master_Down_Interval as always. Both at the daemon's start and when a reload adds them.
func TestStartDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	h := newFakeHost()
	d := newTestDaemon(t, h)
	delayed := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	delayed.StartDelay = delay
	startDaemon(t, d, delayed, testInstance("VI_2", 2, 100, "10.99.0.101/24"))
	if s := snapOf(t, d, "VI_1"); s.State != vrrp.StateBackup {
		t.Fatalf("after start: %v, want BACKUP", s.State)
	}
	at := takeover(100)
	advance(d, at)
	if got := []vrrp.State{d.byName["VI_1"].sm.State(), d.byName["VI_2"].sm.State()}; got[0] != vrrp.StateBackup || got[1] != vrrp.StateMaster {
		t.Fatalf("at Master_Down_Interval: VI_1 %v (delayed, want BACKUP), VI_2 %v (want MASTER)", got[0], got[1])
	}
	advance(d, at.Add(delay-time.Nanosecond))
	if d.byName["VI_1"].sm.State() != vrrp.StateBackup {
		t.Fatal("the delayed instance took over before Master_Down_Interval + StartDelay")
	}
	advance(d, at.Add(delay))
	if d.byName["VI_1"].sm.State() != vrrp.StateMaster {
		t.Fatalf("at Master_Down_Interval + StartDelay: %v, want MASTER", d.byName["VI_1"].sm.State())
	}

	// Added by a reload at t: the same, from t.
	added := testInstance("VI_3", 3, 100, "10.99.0.102/24")
	added.StartDelay = delay
	now := at.Add(time.Second)
	if err := d.reload(&config.Config{Instances: []config.Instance{delayed, testInstance("VI_2", 2, 100, "10.99.0.101/24"), added}}, now); err != nil {
		t.Fatal(err)
	}
	due := now.Add(vrrp.MasterDownInterval(100, time.Second) + delay)
	advance(d, due.Add(-time.Nanosecond))
	if d.byName["VI_3"].sm.State() != vrrp.StateBackup {
		t.Fatal("the instance a reload added took over before Master_Down_Interval + StartDelay")
	}
	advance(d, due)
	if d.byName["VI_3"].sm.State() != vrrp.StateMaster {
		t.Fatalf("the instance a reload added, at Master_Down_Interval + StartDelay: %v, want MASTER", d.byName["VI_3"].sm.State())
	}
}

// TestStartDelayHearsMaster: during its start delay the instance follows a master it
// hears, and takes over Master_Down_Interval after that master's last advertisement.
func TestStartDelayHearsMaster(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	ic := testInstance("VI_1", 1, 100, "10.99.0.100/24")
	ic.StartDelay = 10 * time.Second
	startDaemon(t, d, ic)
	conn := d.byName["VI_1"].conn
	heard := t0.Add(500 * time.Millisecond)
	advance(d, heard)
	p := peerAdvert(t, 1, 150, "10.99.0.100/24")
	d.handlePacket(conn, &p, heard)
	if m := d.byName["VI_1"].sm.Master(); m != peer {
		t.Fatalf("follows %v during its start delay, want %v", m, peer)
	}
	down := heard.Add(vrrp.MasterDownInterval(100, time.Second))
	advance(d, down.Add(-time.Nanosecond))
	if d.byName["VI_1"].sm.State() != vrrp.StateBackup {
		t.Fatal("took over before Master_Down_Interval after the master's advertisement")
	}
	advance(d, down)
	if d.byName["VI_1"].sm.State() != vrrp.StateMaster {
		t.Fatalf("Master_Down_Interval after the master went silent: %v, want MASTER", d.byName["VI_1"].sm.State())
	}
}
