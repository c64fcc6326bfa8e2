package vrrp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// t0 is the virtual clock's origin; every time in these tests is t0 plus an offset.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

var (
	vip1    = netip.MustParsePrefix("10.99.0.100/24")
	vip2    = netip.MustParsePrefix("10.99.0.101/24")
	vip3    = netip.MustParsePrefix("10.99.0.102/24")
	ours    = netip.MustParseAddr("10.99.0.2")
	lowerIP = netip.MustParseAddr("10.99.0.1")
	higher  = netip.MustParseAddr("10.99.0.3")
)

// v3Config is a VRRPv3 IPv4 backup of priority prio advertising every second.
func v3Config(prio uint8) Config {
	return Config{
		Name: "VI_1", VRID: 51, Version: Version3, Priority: prio,
		AdvertInterval: time.Second, Preempt: true,
		VIPs: []netip.Prefix{vip1, vip2}, Primary: ours,
	}
}

// v2Config is a VRRPv2 router with keepalived's auth_type PASS.
func v2Config(prio uint8) Config {
	c := v3Config(prio)
	c.Version = Version2
	c.AuthType = AuthSimple
	c.AuthPass = "secret"
	return c
}

// advertFor is the advertisement a peer configured like c would send with priority prio.
func advertFor(c Config, prio uint8) *Advertisement {
	a := &Advertisement{}
	c.AdvertisementFields(a, prio)
	return a
}

func mustInstance(t testing.TB, c Config) *Instance {
	t.Helper()
	i, err := NewInstance(c)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// describe renders actions compactly, times relative to t0, so a test states the exact
// sequence it expects in one readable string.
func describe(acts []Action) string {
	var b strings.Builder
	for n, a := range acts {
		if n > 0 {
			b.WriteString(" ")
		}
		switch a.Kind {
		case ActionStateChange:
			fmt.Fprintf(&b, "State(%v->%v: %s)", a.From, a.To, a.Reason)
		case ActionSendAdvert:
			fmt.Fprintf(&b, "Send(%d)", a.Priority)
		case ActionAddVIPs:
			fmt.Fprintf(&b, "Add%v", a.VIPs)
		case ActionRemoveVIPs:
			fmt.Fprintf(&b, "Remove%v", a.VIPs)
		case ActionAnnounce:
			fmt.Fprintf(&b, "Announce%v", a.VIPs)
		case ActionArmTimer:
			fmt.Fprintf(&b, "Arm(%v@%v)", a.Timer, a.At.Sub(t0))
		case ActionStopTimer:
			b.WriteString("Stop")
		default:
			fmt.Fprintf(&b, "?%d", a.Kind)
		}
	}
	return b.String()
}

func expect(t *testing.T, what string, got []Action, want string) {
	t.Helper()
	if g := describe(got); g != want {
		t.Errorf("%s:\n got  %s\n want %s", what, g, want)
	}
}

const (
	becomeMasterFromBackup = "Send(%d) State(BACKUP->MASTER: master down timer expired) Add[10.99.0.100/24 10.99.0.101/24] Announce[10.99.0.100/24 10.99.0.101/24] Arm(Adver_Timer@%v)"
)

// backupAt starts an instance of c at t0 and checks it is a Backup.
func backupAt(t *testing.T, c Config) *Instance {
	t.Helper()
	i := mustInstance(t, c)
	i.Start(t0, nil)
	if i.State() != StateBackup {
		t.Fatalf("after Start: state %v, want BACKUP", i.State())
	}
	return i
}

// masterAt starts an instance of c at t0 and lets its Master_Down_Timer run out.
func masterAt(t *testing.T, c Config) (*Instance, time.Time) {
	t.Helper()
	i := backupAt(t, c)
	now := i.Deadline()
	i.HandleTimer(now, nil)
	if i.State() != StateMaster {
		t.Fatalf("after Master_Down_Timer: state %v, want MASTER", i.State())
	}
	return i, now
}

func TestSkewTimeMultipliesBeforeDividing(t *testing.T) {
	tests := []struct {
		prio     uint8
		interval time.Duration
		skew     time.Duration
		down     time.Duration
	}{
		// (256-100)*1s/256 = 609.375ms
		{100, time.Second, 609375 * time.Microsecond, 3*time.Second + 609375*time.Microsecond},
		// Below 256 ms the skew must not vanish: (256-100)*100ms/256 = 60.9375ms.
		{100, 100 * time.Millisecond, 609375 * 100 * time.Nanosecond, 300*time.Millisecond + 609375*100*time.Nanosecond},
		{254, 10 * time.Millisecond, 78125 * time.Nanosecond, 30*time.Millisecond + 78125*time.Nanosecond},
		{1, 40950 * time.Millisecond, 255 * 40950 * time.Millisecond / 256, 3*40950*time.Millisecond + 255*40950*time.Millisecond/256},
		{255, time.Second, time.Second / 256, 3*time.Second + time.Second/256},
	}
	for _, tt := range tests {
		if got := SkewTime(tt.prio, tt.interval); got != tt.skew {
			t.Errorf("SkewTime(%d, %v) = %v, want %v", tt.prio, tt.interval, got, tt.skew)
		}
		if got := MasterDownInterval(tt.prio, tt.interval); got != tt.down {
			t.Errorf("MasterDownInterval(%d, %v) = %v, want %v", tt.prio, tt.interval, got, tt.down)
		}
	}
	// A higher priority always times out first, even at the smallest interval.
	for p := 1; p < 255; p++ {
		if SkewTime(uint8(p), 10*time.Millisecond) <= SkewTime(uint8(p+1), 10*time.Millisecond) {
			t.Fatalf("skew of priority %d not above that of %d at 10ms", p, p+1)
		}
	}
}

func TestStateString(t *testing.T) {
	want := map[State]string{StateInit: "INIT", StateBackup: "BACKUP", StateMaster: "MASTER", StateFault: "FAULT", 9: "UNKNOWN"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("State(%d).String() = %q, want %q", s, s.String(), w)
		}
	}
	// keepalived's numbering, used by the metrics.
	if StateInit != 0 || StateBackup != 1 || StateMaster != 2 || StateFault != 3 {
		t.Error("state numbering differs from keepalived's INIT 0, BACKUP 1, MASTER 2, FAULT 3")
	}
}

