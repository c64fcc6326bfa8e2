// Package vrrp is the protocol core of vrrpd: the VRRP advertisement codec (VRRPv3 of
// RFC 5798/9568 over IPv4 and IPv6, and VRRPv2 of RFC 3768 over IPv4) and a sans-IO state
// machine for one virtual router.
//
// Nothing in this package touches a socket, starts a goroutine or reads the wall clock. The
// codec works on caller-owned buffers and values; the state machine is a value that is fed
// events, each carrying the current time, and that answers with the actions the caller must
// carry out (send an advertisement, add or remove the virtual addresses, announce them, arm
// the timer). That keeps every rule of the protocol testable on a virtual clock.
package vrrp
