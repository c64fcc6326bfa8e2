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
// One state directory belongs to one daemon; [New] locks it.
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
