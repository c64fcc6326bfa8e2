package garp

import "time"

// maxCatchUp is how far behind its slots a late sender may catch up, sending back to back
// the messages whose slots passed while it was not running. A sender goroutine's timer
// wake-up on a loaded host takes longer than a short interval (about 1.2 ms on the test
// machine), and without catching up every late wake-up was lost time: at 200 µs the lab
// sent 860 messages a second instead of 5,000, and 5 rounds of 2,000 addresses took 12 s
// (issue 31's BenchmarkTakeover2000). Bounded: a slot more than maxCatchUp old is not
// kept (the run restarts at now, as after an idle lane), so at most 2 ms of slots ever go
// out at once.
const maxCatchUp = 2 * time.Millisecond

// pacer spaces messages of one kind on one interface by Interval (keepalived's
// vrrp_garp_interval / vrrp_gna_interval, shared by all instances on the interface): the
// k-th message of a run is never sent before the run's start plus k intervals, so the
// rate never exceeds one per Interval over the run; a sender that ran late may send the
// slots it missed (up to maxCatchUp of them) back to back. It is a pure value: the caller
// passes now.
type pacer struct {
	Interval time.Duration
	next     time.Time
}

// Reserve books the earliest free slot for one message and returns it: the next slot
// of the run (in the past when the sender is catching up, at most maxCatchUp), or now
// when the run ended longer ago than that. With a zero Interval it is always now.
func (p *pacer) reserve(now time.Time) time.Time {
	if p.Interval <= 0 {
		return now
	}
	at := now
	if !p.next.IsZero() && p.next.After(now.Add(-maxCatchUp)) {
		at = p.next
	}
	p.next = at.Add(p.Interval)
	return at
}