func TestKindStrings(t *testing.T) {
	kinds := map[ActionKind]string{ActionStateChange: "StateChange", ActionSendAdvert: "SendAdvert",
		ActionAddVIPs: "AddVIPs", ActionRemoveVIPs: "RemoveVIPs", ActionAnnounce: "Announce",
		ActionArmTimer: "ArmTimer", ActionStopTimer: "StopTimer", 0: "unknown"}
	for k, w := range kinds {
		if k.String() != w {
			t.Errorf("ActionKind(%d).String() = %q, want %q", k, k.String(), w)
		}
	}
	timers := map[TimerKind]string{TimerNone: "none", TimerAdvert: "Adver_Timer", TimerMasterDown: "Master_Down_Timer", 7: "unknown"}
	for k, w := range timers {
		if k.String() != w {
			t.Errorf("TimerKind(%d).String() = %q, want %q", k, k.String(), w)
		}
	}
}

func TestNewInstanceRejectsInvalidConfig(t *testing.T) {
	c := v3Config(100)
	c.VRID = 0
	if _, err := NewInstance(c); err == nil {
		t.Fatal("NewInstance accepted VRID 0")
	}
}

func TestNewInstanceCopiesVIPs(t *testing.T) {
	c := v3Config(100)
	i := mustInstance(t, c)
	c.VIPs[0] = vip3
	if i.Config().VIPs[0] != vip1 {
		t.Fatal("instance shares the caller's VIPs slice")
	}
}

// TestInitialize covers RFC 5798 §6.4.1: the Startup event.
func TestInitialize(t *testing.T) {
	tests := []struct {
		name  string
		prio  uint8
		want  string
		state State
	}{
		{"backup waits Master_Down_Interval", 100,
			"State(INIT->BACKUP: startup) Arm(Master_Down_Timer@3.609375s)", StateBackup},
		{"lowest priority waits longest", 1,
			"State(INIT->BACKUP: startup) Arm(Master_Down_Timer@3.99609375s)", StateBackup},
		{"address owner becomes master at once", 255,
			"Send(255) State(INIT->MASTER: address owner (priority 255)) Add[10.99.0.100/24 10.99.0.101/24] Announce[10.99.0.100/24 10.99.0.101/24] Arm(Adver_Timer@1s)", StateMaster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := mustInstance(t, v3Config(tt.prio))
			if i.State() != StateInit || i.Timer() != TimerNone || !i.Deadline().IsZero() {
				t.Fatalf("new instance: state %v timer %v deadline %v", i.State(), i.Timer(), i.Deadline())
			}
			expect(t, "Start", i.Start(t0, nil), tt.want)
			if i.State() != tt.state {
				t.Errorf("state %v, want %v", i.State(), tt.state)
			}
			expect(t, "second Start", i.Start(at(time.Second), nil), "")
		})
	}
}

