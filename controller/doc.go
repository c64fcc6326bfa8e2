// Package controller is the operator: two reconcilers that turn
// KeepalivedGroups, annotated Services and Nodes into each group's status
// (everything vrrpd needs), a vrrpd DaemonSet per group, and LoadBalancer
// addresses for Services.
//
// # Files
//
//   - setup.go: Setup registers the field indexes and wires both controllers
//     and their watches into a controller-runtime manager.
//   - group_controller.go: GroupReconciler computes a group's status and
//     applies its owned objects; router IDs shared across groups.
//   - instances.go: the pure computation (computePlan) of member nodes,
//     instances, router IDs (internal/vrid) and priorities
//     (internal/placement).
//   - nodes.go: member nodes, their peer addresses, and the Node watch.
//   - daemonset.go: the DaemonSet, ServiceAccount, Role, RoleBinding and
//     PodMonitor of a group.
//   - podmonitor.go: a group's PodMonitor in the --podmonitor-namespace, which
//     no owner reference reaches: deleted with the group, swept at start.
//   - eventsrbac.go: the Role and RoleBinding, in each namespace of a
//     group's Services, that let its vrrpd record Events on them.
//   - service_controller.go and allocation.go: annotation checks, address
//     allocation and release (internal/ipam).
//   - tenancy.go: which Services a group serves and which of their
//     addresses they hold (the vetter both reconcilers ask).
//   - annotations.go: reading the Service annotations; events.go: Event
//     reasons; rbac.go: the operator's own RBAC markers.
//   - metrics.go: the per-group metrics (Degraded, node count, address pool
//     size and use) on controller-runtime's registry, for the alerts of
//     deploy/monitoring.
//
// # Instances
//
// A Service annotated keepalived-operator.redhat-cop.io/keepalivedgroup:
// <namespace>/<name> that is of type LoadBalancer (of our class) or has
// spec.externalIPs yields instances once it has VIPs: the union of
// status.loadBalancer.ingress[].ip and spec.externalIPs, sorted. With
// spreadvips: "true" each VIP is its own instance, key "ns/name/ip";
// otherwise the Service is one instance, key "ns/name". Deleting Services
// yield none (their VIPs are being released).
//
// # Router IDs
//
// IDs live in the group's status.routerIDs, so they survive restarts.
// Existing assignments are never renumbered unless blacklisted; new keys
// take the lowest free ID in sorted key order; beyond 255 the remaining keys
// are left out, the group is Degraded (RouterIDsExhausted) and each Service
// left out gets one Event. Groups of one segment (spec.segment where the
// admin's --segment-namespaces allows it, policy.go; every other group is on
// the cluster's default segment, whatever its interface) share an
// ID space: an ID held by one is never handed out by another, and when two
// collide anyway (status carried over from the original operator, or from
// before segments, when each interface had a space of its own), the
// later-created group renumbers and says so in a RouterIDRenumbered Event.
//
// # Priorities and preemption
//
// Every member node gets a distinct priority per instance by rendezvous
// hashing (internal/placement): the master is spread evenly over the nodes,
// and a node joining or leaving moves only the instances it ranks first. The
// VIPs of one spreadvips Service get different masters when there are
// enough nodes. With preempt on (the default) a node that comes back takes
// back, after one advertisement, exactly the instances that rank it first;
// with preempt off it stays backup until the current master fails.
//
// # Address allocation
//
// A LoadBalancer Service of a group that has an addressPool gets one address
// per family it asks for (spec.ipFamilies and spec.ipFamilyPolicy), written
// to status.loadBalancer.ingress with ipMode VIP in one status write under
// the field manager vrrp-operator (managedFields then names the operator as
// the ingress's owner, so another load balancer's ingress is never
// touched). It is released when the Service stops being a LoadBalancer,
// loses the group annotation or moves to another load-balancer class, and
// is free once the Service is deleted: no finalizer, the allocator reads
// live Services. The finalizer earlier versions set
// (redhatcop.redhat.io/loadbalancer-address) is removed, the address kept.
// A specific address is
// requested with keepalived-operator.redhat-cop.io/loadbalancerips (a comma
// list, one per family) or the deprecated spec.loadBalancerIP. With
// autoAssign false only requests are served.
//
// No address is ever given twice: the allocator's truth is the API (the
// ingress IPs and externalIPs of the Services the operator serves, as
// tenancy.go decides, never a member node's address or a pool CIDR's edge;
// from the informer cache, which the
// manager fills before any reconcile, so restarts forget nothing), plus a
// record of this process's own recent writes that the cache has not shown
// yet, and one mutex around every decide-and-write. With leader election
// only one operator process allocates at a time.
//
// Services whose spec.loadBalancerClass names another class are left to
// that implementation; Services with no class or with the class
// "redhatcop.redhat.io/keepalived" (v1alpha1.LoadBalancerClass) are ours.
//
// # Tenancy
//
// A group's allowedNamespaces admits Services by namespace; its externalIPs
// policy limits what they may list in spec.externalIPs. Whatever the group
// says, an address belongs to one Service (the first holder: an allocated
// address before an externalIP, then the older Service, then
// namespace/name; Services of one namespace with the same allow-shared-ip
// value share it), and only unicast host addresses that are no member
// node's own become VIPs. A refusal drops that address or Service, never the
// group. Namespace label changes re-run both reconcilers.
//
// # Events
//
// On Services: IPAllocated, IPReleased, AllocationFailed, GroupNotFound,
// InvalidAnnotation (a malformed group annotation, bad verbatimconfig JSON,
// an unknown or operator-managed verbatim key, a bad loadbalancerips value,
// IPv6 VIPs in a VRRPv2 group), RouterIDsExhausted, NamespaceNotAllowed,
// ExternalIPNotAllowed, AddressNotUsable and AddressInUse; each names the value
// at fault, and nothing else about the Service or its group is disturbed.
// On groups: one Event whenever Degraded or ImageSubstituted becomes true or
// changes, Recovered when Degraded clears, and RouterIDRenumbered.
//
// # Watches and load
//
// A Service change reconciles only the group it is (or was) annotated for,
// and only if something the status depends on changed; a Node change only
// the groups selecting it, and only for label or address changes (not the
// kubelet's heartbeats). The group's own status writes do not trigger it
// again. Owned objects are re-applied (server-side apply) when their desired
// form changes or they disappear.
package controller
