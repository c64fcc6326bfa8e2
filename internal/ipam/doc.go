// Package ipam parses a KeepalivedGroup's address pool and hands out
// LoadBalancer addresses from it.
//
// A pool is the union of its "addresses" entries (CIDRs such as
// "10.99.0.200/29" or "fd00:99::200/125", ranges such as
// "10.99.0.220-10.99.0.222", or single addresses) minus the union of its
// "excludedAddresses" entries (same forms). Overlapping entries are allowed.
// Internally a pool is a sorted list of disjoint address ranges per family,
// so membership tests and allocation never enumerate addresses: an IPv6 /64
// costs the same as a /125.
//
// # Network and broadcast addresses
//
// The pool's ranges hold every address of a CIDR entry (Contains, Size and
// Allocate see them all), but Pool.IsEdge names the addresses the operator
// never hands out and refuses as VIPs, taking a CIDR entry to be a subnet: its
// IPv4 network and broadcast addresses (for prefixes up to /30; /31 and /32
// have none, RFC 3021) and its IPv6 subnet-router anycast address (the first
// one, for prefixes up to /126; RFC 4291, RFC 6164). Hosts on a subnet that
// does start there treat them as broadcast or router addresses, and a VIP
// there would attract or break that traffic (MetalLB's avoidBuggyIPs makes
// the same choice). This costs two
// addresses of a /29 carved out of a larger LAN, which has no such addresses
// of its own; write the entry as a range ("10.99.0.200-10.99.0.207") to hand
// out every address. A CIDR written with host bits set ("10.99.0.201/29") is
// taken as its network block (10.99.0.200/29).
//
// HostProblem says which addresses are no host's at all (multicast, loopback,
// link-local, unspecified, the limited broadcast, 0/8, 240/4).
//
// # Allocation
//
// Allocate returns the lowest free address of a family, so the same pool and
// the same addresses in use always give the same answer. It walks the ranges
// in order and asks the caller's inUse function about each candidate, so its
// cost grows with the number of in-use addresses it meets, not with the size
// of the pool. The package keeps no state: what is in use is whatever the
// caller says (the operator derives it from the API server, never from memory).
//
// # Requests and families
//
// ParseRequested reads the keepalived-operator.redhat-cop.io/loadbalancerips
// annotation, and Pool.Families decides which families a Service gets from its
// spec.ipFamilies and spec.ipFamilyPolicy.
package ipam