// TestBackup covers RFC 5798 §6.4.2 event by event.
func TestBackup(t *testing.T) {
	c := v3Config(100)
	noPreempt := c
	noPreempt.Preempt = false
	fast := v3Config(200)
	fast.AdvertInterval = 200 * time.Millisecond
	half := at(500 * time.Millisecond)

	tests := []struct {
		name   string
		cfg    Config
		advert *Advertisement
		src    netip.Addr
		want   string
		master netip.Addr
	}{
		{"higher priority resets Master_Down_Timer", c, advertFor(c, 200), higher,
			"Arm(Master_Down_Timer@4.109375s)", higher},
		{"equal priority resets it whatever the address", c, advertFor(c, 100), lowerIP,
			"Arm(Master_Down_Timer@4.109375s)", lowerIP},
		{"priority 0 arms Skew_Time", c, advertFor(c, 0), higher,
			"Arm(Master_Down_Timer@1.109375s)", netip.Addr{}},
		{"preempt discards lower priority", c, advertFor(c, 50), higher,
			"", netip.Addr{}},
		{"nopreempt accepts lower priority", noPreempt, advertFor(noPreempt, 50), higher,
			"Arm(Master_Down_Timer@4.109375s)", higher},
		{"v3 adopts the master's interval", c, advertFor(fast, 200), higher,
			// 3*200ms + (256-100)*200ms/256
			"Arm(Master_Down_Timer@1.221875s)", higher},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := backupAt(t, tt.cfg)
			before := i.Deadline()
			got := i.HandleAdvert(half, tt.advert, tt.src, nil)
			expect(t, "HandleAdvert", got, tt.want)
			if i.State() != StateBackup {
				t.Errorf("state %v, want BACKUP", i.State())
			}
			if i.Master() != tt.master {
				t.Errorf("Master() = %v, want %v", i.Master(), tt.master)
			}
			if tt.master.IsValid() && i.MasterPriority() != tt.advert.Priority {
				t.Errorf("MasterPriority() = %d, want %d", i.MasterPriority(), tt.advert.Priority)
			}
			if tt.want == "" && i.Deadline() != before {
				t.Errorf("discarded advert moved the deadline from %v to %v", before, i.Deadline())
			}
			if i.Timer() != TimerMasterDown {
				t.Errorf("timer %v, want Master_Down_Timer", i.Timer())
			}
		})
	}

	t.Run("Master_Down_Timer fires", func(t *testing.T) {
		i := backupAt(t, c)
		d := i.Deadline()
		expect(t, "early", i.HandleTimer(d.Add(-time.Nanosecond), nil), "")
		expect(t, "due", i.HandleTimer(d, nil), fmt.Sprintf(becomeMasterFromBackup, 100, d.Add(time.Second).Sub(t0)))
		if i.Master() != ours || i.Counters().BecomeMaster != 1 || i.Counters().AdvertSent != 1 {
			t.Errorf("master %v counters %+v", i.Master(), i.Counters())
		}
	})

	t.Run("adopted interval sets the skew after priority 0", func(t *testing.T) {
		i := backupAt(t, c)
		i.HandleAdvert(half, advertFor(fast, 200), higher, nil)
		// Skew_Time with Master_Adver_Interval 200ms: 156*200ms/256 = 121.875ms
		expect(t, "priority 0", i.HandleAdvert(at(time.Second), advertFor(fast, 0), higher, nil),
			"Arm(Master_Down_Timer@1.121875s)")
	})
}

