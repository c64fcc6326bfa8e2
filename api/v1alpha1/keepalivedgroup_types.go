package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeepalivedGroupSpec is what an administrator declares for a group of nodes
// that share VIPs over VRRP. The first ten fields are the original
// keepalived-operator's, with the same JSON names and meaning.
//
// The advertisement interval has a different range per VRRP version: whole
// seconds from 1s to 255s for VRRPv2 (RFC 3768 counts seconds), whole
// centiseconds from 10ms to 40.95s for VRRPv3 (RFC 5798 counts centiseconds).
//
// +kubebuilder:validation:XValidation:rule="has(self.interface) || has(self.interfaceFromIP)",message="one of interface or interfaceFromIP is required"
// +kubebuilder:validation:XValidation:rule="!has(self.advertInterval) || (has(self.vrrpVersion) ? self.vrrpVersion == 2 : has(self.passwordAuth)) || (duration(self.advertInterval) >= duration('10ms') && duration(self.advertInterval) <= duration('40950ms') && duration(self.advertInterval).getMilliseconds() % 10 == 0)",message="with vrrpVersion 3, advertInterval must be whole centiseconds from 10ms to 40.95s"
// +kubebuilder:validation:XValidation:rule="!has(self.advertInterval) || !(has(self.vrrpVersion) ? self.vrrpVersion == 2 : has(self.passwordAuth)) || (duration(self.advertInterval) >= duration('1s') && duration(self.advertInterval) <= duration('255s') && duration(self.advertInterval).getMilliseconds() % 1000 == 0)",message="with vrrpVersion 2 (or passwordAuth without vrrpVersion), advertInterval must be whole seconds from 1s to 255s"
// +kubebuilder:validation:XValidation:rule="!has(self.passwordAuth) || !has(self.vrrpVersion) || self.vrrpVersion == 2",message="passwordAuth needs VRRPv2 (VRRPv3 has no authentication): leave vrrpVersion unset or set it to 2"
// +kubebuilder:validation:XValidation:rule="!has(self.vmacXmitBase) || !self.vmacXmitBase || (has(self.useVMAC) && self.useVMAC)",message="vmacXmitBase needs useVMAC"
type KeepalivedGroupSpec struct {
	// NodeSelector picks the nodes that run the group's vrrpd and so may hold
	// its VIPs. Empty means every node.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Image is the vrrpd container image. Empty means the operator's
	// --vrrpd-image. Another image runs only if the cluster admin allowed it
	// (the operator's --allowed-vrrpd-images); an image that names
	// keepalived (a manifest written for the original operator) or one not
	// allowed is not run: the operator's vrrpd image is used instead and the
	// ImageSubstituted condition says so.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Interface is the network interface that carries the VIPs and the VRRP
	// advertisements. Ignored when interfaceFromIP is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	Interface string `json:"interface,omitempty"`

	// InterfaceFromIP makes each node use the interface of its route to this
	// address, for clusters whose nodes name their NICs differently.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="interfaceFromIP must be an IP address"
	InterfaceFromIP string `json:"interfaceFromIP,omitempty"`

	// PasswordAuth turns on VRRPv2 simple password authentication (keepalived's
	// auth_type PASS) with the password from a Secret in the group's namespace.
	// Without vrrpVersion it makes the group VRRPv2; with vrrpVersion 3 it is
	// refused.
	// +optional
	PasswordAuth *PasswordAuth `json:"passwordAuth,omitempty"`

	// VerbatimConfig holds keepalived global_defs keywords and values, passed
	// to vrrpd as they are. vrrpd warns about keywords it does not implement.
	// +optional
	VerbatimConfig map[string]string `json:"verbatimConfig,omitempty"`

	// BlacklistRouterIDs are VRRP router IDs (VRIDs) the operator never
	// assigns, for example because other routers on the segment use them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=255
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=255
	BlacklistRouterIDs []int `json:"blacklistRouterIDs,omitempty"`

	// UnicastEnabled sends advertisements to the other member nodes'
	// addresses instead of the VRRP multicast group.
	// +optional
	UnicastEnabled bool `json:"unicastEnabled,omitempty"`

	// V3ChecksumAsV2 computes the checksum of VRRPv3 IPv4 advertisements
	// without the IPv4 pseudo-header, as RFC 9568 section 5.2.8 specifies and
	// Cisco and Juniper routers send (keepalived's v3_checksum_as_v2, FRR's
	// "no vrrp checksum-with-ipv4-pseudoheader"). Unset or false includes the
	// pseudo-header, as keepalived and FRR do by default. Set it only when
	// such a router shares the virtual routers' segment and VRIDs: vrrpd
	// accepts both forms on receive either way, but a keepalived peer
	// accepts only the one it is configured for. VRRPv2 and IPv6 have one
	// checksum form and ignore it.
	// +optional
	V3ChecksumAsV2 *bool `json:"v3ChecksumAsV2,omitempty"`

	// UseVMAC runs every instance of the group with the RFC 5798 virtual MAC
	// (00-00-5E-00-01-{VRID}, 00-00-5E-00-02-{VRID} for IPv6), as keepalived's
	// use_vmac without arguments does: each instance gets a macvlan on the
	// interface, named by keepalived's rule, that carries its VIPs and
	// advertisements, so a failover moves no MAC address in the switches'
	// and clients' tables. It is the group's decision: the macvlans and the
	// interface's arp_ignore and arp_filter, which vrrpd sets while a macvlan
	// sits on it (and restores, after a crash too), are the member nodes'
	// settings, so a Service's verbatimconfig use_vmac is refused with an
	// Event.
	// +optional
	UseVMAC bool `json:"useVMAC,omitempty"`

	// VMACXmitBase sends the advertisements of the group's virtual MAC
	// instances from the interface itself, with its own MAC, rather than
	// from the macvlan (keepalived's vmac_xmit_base); the VIPs stay on the
	// macvlan. It needs useVMAC. A Service's verbatimconfig vmac_xmit_base is
	// refused with an Event.
	// +optional
	VMACXmitBase bool `json:"vmacXmitBase,omitempty"`

	// DaemonsetPodPriorityClassName is the priority class of the vrrpd pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DaemonsetPodPriorityClassName string `json:"daemonsetPodPriorityClassName,omitempty"`

	// DaemonsetPodAnnotations are added to the vrrpd pods.
	// +optional
	DaemonsetPodAnnotations map[string]string `json:"daemonsetPodAnnotations,omitempty"`

	// VRRPVersion is 3 (RFC 5798, IPv4 and IPv6) or 2 (RFC 3768, IPv4 only,
	// needed for password authentication and for keepalived peers set to
	// version 2). Unset means 2 when passwordAuth is set (what the original
	// operator ran: keepalived's default, and the PasswordAuthVRRPv2 condition
	// says so) and 3 otherwise. 3 with passwordAuth is refused.
	// +optional
	// +kubebuilder:validation:Enum=2;3
	VRRPVersion int32 `json:"vrrpVersion,omitempty"`

	// AdvertInterval is how often the master advertises, as a duration
	// ("1s", "100ms"). Whole seconds from 1s to 255s with VRRPv2, whole
	// centiseconds from 10ms to 40.95s with VRRPv3. Units ms, s, m, h;
	// nothing finer than a millisecond.
	// +optional
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]{1,3})?(s|m|h)|[0-9]+ms)+$`
	AdvertInterval *metav1.Duration `json:"advertInterval,omitempty"`

	// Preempt lets a node with a higher priority take an instance back from
	// the current master (VRRP's Preempt_Mode). Default true.
	// +optional
	// +kubebuilder:default=true
	Preempt *bool `json:"preempt,omitempty"`

	// AddressPool lets the operator allocate LoadBalancer addresses for the
	// group's Services that have none.
	// +optional
	AddressPool *AddressPool `json:"addressPool,omitempty"`

	// AllowedNamespaces says which namespaces' Services may attach to the
	// group (the keepalivedgroup annotation). Unset means every namespace,
	// as in the original operator: anyone who may edit a Service anywhere
	// can then have the group's nodes announce an address. A Service from a
	// namespace that may not gets no VIP and a NamespaceNotAllowed Event.
	// +optional
	AllowedNamespaces *AllowedNamespaces `json:"allowedNamespaces,omitempty"`

	// ExternalIPs restricts the addresses the group's Services may list in
	// spec.externalIPs. Unset means any unicast host address (the
	// original's behaviour). An address outside gets an
	// ExternalIPNotAllowed Event, not a VIP.
	// +optional
	ExternalIPs *ExternalIPPolicy `json:"externalIPs,omitempty"`

	// Segment names the L2 segment the group's VRRP traffic shares. Router
	// IDs are unique among all groups of one segment. Unset is the cluster's
	// default segment, shared by every group without one, whatever its
	// interface: groups on one wire may name their NICs differently, so an
	// interface name proves nothing. Give groups on segments that really are
	// separate different names to let them reuse router IDs. Honoured only
	// in namespaces the cluster admin allowed (the operator's
	// --segment-namespaces); elsewhere the group stays on the default
	// segment and the SegmentIgnored condition says so.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Segment string `json:"segment,omitempty"`

	// RouterSharing says whether Services with the same VRRP behaviour
	// share virtual routers (docs/design/router-sharing.md). Shared puts
	// every Service that is not externalTrafficPolicy: Local in a router
	// keyed by its settings and the nodes it ranks first, so a group needs
	// router IDs per node, not per Service, and a segment serves thousands
	// of Services. PerService keeps the original's one router (VRID) per
	// Service, for switches, firewalls or monitoring keyed on a Service's
	// VRID; a segment then serves at most 255 Services. Default Shared: a
	// group stored without the field (created before it existed, or by the
	// original's manifests) reads as Shared, and its per-Service routers
	// convert to shared ones a router at a time, keeping every router ID
	// that exists. A group being taken over from keepalived-operator stays
	// per Service until the takeover settles, whatever this says.
	// +optional
	// +kubebuilder:default=Shared
	RouterSharing RouterSharing `json:"routerSharing,omitempty"`

	// RouterBudget is how many shared routers one class of Services may
	// use in this group (with routerSharing: Shared): it decides how many
	// of a Service's first-ranked nodes its router keeps exact (2 while
	// n(n-1) <= budget, 1 while n <= budget, hash buckets beyond). Default
	// 64, a quarter of a segment's router IDs. Raise it for a large group
	// alone on its segment, lower it for many groups on one.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	RouterBudget *int32 `json:"routerBudget,omitempty"`
}

// RouterSharing is Shared or PerService.
// +kubebuilder:validation:Enum=Shared;PerService
type RouterSharing string

// The RouterSharing values.
const (
	// RouterSharingShared lets Services with the same VRRP behaviour share
	// virtual routers.
	RouterSharingShared RouterSharing = "Shared"
	// RouterSharingPerService gives every Service (every VIP with
	// spreadvips) a virtual router of its own, as the original did.
	RouterSharingPerService RouterSharing = "PerService"
)

// NamespacesFrom says where a group's Services may come from, as Gateway
// API's allowedRoutes.namespaces.from does.
// +kubebuilder:validation:Enum=All;Same;Selector
type NamespacesFrom string

// The NamespacesFrom values.
const (
	// NamespacesFromAll admits Services of every namespace.
	NamespacesFromAll NamespacesFrom = "All"
	// NamespacesFromSame admits Services of the group's own namespace only.
	NamespacesFromSame NamespacesFrom = "Same"
	// NamespacesFromSelector admits Services of the namespaces named in
	// names or whose labels match selector.
	NamespacesFromSelector NamespacesFrom = "Selector"
)

// AllowedNamespaces picks the namespaces whose Services may use a group:
// Gateway API's from/selector, plus MetalLB's list of names.
// +kubebuilder:validation:XValidation:rule="self.from == 'Selector' ? (has(self.selector) || (has(self.names) && size(self.names) > 0)) : (!has(self.selector) && (!has(self.names) || size(self.names) == 0))",message="from: Selector needs selector or names; selector and names are only for from: Selector"
type AllowedNamespaces struct {
	// From is All, Same (the group's namespace) or Selector.
	From NamespacesFrom `json:"from"`

	// Names are namespaces admitted by name (with from: Selector).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	Names []string `json:"names,omitempty"`

	// Selector admits namespaces whose labels match (with from: Selector).
	// An empty selector matches every namespace.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// ExternalIPPolicy is where a group's Services may take spec.externalIPs
// from.
type ExternalIPPolicy struct {
	// AllowedCIDRs are the prefixes externalIPs may come from.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=49
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="must be a CIDR"
	AllowedCIDRs []string `json:"allowedCIDRs,omitempty"`

	// FromAddressPool also admits the addresses of the group's
	// addressPool.
	// +optional
	FromAddressPool bool `json:"fromAddressPool,omitempty"`
}

// PasswordAuth names the Secret key that holds the VRRP password.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef.name) && size(self.secretRef.name) > 0",message="passwordAuth.secretRef.name is required"
type PasswordAuth struct {
	// SecretRef names a Secret in the group's namespace.
	SecretRef corev1.LocalObjectReference `json:"secretRef"`

	// SecretKey is the key of the password in the Secret.
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MaxLength=253
	SecretKey string `json:"secretKey,omitempty"`
}

// AddressPool is a set of addresses the operator hands out to LoadBalancer
// Services of the group.
type AddressPool struct {
	// Addresses are CIDRs ("10.99.0.200/29", "fd00:99::200/125"), ranges
	// ("10.99.0.220-10.99.0.222") or single addresses.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Addresses []AddressRange `json:"addresses"`

	// ExcludedAddresses are never handed out (same forms as addresses).
	// +optional
	// +kubebuilder:validation:MaxItems=256
	ExcludedAddresses []AddressRange `json:"excludedAddresses,omitempty"`

	// AutoAssign gives an address to every LoadBalancer Service of the group
	// that has none. When false, only Services that request an address (the
	// loadbalancerips annotation or spec.loadBalancerIP) get one.
	// +optional
	// +kubebuilder:default=true
	AutoAssign *bool `json:"autoAssign,omitempty"`
}

// AddressRange is a CIDR, a range "first-last" of one family, or a single
// address.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=100
// +kubebuilder:validation:XValidation:rule="isCIDR(self) || isIP(self) || (size(self.split('-')) == 2 && isIP(self.split('-')[0]) && isIP(self.split('-')[1]) && ip(self.split('-')[0]).family() == ip(self.split('-')[1]).family())",message="must be a CIDR, a single IP address, or a range first-last of one address family"
type AddressRange string

// KeepalivedGroupStatus is what the operator computed for the group. It is
// all vrrpd needs, and it is deterministic: the same spec, Services and Nodes
// give byte-identical status.
type KeepalivedGroupStatus struct {
	// ObservedGeneration is the spec generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Degraded, ImageSubstituted, and when they apply
	// Migrating and PasswordAuthVRRPv2.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// RouterIDs maps each instance key to its VRID, as in the original.
	// With routerSharing: Shared, each member (Service, or spreadvips VIP)
	// is valued with its shared router's VRID, so many keys share a value.
	// Atomic: a granular map would list every key once more in
	// managedFields, as large as the map itself at thousands of Services.
	// +optional
	// +mapType=atomic
	RouterIDs map[string]int `json:"routerIDs,omitempty"`

	// ContestedGrants names, for each address more than one Service of a
	// shared group (routerSharing: Shared) asks for without sharing it
	// (allow-shared-ip), the Service ("namespace/name") it was granted to
	// first, which keeps it. A shared router lists its members' addresses
	// together, so without this record an operator restart could not tell
	// which of two members of one router held an address. Only contested
	// addresses are listed: usually none.
	// +optional
	// +mapType=atomic
	ContestedGrants map[string]string `json:"contestedGrants,omitempty"`

	// NodeCount is len(nodes), for the printer column.
	// +optional
	NodeCount int32 `json:"nodeCount,omitempty"`

	// InstanceCount is len(instances), for the printer column.
	// +optional
	InstanceCount int32 `json:"instanceCount,omitempty"`

	// Nodes are the member nodes (those matching nodeSelector), sorted by
	// name. Their order is the order of every instance's priorities.
	// +optional
	// +listType=atomic
	Nodes []GroupNode `json:"nodes,omitempty"`

	// Instances are the VRRP instances, sorted by key. Services whose
	// instances could not get a router ID are not listed (see Degraded).
	// +optional
	// +listType=atomic
	Instances []Instance `json:"instances,omitempty"`

	// Migration is set while the operator takes the group over from
	// keepalived-operator's objects (see the Migrating condition).
	// +optional
	Migration *Migration `json:"migration,omitempty"`
}

// MigrationPhase is a step of the takeover from keepalived-operator.
// +kubebuilder:validation:Enum=Shadowing;Handover;Settling
type MigrationPhase string

// The phases of a takeover, in order.
const (
	// MigrationShadowing: keepalived-operator's DaemonSet runs; vrrpd runs
	// every instance with the old pods' version, password and router ID,
	// below their priority and handover-only, until its own DaemonSet is
	// ready on every node.
	MigrationShadowing MigrationPhase = "Shadowing"
	// MigrationHandover: the operator deleted the old objects; the old pods
	// stop (their masters send priority 0 and a vrrpd backup takes over).
	// Lasts until no old pod is left.
	MigrationHandover MigrationPhase = "Handover"
	// MigrationSettling: no old pod is left; the group keeps the shadow
	// settings for MigrationSettle, so every takeover has finished, and then
	// moves to its own settings.
	MigrationSettling MigrationPhase = "Settling"
)

// Migration is the state of a takeover from keepalived-operator.
type Migration struct {
	// Phase is the current step.
	Phase MigrationPhase `json:"phase"`
	// Since is when the phase began.
	Since metav1.Time `json:"since"`
	// OldVersion is the VRRP version the old pods run (keepalived's default
	// 2, or spec.verbatimConfig's vrrp_version).
	OldVersion int32 `json:"oldVersion"`
}

// GroupNode is a member node and the addresses its peers send unicast
// advertisements to.
type GroupNode struct {
	// Name of the Node object.
	Name string `json:"name"`
	// Addresses: the node's first InternalIP of each family (IPv4 first),
	// or its first ExternalIP of a family that has no InternalIP.
	// +optional
	Addresses []string `json:"addresses,omitempty"`
	// Excluded names why the node holds none of the group's VIPs although
	// it is a member: the label or taint that takes it out
	// (ExclusionLabel, ExclusionTaints), or ExclusionLeaving for a node of a
	// group with shared routers that no longer matches spec.nodeSelector (or
	// whose Node is gone) and is drained before it is dropped. Its priority is 0
	// (PriorityNotMember) in every instance, so its vrrpd resigns what it
	// masters and runs nothing until the label or taint goes; the other
	// nodes' priorities do not change. Empty for a node that takes part.
	// +optional
	Excluded string `json:"excluded,omitempty"`
}

// Instance is one VRRP instance (one virtual router) of the group.
type Instance struct {
	// Key is "namespace/name" of the Service, or "namespace/name/ip" for each
	// VIP of a Service annotated spreadvips: "true".
	Key string `json:"key"`
	// VRID is the VRRP router ID. An instance with VIPs of both families runs
	// as one IPv4 and one IPv6 virtual router with this same VRID.
	VRID int `json:"vrid"`
	// VIPs are the virtual addresses, sorted.
	VIPs []string `json:"vips"`
	// Settings are the group's VRRP settings plus the Service's verbatimconfig.
	Settings InstanceSettings `json:"settings"`
	// Priorities holds each member node's VRRP priority for this instance,
	// one byte per entry of status.nodes in that order, base64-encoded
	// (standard alphabet, padded).
	// Every byte value has a meaning: 1 to 254 are VRRP priorities, distinct
	// within an instance, 254 for the node ranked first (the master while
	// it is up) -- except while status.migration is set, when they stay
	// below keepalived-operator's pods' 100 (99 for the node ranked first, 8
	// less for each next, at least 1); 0 means the node does not take part in this instance (it
	// does not run it and is no unicast peer of it; the operator does not
	// write 0 today, vrrpd accepts it); 255 (address owner) is never
	// written and is rejected.
	Priorities string `json:"priorities"`
}

// InstanceSettings are the resolved VRRP settings of one instance.
type InstanceSettings struct {
	// Version is the VRRP version, 2 or 3.
	Version int32 `json:"version"`
	// AdvertInterval is the advertisement interval.
	AdvertInterval metav1.Duration `json:"advertInterval"`
	// Preempt is VRRP's Preempt_Mode.
	Preempt bool `json:"preempt"`
	// Unicast sends advertisements to the other member nodes' addresses.
	// +optional
	Unicast bool `json:"unicast,omitempty"`
	// V3ChecksumAsV2 sends VRRPv3 IPv4 checksums without the pseudo-header
	// (the group's v3ChecksumAsV2).
	// +optional
	V3ChecksumAsV2 bool `json:"v3ChecksumAsV2,omitempty"`
	// UseVMAC runs the instance with the virtual MAC (the group's useVMAC).
	// +optional
	UseVMAC bool `json:"useVMAC,omitempty"`
	// VMACXmitBase sends the instance's advertisements from the interface
	// rather than its macvlan (the group's vmacXmitBase).
	// +optional
	VMACXmitBase bool `json:"vmacXmitBase,omitempty"`
	// PasswordAuth is the group's password Secret, when set.
	// +optional
	PasswordAuth *PasswordAuth `json:"passwordAuth,omitempty"`
	// HandoverOnly is set while the operator takes the group over from
	// keepalived-operator's pods (status.migration): vrrpd runs the instance
	// as a backup that becomes master only when the current master hands
	// over (an advertisement with priority 0, then Skew_Time), never when the
	// master merely falls silent, because the old pod on vrrpd's own node
	// sends from vrrpd's own address and vrrpd cannot hear it.
	// +optional
	HandoverOnly bool `json:"handoverOnly,omitempty"`
	// Verbatim holds the vrrp_instance keywords from the Service's
	// verbatimconfig annotation that a Service may set: known keepalived
	// keywords that neither the operator decides nor would run a program.
	// +optional
	Verbatim map[string]string `json:"verbatim,omitempty"`
	// HealthCheck is set for a Service with externalTrafficPolicy: Local and
	// a healthCheckNodePort: the check kube-proxy answers there. The
	// operator computes it from the Service's spec only (nothing a Service's
	// owner annotates reaches it).
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`
}

