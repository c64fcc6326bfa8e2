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
// Every address of a CIDR entry is usable, including the all-zeros and
// all-ones addresses of an IPv4 block such as 10.99.0.200/29 (as MetalLB does
// by default). A pool entry names a set of addresses, not a subnet: a /29
// carved out of a node LAN /24 has no network or broadcast address of its own,
// and the operator cannot know the real subnet. If an entry does coincide
// with the whole LAN subnet, list its network and broadcast addresses under
// excludedAddresses, or write the entry as a range. A CIDR written with host
// bits set ("10.99.0.201/29") is taken as its network block (10.99.0.200/29).
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
