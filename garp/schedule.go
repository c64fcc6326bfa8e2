package garp

import (
	"slices"
	"time"
)

// Schedule says when one VRRP instance sends how many rounds of
// announcements (a round is one GARP per IPv4 VIP and one NA per IPv6 VIP).
// It does no I/O and reads no clock: the caller passes now, asks [Next]
// when to wake up and [Due] how many rounds to send then. The zero value
// is not usable; call [NewSchedule].
//
// keepalived's behaviour, which this follows:
//   - on becoming master: MasterRepeat rounds at once, MasterRepeat more
//     after MasterDelay (if not 0), and, if MasterRefresh is set, every
//     MasterRefresh MasterRefreshRepeat rounds, counted from when the last
//     refresh actually went out;
//   - on leaving master: everything pending is dropped.
type Schedule struct {
	s       Settings
	master  bool
	bursts  []burst // pending, sorted by time
	refresh time.Time
}

type burst struct {
	at     time.Time
	rounds int
}

// NewSchedule returns an idle schedule (not master) for the settings.
func NewSchedule(s Settings) *Schedule { return &Schedule{s: s} }

// Master reports whether the schedule is in the master phase.
func (c *Schedule) Master() bool { return c.master }

// BecomeMaster starts the announcements of a new master.
func (c *Schedule) BecomeMaster(now time.Time) {
	c.master = true
	c.bursts = c.bursts[:0]
	c.add(now, c.s.MasterRepeat)
	if c.s.MasterDelay > 0 {
		c.add(now.Add(c.s.MasterDelay), c.s.MasterRepeat)
	}
	c.refresh = time.Time{}
	if c.s.MasterRefresh > 0 {
		c.refresh = now.Add(c.s.MasterRefresh)
	}
}

// LeaveMaster drops everything pending.
func (c *Schedule) LeaveMaster() {
	c.master = false
	c.bursts = c.bursts[:0]
	c.refresh = time.Time{}
}

func (c *Schedule) add(at time.Time, rounds int) {
	if rounds <= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(c.bursts, at, func(b burst, t time.Time) int { return b.at.Compare(t) })
	// After bursts due at the same time, so the order is stable.
	for i < len(c.bursts) && c.bursts[i].at.Equal(at) {
		i++
	}
	c.bursts = slices.Insert(c.bursts, i, burst{at, rounds})
}

// Next returns when something is due next, and false when nothing is
// pending.
func (c *Schedule) Next() (time.Time, bool) {
	var next time.Time
	if len(c.bursts) > 0 {
		next = c.bursts[0].at
	}
	if !c.refresh.IsZero() && (next.IsZero() || c.refresh.Before(next)) {
		next = c.refresh
	}
	return next, !next.IsZero()
}

// Due returns how many rounds to send at now and forgets them. Calling it
// late is fine: everything overdue is returned at once (and the next
// refresh is counted from now, as keepalived does).
func (c *Schedule) Due(now time.Time) int {
	n := 0
	i := 0
	for ; i < len(c.bursts) && !c.bursts[i].at.After(now); i++ {
		n += c.bursts[i].rounds
	}
	c.bursts = slices.Delete(c.bursts, 0, i)
	if c.master && !c.refresh.IsZero() && !c.refresh.After(now) {
		n += c.s.MasterRefreshRepeat
		c.refresh = now.Add(c.s.MasterRefresh)
	}
	return n
}
