package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// serviceRef and groupRef are Event references without a resourceVersion.
// The events library folds repeats of an Event into one object with a
// count only when the references are equal, and a Service's
// resourceVersion changes with every write (our own finalizer and status
// updates too), which would otherwise make each repeat a new Event.
func serviceRef(s *corev1.Service) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: s.Namespace, Name: s.Name, UID: s.UID}
}

func groupRef(g *v1alpha1.KeepalivedGroup) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "KeepalivedGroup", Namespace: g.Namespace, Name: g.Name, UID: g.UID}
}

// Event reasons, on Services unless noted. Each names what a user would ask
// about; the note says which object and value.
const (
	ReasonIPAllocated        = "IPAllocated"
	ReasonIPReleased         = "IPReleased"
	ReasonAllocationFailed   = "AllocationFailed"
	ReasonGroupNotFound      = "GroupNotFound"
	ReasonInvalidAnnotation  = "InvalidAnnotation"
	ReasonRouterIDsExhausted = "RouterIDsExhausted"
	// ReasonGroupStatusFull: the Service is among the newest of a group whose
	// status would outgrow statusBudget with them; it gets no VIP. Not
	// RouterIDsExhausted: the router IDs are not what ran out, and that
	// reason's remedies (router budget, segments) would not help.
	ReasonGroupStatusFull = v1alpha1.ReasonGroupStatusFull
	// ReasonNamespaceNotAllowed: the group's allowedNamespaces does not
	// admit the Service's namespace; it gets no VIP.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonExternalIPNotAllowed: an externalIP outside the group's
	// spec.externalIPs policy.
	ReasonExternalIPNotAllowed = "ExternalIPNotAllowed"
	// ReasonAddressNotUsable: an address no host may own as a VIP
	// (multicast, loopback, link-local, broadcast, a pool CIDR's edge) or
	// a member node's own address.
	ReasonAddressNotUsable = "AddressNotUsable"
	// ReasonAddressInUse: another Service holds the address (it claimed it
	// first).
	ReasonAddressInUse = "AddressInUse"
	// ReasonRouterIDRenumbered (on groups): an instance's router ID had to
	// change because an earlier group on the segment holds it or it was
	// blacklisted.
	ReasonRouterIDRenumbered = "RouterIDRenumbered"
	// ReasonGroupNotAllowed: the Service's group is in a namespace that
	// may not hold groups (Options.GroupNamespaces); no VIP.
	ReasonGroupNotAllowed = "GroupNotAllowed"
)

// Event actions (events.k8s.io/v1 requires one).
const (
	actionAllocate        = "AllocateAddress"
	actionRelease         = "ReleaseAddress"
	actionValidate        = "ValidateAnnotations"
	actionAssignRouterID  = "AssignRouterID"
	actionReconcile       = "Reconcile"
	reportingController   = "vrrp-operator"
	fieldOwner            = "vrrp-operator"
	serviceFinalizer      = "redhatcop.redhat.io/loadbalancer-address"
	indexServiceGroup     = "vrrp-operator.keepalivedgroup"
	indexServiceAddresses = "vrrp-operator.addresses"
	indexNodeAddresses    = "vrrp-operator.node-addresses"
)
