package vrrp

import (
	"net/netip"
	"testing"
	"time"
)

// trackLAN is two routers on a reliable simulated link: r0 at 150, r1 at 100, 10 ms
// adverts; r0 preempts, r1 only if preempt.
func trackLAN(t *testing.T, preempt bool) *lan {
	return reliableLAN(t, 3, []uint8{150, 100}, func(k int) bool { return k == 0 || preempt })
}

// What track_script does through the state machine's inputs: a master whose effective
// priority drops below a backup's hands over (the backup preempts), and takes back over
// when it rises again; a weight-0 failure is FAULT, and recovery goes through BACKUP.
func TestTrackingThroughSetPriorityAndSetFault(t *testing.T) {
	l := trackLAN(t, true)
	l.apply(0, l.routers[0].inst.SetPriority(l.now, 90, nil))
	l.run(l.now.Add(time.Second))
	if l.exactlyOneMaster("after r0 dropped to 90") != 1 {
		t.Fatal("r1 (100) did not preempt r0 at 90")
	}
	if s := l.routers[0].inst.State(); s != StateBackup {
		t.Fatalf("r0 in %v, want BACKUP", s)
	}
	l.apply(0, l.routers[0].inst.SetPriority(l.now, 150, nil))
	l.run(l.now.Add(time.Second))
	if l.exactlyOneMaster("after r0 rose to 150") != 0 {
		t.Fatal("r0 (150) did not preempt back")
	}

	// weight 0: FAULT sends priority 0 (r1 takes over at once) and holds no timer.
	var out []Action
	out = l.routers[0].inst.SetFault(l.now, true, ReasonTrackFault, out)
	l.apply(0, out)
	if s := l.routers[0].inst.State(); s != StateFault {
		t.Fatalf("r0 in %v, want FAULT", s)
	}
	l.run(l.now.Add(time.Second))
	if l.exactlyOneMaster("while r0 is in FAULT") != 1 {
		t.Fatal("r1 is not master while r0 is in FAULT")
	}
	out = l.routers[0].inst.SetFault(l.now, false, "", out[:0])
	if len(out) == 0 || out[0].Kind != ActionStateChange || out[0].To != StateBackup {
		t.Fatalf("recovery %v, want a change to BACKUP first", out)
	}
	l.apply(0, out)
	l.run(l.now.Add(time.Second))
	if l.exactlyOneMaster("after r0 recovered") != 0 {
		t.Fatal("r0 (150) did not take back over after recovering")
	}
}

// Without preempt on the backup, a master whose priority drops keeps the VIP: the backup
// does not take over from a live master.
func TestTrackingNoPreempt(t *testing.T) {
	l := trackLAN(t, false)
	l.apply(0, l.routers[0].inst.SetPriority(l.now, 90, nil))
	l.run(l.now.Add(time.Second))
	if l.exactlyOneMaster("after r0 dropped to 90") != 0 {
		t.Fatal("r1 took over without preempt")
	}
}

// StepDown takes a Master to Backup without priority 0, drops the VIPs and waits
// Master_Down_Interval; a Backup is left alone.
func TestStepDown(t *testing.T) {
	now := time.Unix(1000, 0)
	i, err := NewInstance(Config{Name: "s", VRID: 1, Version: Version3, Priority: 254, AdvertInterval: time.Second,
		Preempt: true, VIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}, Primary: netip.MustParseAddr("10.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	i.Start(now, nil)
	if out := i.StepDown(now, ReasonSyncGroup, nil); len(out) != 0 {
		t.Fatalf("backup: %+v", out)
	}
	i.HandleTimer(now.Add(10*time.Second), nil)
	if i.State() != StateMaster {
		t.Fatalf("state %v", i.State())
	}
	at := now.Add(11 * time.Second)
	out := i.StepDown(at, ReasonSyncGroup, nil)
	var sent, removed bool
	for _, a := range out {
		sent = sent || a.Kind == ActionSendAdvert
		removed = removed || a.Kind == ActionRemoveVIPs
	}
	if i.State() != StateBackup || sent || !removed || i.Timer() != TimerMasterDown || !i.Deadline().Equal(at.Add(i.MasterDownInterval())) {
		t.Errorf("state %v sent %v removed %v timer %v deadline %v", i.State(), sent, removed, i.Timer(), i.Deadline())
	}
}
