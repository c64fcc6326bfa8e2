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
// the owner of the address, which a VIP never has), the next 253, and so on,
// one apart, so all priorities of an instance are distinct and there are no
// ties to break by IP address. From the 254th node on the priority stays 1;
// groups that large tie only in their tail.
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
