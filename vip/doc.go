// Package vip puts virtual IP addresses on interfaces and takes them off
// again, through netlink, the way keepalived does: addr/prefix on a device,
// an optional IPv4 label, no broadcast unless asked, and IPv6 addresses
// with IFA_F_NODAD so a new master can use them at once (a /128 is also
// marked deprecated so it is never picked as a source address).
//
// A [Manager] remembers every VIP it added in a file under its state
// directory. The record is written before the address is added and dropped
// after it is removed, so after a crash (kill -9) the next daemon can call
// [Manager.Recover] and take off whatever the dead one left behind before
// it joins its virtual routers: a restart never leaves one VIP on two hosts.
// One state directory belongs to one daemon; [New] locks it. In Kubernetes mode
// it is a hostPath per group under /run, so the pod that replaces a crashed one
// finds the record.
//
// A Manager owns only what it added. [Manager.Hold] first looks whether the
// address is on the device already (the node's own /32 or /128, an API-server
// VIP held by kube-vip or another keepalived): such a foreign address is
// reported, never recorded and never removed. VIPs are held per virtual router
// and reference-counted: [Manager.Release] takes one off the interface when its
// last holder lets go. [Manager.Missing] says which VIPs someone else took off,
// so that a master can put them back. The holders and the record are
// internal/holdings', which internal/route shares for routes and rules.
//
// The record is one file, written whole: a daemon moving hundreds of VIPs in
// one wake-up (a mass takeover, or the step-down after it) brackets it in a
// turn ([Manager.BeginTurn], [Manager.EndTurn]). Inside a turn removals write
// the record once, at the end (a record listing a VIP already gone is safe),
// and [Manager.Reserve] records the VIPs about to be added in one write before
// their Holds, which then add without writing.
//
// [VMACs] makes and removes the private-mode macvlan interfaces that carry a
// virtual router's MAC (RFC 5798 §7.3, keepalived's use_vmac), with the
// sysctls keepalived sets on them and on their parent.
//
// The package also answers which interface reaches an address
// ([InterfaceFor], keepalived-operator's interfaceFromIP), for Kubernetes
// mode. Which address the adverts go out from is internal/transport's
// choice, not this package's.
package vip
