// Package transport carries VRRP advertisements between vrrpd and the network: one raw IP
// socket (protocol 112) per interface and address family, shared by every virtual router on
// that interface.
//
// Sharing one socket is what lets a single daemon hold hundreds of virtual routers at 100 ms
// advertisements on a small machine: the kernel does one multicast join and one socket
// lookup per packet whatever the number of instances, and the daemon drains the socket in
// batches (recvmmsg) into buffers owned by the Conn, so the steady-state receive path does not
// allocate. Sending is batched too: SendBatch hands a master's advertisements of one wake-up
// to the kernel with one sendmmsg, half the CPU of a sendmsg each. Demultiplexing by VRID and validating the advertisement (TTL 255, checksum,
// authentication) is the caller's job; this package only reports what arrived, with the
// TTL or hop limit, the source, the destination, the interface index and the kernel's
// arrival time that came with it (the last so that a backup times its master from the
// advertisement's arrival, not from when it got around to reading it).
//
// Checksums are never touched by the kernel: vrrpd computes the VRRP checksum itself over
// the pseudo-header of the source address that Conn.Source reports, and checks received
// checksums itself so that a bad one is counted rather than silently dropped. (Setting
// IPV6_CHECKSUM would make the kernel drop bad packets before we see them.)
//
// Sockets belong to the network namespace they were opened in; Open must run in the
// namespace of the interface (netlab.Host.Do in tests).
//
// The sub-package rawinject builds arbitrary, possibly malformed, packets for tests.
package transport
