package fuzz

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// input reads a fuzz input byte by byte; past the end it reads zeros, so every input is
// a valid program.
type input struct {
	b []byte
}

func (in *input) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *input) more() bool { return len(in.b) > 0 }

var (
	fuzzPrimary4 = netip.MustParseAddr("10.99.0.50")
	fuzzPrimary6 = netip.MustParseAddr("fe80::50")
)

// fuzzVIPs are the addresses a fuzzed configuration picks from.
func fuzzVIPs(v6 bool) []netip.Prefix {
	if v6 {
		return []netip.Prefix{
			netip.MustParsePrefix("fd00:99::100/64"), netip.MustParsePrefix("fd00:99::101/64"),
			netip.MustParsePrefix("fd00:99::102/64"), netip.MustParsePrefix("fd00:99::103/128"),
		}
	}
	return []netip.Prefix{
		netip.MustParsePrefix("10.99.0.100/24"), netip.MustParsePrefix("10.99.0.101/24"),
		netip.MustParsePrefix("10.99.0.102/24"), netip.MustParsePrefix("10.99.0.103/32"),
	}
}

// config builds a valid configuration from a few bytes.
func fuzzConfig(in *input, version vrrp.Version, v6 bool) vrrp.Config {
	c := vrrp.Config{Name: "fuzz", VRID: 1 + in.byte()%255, Version: version, Primary: fuzzPrimary4}
	if v6 {
		c.Primary = fuzzPrimary6
	}
	c.Priority = max(1, in.byte())
	flags := in.byte()
	c.Preempt = flags&1 == 0
	c.AcceptMode = flags&2 != 0
	if flags&4 != 0 {
		c.PreemptDelay = time.Duration(in.byte()%8) * time.Second
	}
	c.HandoverOnly = flags&16 != 0
	if version == vrrp.Version2 {
		c.AdvertInterval = time.Duration(1+in.byte()%3) * time.Second
		if flags&8 != 0 {
			c.AuthType, c.AuthPass = vrrp.AuthSimple, "fuzzpass"
		}
	} else {
		c.AdvertInterval = time.Duration(1+int(in.byte())%200) * 10 * time.Millisecond
	}
	all := fuzzVIPs(v6)
	pick := in.byte()
	for k, p := range all {
		if pick&(1<<k) != 0 {
			c.VIPs = append(c.VIPs, p)
		}
	}
	if len(c.VIPs) == 0 {
		c.VIPs = all[:1]
	}
	return c
}

// fuzzAdvert builds an advertisement that is usually well-formed for c, with fields the
// input may bend: priority, interval, VRID, version, auth, address list.
func fuzzAdvert(in *input, c vrrp.Config, a *vrrp.Advertisement) netip.Addr {
	c.AdvertisementFields(a, in.byte())
	mut := in.byte()
	if mut&1 != 0 {
		if c.Version == vrrp.Version2 {
			a.AdvertIntervalSeconds = in.byte()
		} else {
			a.MaxAdvertInterval = uint16(in.byte()) | uint16(in.byte()&0x0f)<<8
		}
	}
	if mut&2 != 0 && len(a.Addresses) > 0 {
		a.Addresses = a.Addresses[:len(a.Addresses)-1]
	}
	if mut&4 != 0 {
		a.VRID ^= in.byte()
	}
	if mut&8 != 0 {
		a.Version ^= vrrp.Version(in.byte() & 7)
	}
	if mut&16 != 0 {
		a.AuthType = vrrp.AuthType(in.byte() % 4)
		a.AuthData[0] ^= in.byte()
	}
	if mut&32 != 0 {
		a.Type = in.byte()
	}
	// The source: below, equal to, or above our primary address.
	src := c.Primary.As16()
	last := in.byte()
	if !c.Primary.Is4() {
		src[15] = last
		return netip.AddrFrom16(src)
	}
	v4 := c.Primary.As4()
	v4[3] = last
	return netip.AddrFrom4(v4)
}

// checker follows the actions of one instance and checks its invariants after each step.
type checker struct {
	t     *testing.T
	inst  *vrrp.Instance
	held  map[netip.Prefix]bool
	state vrrp.State
	// pending: after the last step the instance was Master with its VIPs still to add.
	pending bool
}

