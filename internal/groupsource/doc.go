// Package groupsource is vrrpd's Kubernetes mode: it reads the node's own
// KeepalivedGroup and turns it into the daemon's configuration.
//
// The operator computes everything the cluster must agree on and writes it
// to the group's status: the member nodes with their addresses, and for each
// VRRP instance its key, router ID, VIPs, settings and one priority per
// member node. vrrpd only obeys, so the conversion is a pure function of the
// group, this node's name, the password (the Secret's value, from its file)
// and the interface a route points to (for interfaceFromIP):
//
//   - Translate makes one config.Instance per instance this node takes part
//     in (priority not 0) and per address family of its VIPs; an instance
//     with IPv4 and IPv6 VIPs runs as two virtual routers with one VRID, as
//     keepalived runs them. VIPs are host prefixes (/32, /128) on the group's
//     interface, as the original keepalived-operator configured them.
//     Only the Kubernetes-specific part is here (which instances this node
//     runs, its priority, members as unicast peers, the interfaceFromIP
//     lookup, the password from the Secret): the status is read into a
//     config.Draft, and keepalived's rules are config.Resolve's, the same
//     as for a file. Verbatim keywords are checked against keepalived's one
//     keyword table (package keyword, through v1alpha1.VerbatimProblem and
//     GlobalKeyword), which the operator uses too, and set through it
//     (config.Draft.SetKeyword), as keepalived.conf is; those vrrpd does not
//     implement, and bad values, are warnings that name them, and a number
//     beyond its limit is ignored with a warning. An instance vrrpd cannot
//     run (a VIP that is not a unicast host address, bad priorities, a VRID
//     out of range or taken) is dropped with a warning and the group's others
//     run: the status may come from an older operator, and one Service must
//     not stop the rest on every node. Only a fault of the group itself (no
//     interface, bad member addresses, a password that could not be read) is
//     an error. The output is sorted and deterministic.
//
//   - Watch gets and watches only the one group (a list and a watch with a
//     metadata.name field selector, which a Role limited by resourceNames
//     allows), reads the password from a file (the Secret's key, which the
//     kubelet mounts into the pod and rewrites when the Secret changes;
//     vrrpd may not read Secrets), and hands the daemon a new configuration
//     whenever the translation or the password changes, never on a repeated
//     but identical status. It keeps the last group it saw (not the
//     password) in a file in the state directory, so that a restarted vrrpd
//     serves its VIPs again while the API server is unreachable; the API's
//     answer replaces the cached copy as soon as it comes.
package groupsource