// TestMaster covers RFC 5798 §6.4.3 with the RFC 9568 change.
func TestMaster(t *testing.T) {
	c := v3Config(100)
	fast := v3Config(200)
	fast.AdvertInterval = 200 * time.Millisecond
	tests := []struct {
		name   string
		advert *Advertisement
		src    netip.Addr
		want   string // times relative to when it became master (3.609375s)
		state  State
	}{
		{"priority 0 answers at once", advertFor(c, 0), higher,
			"Send(100) Arm(Adver_Timer@4.609375s)", StateMaster},
		{"lower priority answers at once (RFC 9568)", advertFor(c, 50), higher,
			"Send(100) Arm(Adver_Timer@4.609375s)", StateMaster},
		{"equal priority from lower address answers at once", advertFor(c, 100), lowerIP,
			"Send(100) Arm(Adver_Timer@4.609375s)", StateMaster},
		{"equal priority from higher address wins", advertFor(c, 100), higher,
			"State(MASTER->BACKUP: equal priority from higher address) Remove[10.99.0.100/24 10.99.0.101/24] Arm(Master_Down_Timer@7.21875s)", StateBackup},
		{"higher priority wins", advertFor(c, 101), lowerIP,
			"State(MASTER->BACKUP: advertisement with higher priority) Remove[10.99.0.100/24 10.99.0.101/24] Arm(Master_Down_Timer@7.21875s)", StateBackup},
		{"stepping down adopts the winner's interval", advertFor(fast, 200), higher,
			// 3.609375s + 3*200ms + 156*200ms/256
			"State(MASTER->BACKUP: advertisement with higher priority) Remove[10.99.0.100/24 10.99.0.101/24] Arm(Master_Down_Timer@4.33125s)", StateBackup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, now := masterAt(t, c)
			expect(t, "HandleAdvert", i.HandleAdvert(now, tt.advert, tt.src, nil), tt.want)
			if i.State() != tt.state {
				t.Errorf("state %v, want %v", i.State(), tt.state)
			}
			if tt.state == StateBackup {
				if i.Master() != tt.src || i.Counters().ReleaseMaster != 1 {
					t.Errorf("after stepping down: master %v, release_master %d", i.Master(), i.Counters().ReleaseMaster)
				}
			}
		})
	}

	t.Run("Adver_Timer sends and re-arms", func(t *testing.T) {
		i, now := masterAt(t, c)
		for n := 0; n < 3; n++ {
			now = i.Deadline()
			expect(t, "tick", i.HandleTimer(now, nil), fmt.Sprintf("Send(100) Arm(Adver_Timer@%v)", now.Add(time.Second).Sub(t0)))
		}
		if got := i.Counters().AdvertSent; got != 4 {
			t.Errorf("advert_sent = %d, want 4", got)
		}
	})

	t.Run("IPv6 tie-break compares addresses unsigned big-endian", func(t *testing.T) {
		c6 := v3Config(100)
		c6.Primary = netip.MustParseAddr("fe80::7f00:1")
		c6.VIPs = []netip.Prefix{netip.MustParsePrefix("fd00:99::100/64")}
		i, now := masterAt(t, c6)
		a := advertFor(c6, 100)
		// 0x80 in the last byte is above 0x7f: a signed comparison would get this wrong.
		i.HandleAdvert(now, a, netip.MustParseAddr("fe80::7f00:0"), nil)
		if i.State() != StateMaster {
			t.Fatal("lost to a lower address")
		}
		i.HandleAdvert(now, a, netip.MustParseAddr("fe80::8000:0"), nil)
		if i.State() != StateBackup {
			t.Fatal("kept mastership against a higher address")
		}
	})

	t.Run("zones are ignored", func(t *testing.T) {
		c6 := v3Config(100)
		c6.Primary = netip.MustParseAddr("fe80::50%eth0")
		c6.VIPs = []netip.Prefix{netip.MustParsePrefix("fd00:99::100/64")}
		i, now := masterAt(t, c6)
		a := advertFor(c6, 100)
		expect(t, "own advert with another zone", i.HandleAdvert(now, a, netip.MustParseAddr("fe80::50%eth1"), nil), "")
		i.HandleAdvert(now, a, netip.MustParseAddr("fe80::51%eth0"), nil)
		if i.State() != StateBackup || i.Master() != netip.MustParseAddr("fe80::51") {
			t.Fatalf("state %v master %v", i.State(), i.Master())
		}
	})
	t.Run("owner with equal priority 255 from higher address steps down", func(t *testing.T) {
		i := mustInstance(t, v3Config(255))
		i.Start(t0, nil)
		i.HandleAdvert(t0, advertFor(v3Config(255), 255), higher, nil)
		if i.State() != StateBackup {
			t.Fatalf("state %v, want BACKUP", i.State())
		}
	})
}

