// Package garp tells a LAN that a virtual address has moved: gratuitous ARP
// for IPv4 and unsolicited neighbour advertisements for IPv6, sent by a VRRP
// master, exactly as keepalived sends them.
//
// It has three parts:
//
//   - frames: garpFrame and naFrame build the Ethernet frames keepalived
//     2.2.7 puts on the wire, byte for byte (an ARP request to broadcast with
//     sender IP = target IP = VIP and target MAC ff:ff:ff:ff:ff:ff; an NA from
//     the VIP to ff02::1, hop limit 255, Override set, Solicited clear, Router
//     set only when the interface forwards IPv6, read when the NA is sent as
//     keepalived reads it, with a target link-layer address option), using
//     mdlayher/arp and mdlayher/ndp;
//   - timing: [Settings] holds keepalived's knobs with keepalived's defaults,
//     [Schedule] says when an instance sends how many rounds and a pacer
//     spaces messages on one interface. Both are pure values driven by the
//     caller's clock, so they are tested on a virtual clock;
//   - I/O: an [Announcer] owns the packet sockets of one interface and sends
//     rounds of frames for a list of VIPs, paced as [Settings] asks. A burst
//     is queued as one job per family and its frames made as their slots come,
//     so any number of rounds costs the caller (the daemon's loop) the same:
//     one frame a family at most, the first of a burst on an idle interface,
//     which the caller writes itself so that a takeover's first GARP does not
//     wait for the sender goroutine to be woken.
package garp
