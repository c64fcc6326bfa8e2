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
// Two senders. By default every advertisement goes through that raw IP socket, through
// the IP stack as keepalived's do, so the host's netfilter OUTPUT and POSTROUTING rules,
// egress policies and IP output counters see it (send_linux.go). The packet-socket sender
// is an opt-in: Options.PacketSocket (vrrpd --send-on-packet-socket) writes multicast
// advertisements on Ethernet interfaces as frames on a packet socket instead
// (linksend_linux.go), with an IP header built here: the same bytes on the wire, without
// the route lookup and the IP output path (a host in the VRRP group gets no cached route
// to it), and without the netfilter hooks either, so an OUTPUT rule that drops VRRP no
// longer silences the master. That socket is mdlayher/packet's, bound to the family's
// EtherType with a drop-all socket filter so that it receives nothing; a wake-up's
// frames go out in one sendmmsg on its descriptor, since the library writes one frame
// per sendto. Unicast advertisements and interfaces without Ethernet headers always take
// the IP stack, and so does a Conn whose packet socket could not be opened or whose send
// the host refused (EPERM, EACCES: a security module's verdict; Conn.SendsFrames says
// why). docs/capacity.md (2026-11-26 night, and 2026-11-28, when issue 26 made it an
// opt-in) has what it saves and what it costs.
//
// The IP socket comes from the standard library and is set up with x/net/ipv4 and ipv6.
// What goes to the kernel directly, each for a reason docs/capacity.md gives ("The raw
// calls that remain"): its batched reads and writes (recvmmsg, sendmmsg, and one
// sendmsg), raw system calls on its file descriptor so that the runtime's bookkeeping
// around a blocking call does not wake its sysmon thread on every batch; the socket
// options x/net has no setter for (SO_BINDTODEVICE at creation, IP_MULTICAST_ALL,
// IPV6_MULTICAST_ALL, SO_TIMESTAMPNS, SO_RCVBUFFORCE); the drain of what queued before
// the bind; and SIOCINQ for Conn.Pending.
//
// Sockets belong to the network namespace they were opened in; Open must run in the
// namespace of the interface (netlab.Host.Do in tests).
//
// The sub-package rawinject builds arbitrary, possibly malformed, packets for tests.
package transport
