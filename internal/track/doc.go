// Package track runs keepalived's vrrp_script checks off the protocol loop and turns their
// results into what VRRP acts on: a priority offset or a FAULT.
//
// The pure part (State, Contribution, Effective, SplitCommand) follows keepalived 2.2.7's
// rules (vrrp_track.c, vrrp_scheduler.c): a script starts "init" and one result decides
// its state (init_fail makes it start failed instead); after that it takes rise successes
// to become good and fall failures to become failed. A weighted script moves the priority
// (negative while failing, positive while succeeding, both turned around by reverse); a
// script of weight 0 puts the instance in FAULT while it fails, and an instance waits for
// such a script's first result before it starts. The effective priority is clamped to
// 1..254; an address owner (255) never changes priority.
//
// Runner is the impure part: one goroutine per script runs it every interval in its own
// process group, as the configured user, kills the whole group on timeout, and delivers
// each result as an Event on a channel the daemon's loop reads. Nothing here blocks that
// loop. A Script with a Check is a native check (an HTTP(S) GET or a TCP connect, check.go)
// that the runner runs in-process on the same schedule, with the same rise/fall state and
// the same events: no process, no script user.
package track
