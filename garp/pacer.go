package garp

import "time"

// pacer spaces messages of one kind on one interface at least Interval
// apart (keepalived's vrrp_garp_interval / vrrp_gna_interval, shared by all
// instances on the interface). It is a pure value: the caller passes now.
type pacer struct {
	Interval time.Duration
	next     time.Time
}

// Reserve books the earliest slot at or after now for one message and
// returns it. With a zero Interval it is always now.
func (p *pacer) reserve(now time.Time) time.Time {
	if p.Interval <= 0 {
		return now
	}
	at := now
	if p.next.After(at) {
		at = p.next
	}
	p.next = at.Add(p.Interval)
	return at
}