func TestShutdown(t *testing.T) {
	c := v3Config(100)
	t.Run("master sends priority 0 then drops VIPs", func(t *testing.T) {
		i, now := masterAt(t, c)
		expect(t, "Shutdown", i.Shutdown(now, nil),
			"State(MASTER->INIT: shutdown) Send(0) Remove[10.99.0.100/24 10.99.0.101/24] Stop")
		cs := i.Counters()
		if cs.PriZeroSent != 1 || cs.ReleaseMaster != 1 || cs.AdvertSent != 2 {
			t.Errorf("counters %+v", cs)
		}
		if i.State() != StateInit || i.Timer() != TimerNone || i.Master().IsValid() {
			t.Errorf("after shutdown: %v %v %v", i.State(), i.Timer(), i.Master())
		}
	})
	t.Run("backup stops its timer", func(t *testing.T) {
		i := backupAt(t, c)
		expect(t, "Shutdown", i.Shutdown(t0, nil), "State(BACKUP->INIT: shutdown) Stop")
	})
	t.Run("init does nothing", func(t *testing.T) {
		i := mustInstance(t, c)
		expect(t, "Shutdown", i.Shutdown(t0, nil), "")
	})
	t.Run("restart after shutdown", func(t *testing.T) {
		i, now := masterAt(t, c)
		i.Shutdown(now, nil)
		expect(t, "Start", i.Start(t0, nil), "State(INIT->BACKUP: startup) Arm(Master_Down_Timer@3.609375s)")
	})
	t.Run("adverts are ignored in Init", func(t *testing.T) {
		i := mustInstance(t, c)
		expect(t, "HandleAdvert", i.HandleAdvert(t0, advertFor(c, 200), higher, nil), "")
		expect(t, "HandleTimer", i.HandleTimer(at(time.Hour), nil), "")
		if i.Counters() != (Counters{}) {
			t.Errorf("counted in Init: %+v", i.Counters())
		}
	})
}

func TestFault(t *testing.T) {
	c := v3Config(100)
	t.Run("master to fault and back", func(t *testing.T) {
		i, now := masterAt(t, c)
		expect(t, "fault", i.SetFault(now, true, ReasonInterfaceDown, nil),
			"State(MASTER->FAULT: interface down) Send(0) Remove[10.99.0.100/24 10.99.0.101/24] Stop")
		expect(t, "fault again", i.SetFault(now, true, ReasonTrackFault, nil), "")
		expect(t, "advert in fault", i.HandleAdvert(now, advertFor(c, 200), higher, nil), "")
		expect(t, "timer in fault", i.HandleTimer(now.Add(time.Hour), nil), "")
		if got := i.Counters().AdvertRcvd; got != 1 {
			t.Errorf("advert_rcvd in fault = %d, want 1 (checked and counted, not acted on)", got)
		}
		expect(t, "clear", i.SetFault(at(10*time.Second), false, "", nil),
			"State(FAULT->BACKUP: fault cleared) Arm(Master_Down_Timer@13.609375s)")
	})
	t.Run("backup to fault", func(t *testing.T) {
		i := backupAt(t, c)
		expect(t, "fault", i.SetFault(t0, true, ReasonTrackFault, nil),
			"State(BACKUP->FAULT: tracked object in fault) Stop")
	})
	t.Run("owner leaves fault as master", func(t *testing.T) {
		i := mustInstance(t, v3Config(255))
		i.Start(t0, nil)
		i.SetFault(t0, true, ReasonInterfaceDown, nil)
		expect(t, "clear", i.SetFault(at(time.Second), false, "", nil),
			"Send(255) State(FAULT->MASTER: fault cleared) Add[10.99.0.100/24 10.99.0.101/24] Announce[10.99.0.100/24 10.99.0.101/24] Arm(Adver_Timer@2s)")
	})
	t.Run("fault before start", func(t *testing.T) {
		i := mustInstance(t, c)
		expect(t, "fault in init", i.SetFault(t0, true, ReasonInterfaceDown, nil), "")
		expect(t, "start", i.Start(t0, nil), "State(INIT->FAULT: interface down)")
		expect(t, "shutdown", i.Shutdown(t0, nil), "State(FAULT->INIT: shutdown)")
		if !i.Fault() {
			t.Error("shutdown forgot the fault")
		}
	})
}