func (c *checker) step(what string, now time.Time, acts []vrrp.Action) {
	t, i := c.t, c.inst
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %s: %s (actions %+v)", what, fmt.Sprintf(format, args...), acts)
	}
	state := c.state
	lastTimer := lastTimerAction(acts)
	for k, a := range acts {
		switch a.Kind {
		case vrrp.ActionStateChange:
			if a.From != state || a.From == a.To {
				fail("state change %v->%v from state %v", a.From, a.To, state)
			}
			state = a.To
		case vrrp.ActionAddVIPs:
			for _, p := range a.VIPs {
				if c.held[p] {
					fail("adds %v twice", p)
				}
				c.held[p] = true
			}
		case vrrp.ActionRemoveVIPs:
			for _, p := range a.VIPs {
				if !c.held[p] {
					fail("removes %v it does not hold", p)
				}
				delete(c.held, p)
			}
		case vrrp.ActionSendAdvert:
			// Becoming Master sends its first advertisement just before the StateChange
			// (RFC 5798 §6.4.2; see vrrp.ActionKind).
			becoming := k+1 < len(acts) && acts[k+1].Kind == vrrp.ActionStateChange && acts[k+1].To == vrrp.StateMaster
			if a.Priority != 0 && ((state != vrrp.StateMaster && !becoming) || a.Priority != i.Priority()) {
				fail("sends priority %d in state %v (priority %d)", a.Priority, state, i.Priority())
			}
			if a.Priority == 0 && !c.heldAny() && !c.pending {
				fail("sends priority 0 without having been master")
			}
		case vrrp.ActionAnnounce:
			for _, p := range a.VIPs {
				if !c.held[p] {
					fail("announces %v it does not hold", p)
				}
			}
		case vrrp.ActionArmTimer:
			if !a.At.After(now) {
				fail("arms a timer at %v, not after now %v", a.At, now)
			}
			if k == lastTimer && a.At != i.Deadline() {
				fail("last ArmTimer %v but Deadline %v", a.At, i.Deadline())
			}
		case vrrp.ActionStopTimer:
			if k == lastTimer && !i.Deadline().IsZero() {
				fail("last StopTimer but Deadline %v", i.Deadline())
			}
		default:
			fail("unknown action kind %d", a.Kind)
		}
	}
	if state != i.State() {
		fail("actions end in state %v, instance is in %v", state, i.State())
	}
	c.state = state

	// VIPs are held iff Master, and then exactly the configured ones, except during a
	// break-first takeover, when the Master holds none yet.
	c.pending = i.VIPsPending()
	if c.pending && (i.State() != vrrp.StateMaster || len(c.held) != 0 || i.Timer() != vrrp.TimerAdvert) {
		fail("VIPs pending in state %v holding %v, timer %v", i.State(), c.held, i.Timer())
	}
	if i.State() == vrrp.StateMaster && !c.pending {
		vips := i.Config().VIPs
		if len(c.held) != len(vips) {
			fail("master holds %d VIPs, configured %d", len(c.held), len(vips))
		}
		for _, p := range vips {
			if !c.held[p] {
				fail("master does not hold %v", p)
			}
		}
	} else if len(c.held) != 0 {
		fail("%v holds VIPs %v", i.State(), c.held)
	}
	// The right timer runs in each state.
	want := vrrp.TimerNone
	switch i.State() {
	case vrrp.StateMaster:
		want = vrrp.TimerAdvert
	case vrrp.StateBackup:
		want = vrrp.TimerMasterDown
		if i.Config().HandoverOnly && i.Timer() == vrrp.TimerNone {
			want = vrrp.TimerNone // no silence counts until a master hands over
		}
	}
	if i.Timer() != want || (want == vrrp.TimerNone) != i.Deadline().IsZero() {
		fail("%v has timer %v, deadline %v", i.State(), i.Timer(), i.Deadline())
	}
	cs := i.Counters()
	inMaster := uint64(0)
	if i.State() == vrrp.StateMaster {
		inMaster = 1
	}
	if cs.BecomeMaster-cs.ReleaseMaster != inMaster {
		fail("become_master %d, release_master %d in state %v", cs.BecomeMaster, cs.ReleaseMaster, i.State())
	}
	if i.Priority() == 0 {
		fail("effective priority 0")
	}
	if i.State() == vrrp.StateMaster && i.Master() != i.Config().Primary {
		fail("master reports %v as master, primary %v", i.Master(), i.Config().Primary)
	}
}

