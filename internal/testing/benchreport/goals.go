package benchreport

// Op is how a goal holds vrrpd's figure against its bound.
type Op int

const (
	NoBound Op = iota // no bound: the figure is asked for, not held to anything
	AtMost            // ≤ bound
	Below             // < bound
	AtLeast           // ≥ bound
)

// Goal is one thing issue 12 asks to hold of vrrpd's figure of a measure.
type Goal struct {
	Measure string
	Unit    string // Bound's unit; a figure in another unit of the same quantity is converted
	Op      Op
	Bound   float64
	// OfKeepalived makes Bound a multiple of keepalived's figure of the same measure.
	OfKeepalived bool
	Text         string // issue 12's words
}

// Goals are issue 12's "What must hold" (and issue 8's and 9's benchmarks), in one place: the
// measure names here are the ones the benchmarks must report (vrrpd's side, and
// keepalived's where the goal is relative). A goal whose measure nobody reported shows as
// "not measured".
var Goals = []Goal{
	{Measure: "transitions-255x10ms-default", Unit: "count", Op: AtMost, Bound: 0,
		Text: "255 instances at 10 ms between two hosts: converge, then 0 transitions (default scheduling)"},
	{Measure: "transitions-255x10ms-realtime", Unit: "count", Op: AtMost, Bound: 0,
		Text: "the same with --realtime-priority (keepalived: vrrp_rt_priority)"},
	{Measure: "transitions-25x10ms-busy-default", Unit: "count", Op: AtMost, Bound: 0,
		Text: "25 instances at 10 ms with 4 busy loops: converge, then 0 transitions (default scheduling)"},
	{Measure: "transitions-25x10ms-busy-realtime", Unit: "count", Op: AtMost, Bound: 0,
		Text: "the same with --realtime-priority (keepalived: vrrp_rt_priority)"},
	{Measure: "takeover-vip-p99", Unit: "ms", Op: AtMost, Bound: 1,
		Text: "Master_Down_Timer → VIP in the kernel, p99 at 10 ms adverts ≤ 1 ms"},
	{Measure: "takeover-advert-p99", Unit: "ms", Op: AtMost, Bound: 1,
		Text: "Master_Down_Timer → first advert on the wire, p99 at 10 ms adverts ≤ 1 ms"},
	{Measure: "takeover-garp-p99", Unit: "ms", Op: AtMost, Bound: 1,
		Text: "Master_Down_Timer → first GARP/NA on the wire, p99 at 10 ms adverts ≤ 1 ms"},
	{Measure: "failover-10ms-over-mdi-p99", Unit: "ms", Op: AtMost, Bound: 1.5,
		Text: "failover at 10 ms lands within 1.5 ms of Master_Down_Interval"},
	{Measure: "load50-cpu", Unit: "s", Op: AtMost, Bound: 0.6, OfKeepalived: true,
		Text: "CPU, 50 instances at 100 ms for 20 s, both hosts ≤ 0.6 × keepalived's (two hosts on a veth pair; the median of 3 rounds; default flags: adverts through the IP stack)"},
	{Measure: "load50-cpu-packet-socket", Unit: "s", Op: NoBound,
		Text: "the same with --send-on-packet-socket, the opt-in that bypasses netfilter's output hooks (reported)"},
	{Measure: "load50-cpu-packet-socket-above-floor", Unit: "s", Op: NoBound,
		Text: "that above the kernel's floor (reported)"},
	{Measure: "load50-cpu-above-floor", Unit: "s", Op: NoBound,
		Text: "the same above the kernel's floor (the smallest program moving the same packets, measured in the same run): the daemon's own work (reported)"},
	{Measure: "load50-cpu-bridged", Unit: "s", Op: NoBound,
		Text: "the same load on the bridged lab, whose forwarding (and an idle third host's receiving) is charged to the sender (reported)"},
	{Measure: "load50-cpu-bridged-above-floor", Unit: "s", Op: NoBound,
		Text: "the bridged figure above that lab's floor (reported)"},
	// Issue 26 withdrew issue 12's 1.25 × keepalived (it had bought hand-written HTTP, an
	// exposition writer and a YAML converter) for absolute bounds with the libraries linked.
	{Measure: "peak-rss", Unit: "MiB", Op: AtMost, Bound: 16,
		Text: "issue 26: peak RSS at that load, standalone (the host build, bin/vrrpd-host) ≤ 16 MiB (keepalived's largest process beside it)"},
	{Measure: "peak-rss-kubernetes-mode", Unit: "MiB", Op: AtMost, Bound: 24,
		Text: "issue 26: vrrpd's peak RSS in Kubernetes mode at that load ≤ 24 MiB"},
	{Measure: "svc-to-vip-p99", Unit: "ms", Op: AtMost, Bound: 450,
		Text: "Service created → VIP held on one node, p99 of 20, ≤ Master_Down_Interval + 100 ms"},
	{Measure: "svc-new-step-downs", Unit: "count", Op: AtMost, Bound: 0,
		Text: "0 step-downs over 20 new Services"},
	{Measure: "failover-3-nodes-100ms-step-downs", Unit: "count", Op: AtMost, Bound: 0,
		Text: "0 step-downs over 20 failovers of a three-node group at 100 ms"},
	{Measure: "failover-3-nodes-10ms-step-downs", Unit: "count", Op: AtMost, Bound: 0,
		Text: "0 step-downs over 20 failovers of a three-node group at 10 ms"},
	{Measure: "operator-converge-5000", Unit: "s", Op: Below, Bound: 10,
		Text: "5,000 Services, 20 groups, 500 Nodes converge < 10 s"},
	{Measure: "operator-status-max-5000", Unit: "KiB", Op: Below, Bound: 512,
		Text: "largest group status < 512 KiB"},
	{Measure: "operator-heap-5000", Unit: "MiB", Op: NoBound,
		Text: "operator's memory at that scale (reported: the heap in use of the process running it, with the test's client)"},
	// Issue 8's one figure.
	{Measure: "takeover-50ms-wakeup-to-wire-p99", Unit: "us", Op: Below, Bound: 200,
		Text: "issue 8: Master_Down_Timer firing → the takeover's advert on the wire, p99 < 200 µs"},
	// Issue 9's benchmark.
	{Measure: "tracked255-default-transitions", Unit: "count", Op: AtMost, Bound: 0,
		Text: "issue 9: 255 instances at 100 ms, each tracking a script and an HTTP check at 1 s: 0 transitions in 60 s (default scheduling)"},
	{Measure: "tracked255-realtime-transitions", Unit: "count", Op: AtMost, Bound: 0,
		Text: "the same with --realtime-priority"},
	{Measure: "tracked50-cpu", Unit: "s", Op: NoBound,
		Text: "issue 9: CPU of the script part side by side, 50 instances tracking a script each, same keepalived.conf (reported)"},
}

