package v1alpha1

// Service annotations, the original keepalived-operator's plus loadbalancerips.
const (
	// AnnotationPrefix is the prefix of every Service annotation.
	AnnotationPrefix = "keepalived-operator.redhat-cop.io/"
	// AnnotationGroup opts a Service in: "<namespace>/<name>" of a
	// KeepalivedGroup.
	AnnotationGroup = AnnotationPrefix + "keepalivedgroup"
	// AnnotationSpreadVIPs "true" gives one VRRP instance per VIP, so the
	// VIPs of one Service can be mastered by different nodes.
	AnnotationSpreadVIPs = AnnotationPrefix + "spreadvips"
	// AnnotationVerbatimConfig is a JSON object of extra vrrp_instance
	// keywords for the Service's instance(s).
	AnnotationVerbatimConfig = AnnotationPrefix + "verbatimconfig"
	// AnnotationLoadBalancerIPs requests specific addresses from the group's
	// pool: a comma list, at most one per family.
	AnnotationLoadBalancerIPs = AnnotationPrefix + "loadbalancerips"
)

// AnnotationSharedIP lets Services of one namespace share a VIP: two
// Services whose annotations carry the same non-empty value may list the
// same address (MetalLB's allow-shared-ip, under this project's domain;
// the original has no such annotation). Without it an address belongs to
// one Service.
const AnnotationSharedIP = "vrrp-operator.io/allow-shared-ip"

// LoadBalancerClass is this operator's spec.loadBalancerClass. Services with
// no class or this class are served; Services naming another class are left
// to that class's implementation.
const LoadBalancerClass = "redhatcop.redhat.io/keepalived"

// What takes a member node out of every instance of every group, for
// maintenance: its vrrpd resigns the VIPs it masters (priority 0, so a backup
// takes over after Skew_Time) and holds none while the label or taint stays.
// A cordon (spec.unschedulable) alone moves nothing: it says where new pods
// go, not that a node's traffic should leave, and a load balancer that
// treated it so dropped traffic in routine drains (MetalLB #2470, reverted in
// #2715).
const (
	// ExclusionLabel is Kubernetes' standard label (any value) that takes a
	// node out of external load balancers; the cloud providers' service
	// controller and MetalLB honour it.
	ExclusionLabel = "node.kubernetes.io/exclude-from-external-load-balancers"
	// TaintToBeDeleted is the cluster autoscaler's taint on a node it is
	// about to drain and delete (any effect). The service controller takes
	// such a node out of load balancers too: the node is going, and a
	// handover now is one the clients do not see.
	TaintToBeDeleted = "ToBeDeletedByClusterAutoscaler"
	// TaintOutOfService is the taint an admin puts on a node known to be shut
	// down (non-graceful node shutdown): its pods are deleted and their
	// volumes detached. Its VIPs have moved by VRRP already; the exclusion
	// keeps the node from preempting them back should it come up before the
	// admin removes the taint.
	TaintOutOfService = "node.kubernetes.io/out-of-service"
)

// ExclusionTaints are the taint keys that exclude a node like ExclusionLabel.
var ExclusionTaints = []string{TaintToBeDeleted, TaintOutOfService}

// ExclusionLeaving is GroupNode.Excluded of a node that is leaving a group
// whose Services share routers (spec.nodeSelector no longer matches it, or its
// Node is gone) and is drained before it is dropped: it keeps its place in
// status.nodes and its rank, at priority 0 everywhere, so its vrrpd resigns and
// each router it masters fails over whole to the router's next node; the
// operator drops the node once KeepalivedMastership names it master of none of
// the group's instances (or after a timed fallback), and the members then move
// to routers of the remaining nodes on the node that already holds them. Not a
// label or taint: the operator sets it, and only in the status.
const ExclusionLeaving = "vrrp-operator.io/leaving"

// Condition types of a KeepalivedGroup.
const (
	// ConditionReady is true when the status reflects the current spec,
	// Services and Nodes and the DaemonSet and its RBAC are in place.
	ConditionReady = "Ready"
	// ConditionDegraded is true when something was left out: router IDs ran
	// out, the address pool does not parse, or an owned object could not be
	// written. The reason says which.
	ConditionDegraded = "Degraded"
	// ConditionImageSubstituted is true when spec.image is not run: it names
	// a keepalived image (reason KeepalivedImage) or one the cluster admin
	// did not allow (reason ImageNotAllowed), and the operator's vrrpd image
	// runs instead.
	ConditionImageSubstituted = "ImageSubstituted"
	// ConditionSegmentIgnored is true when spec.segment is set but the
	// cluster admin does not let the group's namespace name a segment: the
	// group shares the default router-ID space.
	ConditionSegmentIgnored = "SegmentIgnored"
	// ConditionMigrating is true while the operator takes the group over
	// from keepalived-operator's objects (status.migration has the phase),
	// and false with reason Migrated once it has.
	ConditionMigrating = "Migrating"
	// ConditionPasswordAuthVRRPv2 is true when the group runs VRRPv2 because
	// it sets passwordAuth without vrrpVersion.
	ConditionPasswordAuthVRRPv2 = "PasswordAuthVRRPv2"
)

// Condition reasons.
const (
	ReasonReconciled         = "Reconciled"
	ReasonRouterIDsExhausted = "RouterIDsExhausted"
	// ReasonGroupStatusFull (Degraded true, and an Event on each Service left
	// out): the newest Services were left out because with them the
	// group's status would outgrow what the operator writes in one object.
	ReasonGroupStatusFull    = "GroupStatusFull"
	ReasonInvalidAddressPool = "InvalidAddressPool"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonKeepalivedImage    = "KeepalivedImage"
	ReasonVrrpdImage         = "VrrpdImage"
	// ReasonImageNotAllowed (ImageSubstituted true, and a Warning Event):
	// spec.image is neither the operator's vrrpd image nor on the cluster
	// admin's allow-list (--allowed-vrrpd-images).
	ReasonImageNotAllowed = "ImageNotAllowed"
	// ReasonNamespaceNotAllowed (Ready false, and a Warning Event): the
	// group's namespace is not one the cluster admin lets hold groups
	// (--group-namespaces); the operator creates nothing for it.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonSegmentNotAllowed (SegmentIgnored true, and a Warning Event):
	// spec.segment in a namespace the admin did not allow to name one
	// (--segment-namespaces).
	ReasonSegmentNotAllowed = "SegmentNotAllowed"

	// ReasonKeepalivedOperatorObjects (Migrating true, phase Shadowing):
	// keepalived-operator's objects of the group were found.
	ReasonKeepalivedOperatorObjects = "KeepalivedOperatorObjects"
	// ReasonOldPodsStopping (Migrating true, phase Handover): the old
	// objects are deleted, their pods are stopping.
	ReasonOldPodsStopping = "OldPodsStopping"
	// ReasonSettling (Migrating true, phase Settling): no old pod left.
	ReasonSettling = "Settling"
	// ReasonMigrated (Migrating false): the takeover is complete.
	ReasonMigrated = "Migrated"
	// ReasonPasswordAuthWithoutVersion (PasswordAuthVRRPv2 true).
	ReasonPasswordAuthWithoutVersion = "PasswordAuthWithoutVersion"
)