func (c *checker) heldAny() bool { return len(c.held) > 0 }

func lastTimerAction(acts []vrrp.Action) int {
	for k := len(acts) - 1; k >= 0; k-- {
		if acts[k].Kind == vrrp.ActionArmTimer || acts[k].Kind == vrrp.ActionStopTimer {
			return k
		}
	}
	return -1
}

// FuzzInstance drives one Instance with a program read from the input: a configuration,
// then operations (start, advertisements with bent fields from lower, equal or higher
// addresses, timers on time or early, shutdown, priority changes, faults, reconfiguration)
// at increasing virtual times. After every operation it checks that VIPs are held iff the
// state is Master, that a Master has Adver_Timer armed and a Backup Master_Down_Timer, that
// the actions tell a consistent story, and that nothing panics.
func FuzzInstance(f *testing.F) {
	// Seeds: a v3 IPv4 backup that hears a master and takes over, a v2 owner, a v3 IPv6
	// router through fault and reconfiguration.
	f.Add([]byte{0, 0, 51, 100, 0, 99, 3, 0, 0, 1, 200, 0, 60, 2, 2, 1, 50, 0, 40, 1, 0, 0, 40, 4})
	f.Add([]byte{1, 0, 7, 255, 8, 0, 1, 0, 2, 1, 254, 0, 90, 6, 1, 6, 0, 2, 5, 0, 3, 200})
	f.Add([]byte{0, 1, 9, 150, 4, 3, 5, 15, 0, 1, 150, 0, 60, 7, 1, 40, 0, 2, 6, 1, 6, 0, 7, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &input{b: data}
		head := in.byte()
		version := vrrp.Version3
		if head&1 != 0 {
			version = vrrp.Version2
		}
		v6 := in.byte()&1 != 0 && version == vrrp.Version3
		cfg := fuzzConfig(in, version, v6)
		inst, err := vrrp.NewInstance(cfg)
		if err != nil {
			t.Fatalf("fuzzConfig built an invalid config %+v: %v", cfg, err)
		}
		c := &checker{t: t, inst: inst, held: map[netip.Prefix]bool{}}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		out := make([]vrrp.Action, 0, 16)
		var a vrrp.Advertisement
		for n := 0; in.more() && n < 500; n++ {
			op := in.byte()
			now = now.Add(time.Duration(op>>4) * 7 * time.Millisecond)
			switch op % 9 {
			case 0:
				out = inst.Start(now, out[:0])
				c.step("Start", now, out)
			case 1:
				src := fuzzAdvert(in, inst.Config(), &a)
				out = inst.HandleAdvert(now, &a, src, out[:0])
				c.step("HandleAdvert", now, out)
			case 2: // the timer on time
				if d := inst.Deadline(); !d.IsZero() {
					now = d
				}
				out = inst.HandleTimer(now, out[:0])
				c.step("HandleTimer", now, out)
			case 3: // a wake-up at any time, usually early
				now = now.Add(time.Duration(in.byte()) * time.Millisecond)
				out = inst.HandleTimer(now, out[:0])
				c.step("HandleTimer (any time)", now, out)
			case 4:
				out = inst.Shutdown(now, out[:0])
				c.step("Shutdown", now, out)
			case 5:
				out = inst.SetPriority(now, in.byte(), out[:0])
				c.step("SetPriority", now, out)
			case 6:
				out = inst.SetFault(now, in.byte()&1 != 0, vrrp.ReasonTrackFault, out[:0])
				c.step("SetFault", now, out)
			case 7:
				nc := fuzzConfig(in, version, v6)
				if in.byte()&1 != 0 {
					nc.VRID = inst.Config().VRID // usually keep the VRID: the in-place path
				}
				out, err = inst.Reconfigure(now, nc, out[:0])
				if err != nil {
					t.Fatalf("Reconfigure rejected a valid config: %v", err)
				}
				c.step("Reconfigure", now, out)
			case 8: // an invalid reconfiguration changes nothing
				bad := inst.Config()
				bad.VIPs = slices.Clone(bad.VIPs)
				bad.Priority = 0
				before := inst.State()
				out, err = inst.Reconfigure(now, bad, out[:0])
				if err == nil || len(out) != 0 || inst.State() != before {
					t.Fatalf("invalid Reconfigure: err %v, actions %+v", err, out)
				}
			}
		}
	})
}
