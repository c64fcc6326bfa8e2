// Package daemon is vrrpd's runtime: the one loop that turns the sans-IO state machines of
// package vrrp into virtual routers on real sockets.
//
// A Daemon owns, for one set of instances (from a config file, later from a KeepalivedGroup):
//
//   - one raw socket per interface and address family (internal/transport), shared by every
//     instance on it, each read by a goroutine that hands whole batches of packets to the loop;
//   - one timer structure for every instance: a min-heap of deadlines under a single
//     timerfd (timerheap.go, ptimer.go), which fires within microseconds where a
//     time.Timer can be a millisecond late; masters whose advertisements fall due within a
//     tenth of an interval of each other send together, so they fall into step and N
//     masters cost one wake-up per interval;
//   - the loop itself (daemon.go; packets in conn.go, actions in instance.go), the only
//     goroutine that touches instance state. It routes each packet to its instance by
//     (interface, family, VRID), feeds timer expiries, config reloads and interface events
//     to the state machines, and carries out the actions they answer with: send an advertisement through the shared socket, add or remove the
//     virtual addresses (package vip, with its crash-safe record), and announce them
//     (package garp, on keepalived's garp_* schedule);
//   - interface watching: netlink link and address events, and a poll every second as a
//     safety net, set FAULT on instances whose interface is missing, down, without
//     carrier or without a source address, and clear it when the interface is back;
//   - a snapshot of every instance (state, priority, master, counters), republished after
//     changes, that metrics and `vrrpd status` read without touching the loop.
//
// Receiving allocates nothing per packet: batches are recycled between reader and loop, the
// decoder reuses one Advertisement, and actions are appended to one reused slice.
package daemon
