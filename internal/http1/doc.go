// Package http1 is the part of HTTP/1.1 vrrpd speaks, without net/http: a server for its
// metrics, health, status and profiling endpoints, and a client that sends one GET and
// reads the answer, for the native HTTP checks and `vrrpd status`.
//
// Why not net/http: it links crypto/tls, x509 and their init functions into every vrrpd,
// and on a host vrrpd's resident memory is mostly its own code mapped in. Measured with 50
// instances (issue 12), net/http and what it links cost 2.5 MiB of a standalone vrrpd's
// 12.7, a quarter of keepalived's whole resident set.
//
// What the server does not do, on purpose: keep-alive (every answer closes its
// connection, which Prometheus and the kubelet's probes handle), request bodies (the
// endpoints take none), HTTP/2 and TLS. It answers GET and HEAD only, bounds the request
// head, its time to arrive and the number of open connections, so a slow or hostile
// client on the metrics port cannot hold the daemon's memory or goroutines.
package http1
