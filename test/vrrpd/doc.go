// Package vrrpd holds the end-to-end tests of the vrrpd daemon: the real binary, run as a
// process in network namespaces (internal/netlab), against itself and against the real
// keepalived, with the failover bounds, crash recovery, reload, malformed-packet and
// interoperability cases of issue 3, and the vrrpd-versus-keepalived benchmarks.
//
// Everything here needs root; the tests skip without it unless CI=true, where they fail.
package vrrpd
