package controller

// Event reasons, on Services unless noted. Each names what a user would ask
// about; the note says which object and value.
const (
	ReasonIPAllocated        = "IPAllocated"
	ReasonIPReleased         = "IPReleased"
	ReasonAllocationFailed   = "AllocationFailed"
	ReasonGroupNotFound      = "GroupNotFound"
	ReasonInvalidAnnotation  = "InvalidAnnotation"
	ReasonRouterIDsExhausted = "RouterIDsExhausted"
)

// Event actions (events.k8s.io/v1 requires one).
const (
	actionAllocate        = "AllocateAddress"
	actionRelease         = "ReleaseAddress"
	actionValidate        = "ValidateAnnotations"
	actionAssignRouterID  = "AssignRouterID"
	reportingController   = "vrrp-operator"
	fieldOwner            = "vrrp-operator"
	serviceFinalizer      = "redhatcop.redhat.io/loadbalancer-address"
	indexServiceGroup     = "vrrp-operator.keepalivedgroup"
	indexServiceAddresses = "vrrp-operator.addresses"
)