// Verdict is a goal's outcome on a row.
type Verdict int

const (
	NotMeasured Verdict = iota // no vrrpd figure (or, for a relative goal, no keepalived one)
	Reported                   // measured; the goal has no bound
	Met
	Missed
)

// Check holds the row's vrrpd figure (its median over runs) against the goal. The row
// must be the goal's measure; a unit that does not convert to the goal's is NotMeasured.
func (g Goal) Check(r *Row) Verdict {
	if r == nil || r.Measure != g.Measure {
		return NotMeasured
	}
	v, ok := Median(r.VRRPD)
	if !ok {
		return NotMeasured
	}
	if g.Op == NoBound {
		return Reported
	}
	bound := g.Bound
	if g.OfKeepalived {
		k, ok := Median(r.Keepalived)
		if !ok {
			return NotMeasured
		}
		bound *= k // same row, same unit
	} else if v, ok = scale(v, r.Unit, g.Unit); !ok {
		return NotMeasured
	}
	var met bool
	switch g.Op {
	case AtMost:
		met = v <= bound
	case Below:
		met = v < bound
	case AtLeast:
		met = v >= bound
	}
	if met {
		return Met
	}
	return Missed
}

// GoalFor is the goal on a row's measure, if any.
func GoalFor(goals []Goal, r *Row) (Goal, bool) {
	for _, g := range goals {
		if g.Measure == r.Measure {
			if _, ok := scale(1, r.Unit, g.Unit); ok || g.OfKeepalived || g.Op == NoBound {
				return g, true
			}
		}
	}
	return Goal{}, false
}