// TestPreemptDelay follows keepalived's preempt_delay: a lower-priority master is tolerated
// for the delay after startup or after it is first seen.
func TestPreemptDelay(t *testing.T) {
	c := v3Config(200)
	c.PreemptDelay = 10 * time.Second
	low := advertFor(v3Config(100), 100)

	t.Run("after startup", func(t *testing.T) {
		i := backupAt(t, c)
		expect(t, "within delay", i.HandleAdvert(at(time.Second), low, higher, nil),
			"Arm(Master_Down_Timer@4.21875s)")
		i.HandleAdvert(at(4*time.Second), low, higher, nil)
		i.HandleAdvert(at(7*time.Second), low, higher, nil)
		expect(t, "delay over", i.HandleAdvert(at(10*time.Second), low, higher, nil), "")
		d := i.Deadline()
		if d != at(7*time.Second+3218750000) {
			t.Fatalf("deadline %v", d.Sub(t0))
		}
		i.HandleTimer(d, nil)
		if i.State() != StateMaster {
			t.Fatalf("state %v after delay, want MASTER", i.State())
		}
	})
	t.Run("after first seeing a lower-priority master", func(t *testing.T) {
		i := backupAt(t, c)
		// A higher-priority master stops the startup delay.
		i.HandleAdvert(at(time.Second), advertFor(c, 250), higher, nil)
		// It goes; a lower one appears at 20s: the delay starts then.
		expect(t, "first lower", i.HandleAdvert(at(20*time.Second), low, higher, nil),
			"Arm(Master_Down_Timer@23.21875s)")
		expect(t, "still within", i.HandleAdvert(at(29*time.Second), low, higher, nil),
			"Arm(Master_Down_Timer@32.21875s)")
		expect(t, "over", i.HandleAdvert(at(30*time.Second), low, higher, nil), "")
	})
	t.Run("without delay preemption is immediate", func(t *testing.T) {
		c := c
		c.PreemptDelay = 0
		i := backupAt(t, c)
		expect(t, "lower", i.HandleAdvert(at(time.Second), low, higher, nil), "")
	})
}

func TestCounters(t *testing.T) {
	v2 := v2Config(100)
	tests := []struct {
		name   string
		cfg    Config
		mutate func(a *Advertisement)
		src    netip.Addr
		want   Counters
		acted  bool
	}{
		{"valid advert", v2, nil, higher, Counters{AdvertRcvd: 1}, true},
		{"priority 0", v2, func(a *Advertisement) { a.Priority = 0 }, higher, Counters{AdvertRcvd: 1, PriZeroRcvd: 1}, true},
		// RFC 3768 §7.1, keepalived 2.2.7: v2 drops another address list (a differing
		// count before advert_rcvd, differing addresses after it), unless the owner sent it.
		{"v2 address count differs: dropped, counted", v2, func(a *Advertisement) { a.Addresses = a.Addresses[:1] }, higher, Counters{AddrListErr: 1}, false},
		{"v2 addresses differ: dropped, counted", v2, func(a *Advertisement) { a.Addresses[1] = vip3.Addr() }, higher, Counters{AdvertRcvd: 1, AddrListErr: 1}, false},
		{"v2 address list of the owner differs: counted, accepted", v2, func(a *Advertisement) { a.Priority = PriorityOwner; a.Addresses = a.Addresses[:1] }, higher, Counters{AdvertRcvd: 1, AddrListErr: 1}, true},
		// RFC 5798 / RFC 9568 §7.1 only ask to log it (keepalived >= 2.3.3 accepts it).
		{"v3 address list differs: counted, accepted", v3Config(100), func(a *Advertisement) { a.Addresses = a.Addresses[:1] }, higher, Counters{AdvertRcvd: 1, AddrListErr: 1}, true},
		{"address order differs: fine", v2, func(a *Advertisement) { a.Addresses[0], a.Addresses[1] = a.Addresses[1], a.Addresses[0] }, higher, Counters{AdvertRcvd: 1}, true},
		{"v2 interval differs", v2, func(a *Advertisement) { a.AdvertIntervalSeconds = 2 }, higher, Counters{AdvertIntervalErr: 1}, false},
		{"wrong password", v2, func(a *Advertisement) { a.AuthData[0] ^= 1 }, higher, Counters{AuthFailure: 1}, false},
		{"no auth when we want PASS", v2, func(a *Advertisement) { a.AuthType = AuthNone }, higher, Counters{AuthTypeMismatch: 1}, false},
		{"IP AH", v2, func(a *Advertisement) { a.AuthType = AuthIPAH }, higher, Counters{AuthTypeMismatch: 1}, false},
		{"invalid auth type", v2, func(a *Advertisement) { a.AuthType = 7 }, higher, Counters{InvalidAuthType: 1}, false},
		{"other version", v2, func(a *Advertisement) { a.Version = Version3 }, higher, Counters{VersionErr: 1}, false},
		{"invalid type", v2, func(a *Advertisement) { a.Type = 2 }, higher, Counters{InvalidTypeRcvd: 1}, false},
		{"other VRID: not ours, uncounted", v2, func(a *Advertisement) { a.VRID = 52 }, higher, Counters{}, false},
		{"our own address: looped back, uncounted", v2, nil, ours, Counters{}, false},
		{"our own address, IPv4-mapped: still ours", v2, nil, netip.AddrFrom16(ours.As16()), Counters{}, false},
		{"other family: not ours, uncounted", v2, nil, netip.MustParseAddr("fe80::1"), Counters{}, false},
		{"IPv4-mapped source is IPv4", v2, nil, netip.AddrFrom16(higher.As16()), Counters{AdvertRcvd: 1}, true},
		{"v3 interval zero", v3Config(100), func(a *Advertisement) { a.MaxAdvertInterval = 0 }, higher, Counters{AdvertIntervalErr: 1}, false},
		{"v3 other interval: adopted, not an error", v3Config(100), func(a *Advertisement) { a.MaxAdvertInterval = 3 }, higher, Counters{AdvertRcvd: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := backupAt(t, tt.cfg)
			a := advertFor(tt.cfg, 150)
			if tt.mutate != nil {
				tt.mutate(a)
			}
			got := i.HandleAdvert(at(time.Second), a, tt.src, nil)
			if (len(got) > 0) != tt.acted {
				t.Errorf("actions %s, acted want %v", describe(got), tt.acted)
			}
			if i.Counters() != tt.want {
				t.Errorf("counters\n got  %+v\n want %+v", i.Counters(), tt.want)
			}
		})
	}
	t.Run("CountError", func(t *testing.T) {
		i := backupAt(t, v2)
		if !i.CountError(ErrTTL) || !i.CountError(fmt.Errorf("wrapped: %w", ErrChecksum)) {
			t.Fatal("CountError did not recognise a codec error")
		}
		if i.CountError(fmt.Errorf("other")) {
			t.Fatal("CountError counted a foreign error")
		}
		if cs := i.Counters(); cs.IPTTLErr != 1 || cs.ChecksumErr != 1 {
			t.Fatalf("counters %+v", cs)
		}
	})
}

