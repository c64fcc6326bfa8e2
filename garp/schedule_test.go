package garp

import (
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/pcapfile"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// event is "n rounds at offset".
type event struct {
	at     time.Duration
	rounds int
}

// run drives a schedule on a virtual clock until horizon, waking exactly
// when Next says, and returns what Due handed out.
func run(c *Schedule, horizon time.Duration) []event {
	var got []event
	for {
		next, ok := c.Next()
		if !ok || next.Sub(t0) > horizon {
			return got
		}
		if n := c.Due(next); n > 0 {
			got = append(got, event{next.Sub(t0), n})
		}
	}
}

func equal(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDefaultsAreKeepalived(t *testing.T) {
	d := Defaults()
	if d.MasterDelay != 5*time.Second || d.MasterRepeat != 5 || d.MasterRefresh != 0 ||
		d.MasterRefreshRepeat != 1 || d.Interval != 0 || d.NAInterval != 0 {
		t.Errorf("defaults %+v are not keepalived 2.2.7's", d)
	}
	if err := d.validate(); err != nil {
		t.Error(err)
	}
}

func TestScheduleBecomeMasterDefaults(t *testing.T) {
	c := NewSchedule(Defaults())
	if _, ok := c.Next(); ok {
		t.Fatal("idle schedule has something due")
	}
	c.BecomeMaster(t0)
	got := run(c, time.Hour)
	want := []event{{0, 5}, {5 * time.Second, 5}}
	if !equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestScheduleMatchesCapture checks the schedule against keepalived's own
// timing in the capture: with repeat 2 and delay 1 s, two bursts of two
// frames of each kind, one second apart.
func TestScheduleMatchesCapture(t *testing.T) {
	s := Defaults()
	s.MasterRepeat, s.MasterDelay = 2, time.Second // testdata/keepalived/garp-na-h1.conf
	c := NewSchedule(s)
	c.BecomeMaster(t0)
	got := run(c, time.Hour)
	if want := []event{{0, 2}, {time.Second, 2}}; !equal(got, want) {
		t.Fatalf("schedule %v, want %v", got, want)
	}

	pkts, err := pcapfile.ReadFile(fixture.Keepalived("keepalived-garp-na.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	var arpTimes []time.Time
	for _, p := range pkts {
		if p.LinkType == pcapfile.LinkTypeEthernet && len(p.Data) > 14 && p.Data[12] == 0x08 && p.Data[13] == 0x06 {
			arpTimes = append(arpTimes, p.Timestamp)
		}
	}
	if len(arpTimes) != 4 {
		t.Fatalf("%d GARPs in the capture", len(arpTimes))
	}
	within := func(d, want time.Duration) bool { return d > want-50*time.Millisecond && d < want+50*time.Millisecond }
	if d := arpTimes[1].Sub(arpTimes[0]); !within(d, 0) {
		t.Errorf("keepalived's first burst spans %v", d)
	}
	if d := arpTimes[2].Sub(arpTimes[0]); !within(d, time.Second) {
		t.Errorf("keepalived's second burst came %v after the first, the schedule says 1s", d)
	}
}

func TestScheduleNoSecondBurst(t *testing.T) {
	s := Defaults()
	s.MasterDelay = 0
	c := NewSchedule(s)
	c.BecomeMaster(t0)
	if got, want := run(c, time.Hour), []event{{0, 5}}; !equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestScheduleRefresh(t *testing.T) {
	s := Defaults()
	s.MasterRefresh = 60 * time.Second
	s.MasterRefreshRepeat = 2
	c := NewSchedule(s)
	c.BecomeMaster(t0)
	got := run(c, 200*time.Second)
	want := []event{{0, 5}, {5 * time.Second, 5}, {60 * time.Second, 2}, {120 * time.Second, 2}, {180 * time.Second, 2}}
	if !equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// A late wake-up: the next refresh counts from when it went out.
	c = NewSchedule(s)
	c.BecomeMaster(t0)
	c.Due(t0)
	c.Due(t0.Add(5 * time.Second))
	if n := c.Due(t0.Add(70 * time.Second)); n != 2 {
		t.Fatalf("late refresh gave %d rounds", n)
	}
	if next, _ := c.Next(); next != t0.Add(130*time.Second) {
		t.Errorf("next refresh at %v, want 130s", next.Sub(t0))
	}
	c.LeaveMaster()
	if _, ok := c.Next(); ok {
		t.Error("refresh still pending after leaving master")
	}
}

func TestScheduleLeaveMasterDropsPending(t *testing.T) {
	c := NewSchedule(Defaults())
	c.BecomeMaster(t0)
	if n := c.Due(t0); n != 5 {
		t.Fatalf("first burst %d", n)
	}
	c.LeaveMaster()
	if _, ok := c.Next(); ok || c.Master() {
		t.Error("second burst survives leaving master")
	}
	if n := c.Due(t0.Add(time.Minute)); n != 0 {
		t.Errorf("Due after leaving master: %d", n)
	}
	// Becoming master again starts afresh.
	c.BecomeMaster(t0.Add(time.Minute))
	if got, want := run(c, time.Hour), []event{{time.Minute, 5}, {time.Minute + 5*time.Second, 5}}; !equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestSettingsValidate(t *testing.T) {
	bad := []func(*Settings){
		func(s *Settings) { s.MasterDelay = -time.Second },
		func(s *Settings) { s.MasterRepeat = -1 },
		func(s *Settings) { s.MasterRefresh = -1 },
		func(s *Settings) { s.MasterRefreshRepeat = 0 },
		func(s *Settings) { s.Interval = -1 },
		func(s *Settings) { s.NAInterval = -1 },
	}
	for i, f := range bad {
		s := Defaults()
		f(&s)
		if s.validate() == nil {
			t.Errorf("case %d: %+v accepted", i, s)
		}
	}
}

func TestPacer(t *testing.T) {
	var zero pacer
	for range 3 {
		if got := zero.reserve(t0); got != t0 {
			t.Fatalf("zero interval delays to %v", got)
		}
	}
	p := pacer{Interval: 10 * time.Millisecond}
	var got []time.Duration
	for range 3 {
		got = append(got, p.reserve(t0).Sub(t0))
	}
	// A later message after the queue drained goes at once.
	got = append(got, p.reserve(t0.Add(time.Second)).Sub(t0))
	want := []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond, time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("slots %v, want %v", got, want)
		}
	}
}

// TestPacerCatchUp: a sender woken late sends the slots it missed back to back, when they
// are at most maxCatchUp old, and never a message before its slot; older slots are not
// kept (the run starts again at now, as after an idle lane).
func TestPacerCatchUp(t *testing.T) {
	const iv = 200 * time.Microsecond
	p := pacer{Interval: iv}
	if at := p.reserve(t0); at != t0 {
		t.Fatalf("first slot %v", at.Sub(t0))
	}
	// Woken 1 ms late: the slots at 200, 400, ..., 1000 µs are all due at once.
	late := t0.Add(time.Millisecond)
	for k := 1; k <= 5; k++ {
		if at := p.reserve(late); at != t0.Add(time.Duration(k)*iv) || at.After(late) {
			t.Fatalf("catching up, message %d's slot %v, want %v", k, at.Sub(t0), time.Duration(k)*iv)
		}
	}
	// The next slot is in the future: the caller waits for it (take) or gets it.
	if at := p.reserve(late); at != t0.Add(6*iv) {
		t.Fatalf("after catching up: slot %v, want %v", at.Sub(t0), 6*iv)
	}
	// Woken 10 ms late: slots older than maxCatchUp are not kept; the run restarts.
	q := pacer{Interval: iv}
	q.reserve(t0)
	wake := t0.Add(10 * time.Millisecond)
	if at := q.reserve(wake); at != wake {
		t.Fatalf("10 ms late: slot %v before the wake-up, want the wake-up itself", wake.Sub(at))
	}
	// A run that ended long ago does not bank slots.
	r := pacer{Interval: iv}
	r.reserve(t0)
	if at := r.reserve(t0.Add(time.Second)); at != t0.Add(time.Second) {
		t.Fatalf("after a second idle: slot %v, want now", at.Sub(t0))
	}
}

func BenchmarkSchedule(b *testing.B) {
	s := Defaults()
	s.MasterRefresh = time.Second
	c := NewSchedule(s)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		c.BecomeMaster(now)
		for {
			next, ok := c.Next()
			if !ok || next.Sub(now) > 10*time.Second {
				break
			}
			c.Due(next)
		}
		c.LeaveMaster()
		now = now.Add(time.Minute)
	}
}

func BenchmarkFrames(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := garpFrame(capturedMAC, capturedV4); err != nil {
			b.Fatal(err)
		}
		if _, err := naFrame(capturedMAC, capturedV6, false); err != nil {
			b.Fatal(err)
		}
	}
}
