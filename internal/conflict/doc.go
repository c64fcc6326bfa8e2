// Package conflict finds a second holder of the addresses this node's VRRP masters hold:
// another host that answers ARP (IPv4) or neighbour solicitation (IPv6) for one of them,
// or announces it with a gratuitous ARP or an unsolicited neighbour advertisement. Two
// vrrpd that stop hearing each other (VRRP filtered on one side), a keepalived or kube-vip
// elsewhere, or a static address someone configured by hand all look the same from here:
// a MAC that is none of this host's claims the VIP.
//
// It has three parts:
//
//   - the tracker (tracker.go), pure and driven by the caller's clock: which VIPs are held
//     and since when, when each is probed next under a global rate cap, and when evidence
//     becomes a conflict and a conflict ends;
//   - frames (frames.go): the RFC 5227 ARP probe and the neighbour solicitation it sends,
//     each answered to this host alone, built with mdlayher/arp, mdlayher/ndp and
//     mdlayher/ethernet, and the parser of the answers and announcements it listens for;
//   - the Detector (detector.go): one goroutine and, per interface, two packet sockets
//     (mdlayher/packet) of its own, each filtered in the kernel to the few frames that can
//     be evidence, so that the daemon's loop never waits for it and its advertisements
//     never share a socket with it. The loop hands it the set of held VIPs (SetHeld) when
//     its masters change; the metrics read its conflicts (Conflicts).
//
// It never answers a conflict on the wire: no gratuitous ARP, no change of priority.
// Announcing against another holder is a race that whoever sends last wins, and two
// speakers that each re-announce on seeing the other's announcement would rewrite the
// LAN's neighbour caches forever; against a host whose address was configured by hand,
// winning would take it from its owner. VRRP's own election decides who holds a virtual
// router's addresses once the holders hear each other; until then the conflict is a
// gauge, a rate-limited warning and, in Kubernetes mode, an Event, for a person to act on.
// Only when a conflict ends, the other host silent for two probes, does the daemon
// announce the VIP once (internal/daemon, announceAgain): neighbours that learned the
// other MAC meanwhile come back at once instead of when their entries expire, and with
// nobody else answering that is no contest.
package conflict