func TestSetPriority(t *testing.T) {
	c := v3Config(100)
	t.Run("master advertises the new priority at once", func(t *testing.T) {
		i, now := masterAt(t, c)
		expect(t, "SetPriority", i.SetPriority(now, 90, nil), "Send(90) Arm(Adver_Timer@4.609375s)")
		expect(t, "same again", i.SetPriority(now, 90, nil), "")
		// Now a router of priority 95 preempts it.
		i.HandleAdvert(now, advertFor(c, 95), lowerIP, nil)
		if i.State() != StateBackup {
			t.Fatalf("state %v, want BACKUP", i.State())
		}
	})
	t.Run("backup uses it for preemption", func(t *testing.T) {
		i := backupAt(t, c)
		i.SetPriority(t0, 150, nil)
		expect(t, "lower master now", i.HandleAdvert(at(time.Second), advertFor(c, 120), higher, nil), "")
		if i.SkewTime() != SkewTime(150, time.Second) {
			t.Errorf("skew %v uses the old priority", i.SkewTime())
		}
	})
	t.Run("zero becomes one", func(t *testing.T) {
		i := backupAt(t, c)
		i.SetPriority(t0, 0, nil)
		if i.Priority() != 1 {
			t.Fatalf("priority %d, want 1", i.Priority())
		}
	})
}

