// Package placement computes each node's VRRP priority for each instance of
// a KeepalivedGroup, so that instances spread evenly over the member nodes
// and move as little as possible when nodes come and go.
//
// # Ranking
//
// Nodes are ranked per instance by rendezvous (highest-random-weight)
// hashing: each (instance key, node name) pair gets a 64-bit weight, FNV-1a
// of key, a zero byte and node name, passed through the SplitMix64 finalizer
// so that every bit of the weight depends on every input byte. Nodes are
// ranked by descending weight, ties (practically impossible) by name. The
// weight of a pair never depends on the other nodes, which gives:
//
//   - determinism: the same key and node set give the same ranking on every
//     run, machine and operator replica (the hash is fixed, not seeded);
//   - balance: each node ranks first for about 1/N of the instances;
//   - minimal movement: when a node leaves, only the instances it ranked
//     first get a new master; when a node joins, only the instances that now
//     rank it first move to it. The relative order of the other nodes is
//     unchanged either way.
//
// # Priorities
//
// The first-ranked node gets priority 254 (255 is reserved by RFC 5798 for
// the owner of the address, which a VIP never has), the next ones
// TopPriorities: 204, 79, 29. A backup's Skew_Time is (256-priority)/256 of
// the advertisement interval. When the master fails, the second- and
// third-ranked nodes race 125/256 of an interval apart (48.8 ms at 100 ms
// adverts, 4.9 ms at 10 ms), not 1/256 (0.4 ms, 0.04 ms), which timer
// lateness and the time a loaded node takes to hear the winner's first
// advertisement decided instead: the wrong node took the VIP and gave it
// back (4 times in 20 failovers at 10 ms with gaps of 50/256, on the loaded
// 2-core lab machine; none with 125/256). The first two ranks are 50 apart
// (19.5 ms at 100 ms); they race only when an instance starts on both at
// once, where vrrpd's start delay decides. Below these, each rank r of n nodes
// gets n-r when that is higher, counting down by one to 1: every priority of
// an instance is distinct up to 254 nodes, so there are no ties to break by
// IP address, and up to about 30 nodes the top four ranks' priorities do not
// depend on the group's size. The price is failover time: the second-ranked
// node waits 3 intervals plus 52/256 of one (320 ms at 100 ms), not plus
// 3/256 (301 ms). From the 255th node on the priorities are 254 down by one,
// then 1; groups that large tie only in their tail.
//
// A new instance starts on every node at about the same time, each when its
// vrrpd's watch delivers the group; vrrpd therefore also starts it
// groupsource.StartDelayStep (100 ms; a shared router's SharedStartDelayStep, 1 s)
// later for each node ranked above it (groupsource.Translate), so the first master
// is the first-ranked node.
//
// # Preemption
//
// With preempt on (the default), the highest-priority live node is master:
// when a node returns after a failure or reboot it takes back, after one
// advertisement, exactly the instances that rank it first, and the backups
// that stood in for it return to backup. With preempt off a returning node
// stays backup until the current master fails, so instances drift away from
// their ranked placement until the next failover; placement then describes
// only who wins an election, not who is master now.
//
// # Spreading the VIPs of one Service
//
// With spreadvips a Service has one instance per VIP (keys "ns/name/ip").
// PlaceService places these siblings together: each takes as master its best
// ranked node among those mastering the fewest siblings so far, so with at
// least as many nodes as VIPs every VIP has a different master. The rest of
// each sibling's ranking is its own rendezvous order. The price is a little
// extra movement: a leaving node that masters none of a service's VIPs moves
// none of them, but one that does can push a later sibling (in key order) off
// its master too. Measured with 3 VIPs per service over 10 nodes, a leave
// moves 12.5% of the VIP masters and a join 10.8%, against 10% and 9.1% for
// independent instances (TestPlaceServiceMovement).
//
// # For shared routers
//
// internal/sharing puts Services whose first ranks agree in one virtual
// router; Order, Top (the first k ranks without sorting the rest: a group of
// 10,000 Services and 500 nodes needs only one or two ranks of each),
// OrderService and PrioritiesFromOrder give it the same ranking and
// priorities as Priorities and PlaceService.
//
// # Health-checked instances
//
// An externalTrafficPolicy: Local Service's instance tracks kube-proxy's
// health check on each node, and a node without a local endpoint must fall
// below every node with one. vrrpd lowers every member by the same amount
// (CheckWeight: 1 minus the lowest member priority), which keeps the failing
// nodes distinct and in the placement's order only if every member is above
// half of the highest. HealthChecked maps such an instance's priorities into
// 128..254 in the same order (254, 204, 166, 141, then a countdown to 128,
// up to 127 nodes), so with three nodes a failing check gives 89, 39, 1.
// Without it the failing nodes tied at 1: at a master's goodbye two of them
// took over after the same Skew_Time and both answered until the lower
// address yielded (seen in the migration lab).
//
// # Compact form
//
// The group's status must hold 255 instances x 100 nodes in well under
// 128 KiB, so priorities are not stored as maps of node names but one byte
// per node in the order of the status' node list, base64-encoded. That
// encoding, and the meaning of every byte value, is the operator's contract
// with vrrpd and lives with the API: v1alpha1.EncodePriorities and
// DecodePriorities. This package only ranks: its priorities are always
// 1..254.
package placement
