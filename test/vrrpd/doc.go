// Package vrrpd holds the end-to-end tests of the vrrpd daemon: the real binary, run as a
// process in network namespaces (internal/netlab), against itself and against the real
// keepalived: election, failover within Master_Down_Interval and graceful handover within
// Skew_Time, crash recovery, reload, interface faults, malformed packets, and
// interoperability with keepalived's own configs; and the vrrpd-versus-keepalived
// benchmarks.
//
// Everything here needs root; the tests skip without it unless CI=true, where they fail.
package vrrpd