func TestReconfigure(t *testing.T) {
	c := v3Config(100)
	t.Run("master swaps VIPs in place", func(t *testing.T) {
		i, now := masterAt(t, c)
		n := c
		n.VIPs = []netip.Prefix{vip2, vip3}
		got, err := i.Reconfigure(now, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "Reconfigure", got, "Remove[10.99.0.100/24] Add[10.99.0.102/24] Send(100) Announce[10.99.0.102/24] Arm(Adver_Timer@4.609375s)")
		if i.State() != StateMaster || i.Counters().BecomeMaster != 1 {
			t.Error("lost mastership")
		}
	})
	t.Run("master with nothing advertised changed", func(t *testing.T) {
		i, now := masterAt(t, c)
		n := c
		n.Name = "renamed"
		n.AcceptMode = true
		got, err := i.Reconfigure(now, n, nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("%v %s", err, describe(got))
		}
		if i.Config().Name != "renamed" {
			t.Error("config not applied")
		}
	})
	t.Run("priority change replaces the effective priority", func(t *testing.T) {
		i := backupAt(t, c)
		i.SetPriority(t0, 120, nil)
		n := c
		n.Priority = 130
		if _, err := i.Reconfigure(t0, n, nil); err != nil {
			t.Fatal(err)
		}
		if i.Priority() != 130 || i.State() != StateBackup {
			t.Fatalf("priority %d state %v", i.Priority(), i.State())
		}
	})
	t.Run("backup becoming owner takes over", func(t *testing.T) {
		i := backupAt(t, c)
		n := c
		n.Priority = 255
		got, _ := i.Reconfigure(at(time.Second), n, nil)
		expect(t, "Reconfigure", got, "Send(255) State(BACKUP->MASTER: priority changed to address owner (255)) Add[10.99.0.100/24 10.99.0.101/24] Announce[10.99.0.100/24 10.99.0.101/24] Arm(Adver_Timer@2s)")
	})
	t.Run("VRID change restarts", func(t *testing.T) {
		i, now := masterAt(t, c)
		n := c
		n.VRID = 52
		got, err := i.Reconfigure(now, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "Reconfigure", got, "State(MASTER->INIT: shutdown) Send(0) Remove[10.99.0.100/24 10.99.0.101/24] Stop State(INIT->BACKUP: reconfigured) Arm(Master_Down_Timer@7.21875s)")
	})
	t.Run("restart in fault stays in fault", func(t *testing.T) {
		i := backupAt(t, c)
		i.SetFault(t0, true, ReasonInterfaceDown, nil)
		n := c
		n.VRID = 52
		got, _ := i.Reconfigure(t0, n, nil)
		expect(t, "Reconfigure", got, "State(FAULT->INIT: shutdown) State(INIT->FAULT: interface down)")
		expect(t, "clear", i.SetFault(at(time.Second), false, "", nil), "State(FAULT->BACKUP: fault cleared) Arm(Master_Down_Timer@4.609375s)")
	})
	t.Run("restart from init stays in init", func(t *testing.T) {
		i := mustInstance(t, c)
		n := c
		n.VRID = 52
		got, _ := i.Reconfigure(t0, n, nil)
		if len(got) != 0 || i.State() != StateInit || i.Config().VRID != 52 {
			t.Fatalf("%s, state %v", describe(got), i.State())
		}
	})
	t.Run("invalid config changes nothing", func(t *testing.T) {
		i, now := masterAt(t, c)
		n := c
		n.VIPs = nil
		got, err := i.Reconfigure(now, n, nil)
		if err == nil || len(got) != 0 || len(i.Config().VIPs) != 2 {
			t.Fatalf("err %v actions %s", err, describe(got))
		}
	})
	t.Run("v2 backup follows its own new interval", func(t *testing.T) {
		v2 := v2Config(100)
		i := backupAt(t, v2)
		n := v2
		n.AdvertInterval = 2 * time.Second
		i.Reconfigure(t0, n, nil)
		if i.MasterAdverInterval() != 2*time.Second {
			t.Fatalf("Master_Adver_Interval %v", i.MasterAdverInterval())
		}
		expect(t, "old interval now wrong", i.HandleAdvert(t0, advertFor(v2, 150), higher, nil), "")
	})
}

func TestHandleAdvertDoesNotAllocate(t *testing.T) {
	c := v3Config(100)
	i := backupAt(t, c)
	a := advertFor(c, 150)
	out := make([]Action, 0, 8)
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Second)
		out = i.HandleAdvert(now, a, higher, out[:0])
	})
	if allocs != 0 {
		t.Fatalf("HandleAdvert allocates %v times per call", allocs)
	}
	m, _ := masterAt(t, c)
	low := advertFor(c, 50)
	allocs = testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Second)
		out = m.HandleAdvert(now, low, higher, out[:0])
		out = m.HandleTimer(m.Deadline(), out[:0])
	})
	if allocs != 0 {
		t.Fatalf("master steps allocate %v times per call", allocs)
	}
}

func BenchmarkHandleAdvert(b *testing.B) {
	c := v3Config(100)
	i := mustInstance(b, c)
	i.Start(t0, nil)
	a := advertFor(c, 150)
	out := make([]Action, 0, 8)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		out = i.HandleAdvert(now, a, higher, out[:0])
	}
}

// BenchmarkMasterTick is one Adver_Timer expiry in Master: send and re-arm.
func BenchmarkMasterTick(b *testing.B) {
	c := v3Config(255)
	i := mustInstance(b, c)
	i.Start(t0, nil)
	out := make([]Action, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		out = i.HandleTimer(i.Deadline(), out[:0])
	}
}