// HealthCheck is kube-proxy's health check of an externalTrafficPolicy:
// Local Service. kube-proxy answers an HTTP GET of any path on the
// Service's healthCheckNodePort, on the node's addresses, with 200 while the
// node has a ready local endpoint of the Service and 503 otherwise. vrrpd
// GETs http://<its node's first address in status.nodes>:<nodePort>/ and
// lowers its priority by 253 (to 1) while the answer is not 200, so that a
// node with a local endpoint takes the VIP, and the VIP stays where it is
// when no node has one.
type HealthCheck struct {
	// NodePort is the Service's spec.healthCheckNodePort.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort int32 `json:"nodePort"`
}

// KeepalivedGroup is a set of nodes that share VIPs over VRRP, and the
// Services whose VIPs they carry.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Interface",type=string,JSONPath=`.spec.interface`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodeCount`
// +kubebuilder:printcolumn:name="Instances",type=integer,JSONPath=`.status.instanceCount`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Degraded",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Image-Substituted",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="ImageSubstituted")].status`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Degraded")].message`
type KeepalivedGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KeepalivedGroupSpec   `json:"spec,omitempty"`
	Status KeepalivedGroupStatus `json:"status,omitempty"`
}

// KeepalivedGroupList is a list of KeepalivedGroups.
//
// +kubebuilder:object:root=true
type KeepalivedGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KeepalivedGroup `json:"items"`
}
