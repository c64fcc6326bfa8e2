package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeepalivedMastership says which node is master of each VRRP instance of one
// KeepalivedGroup, and since when: who holds a Service's VIPs now. There is
// one per group, with the group's name and namespace; the operator creates it
// (owned by the group, so it goes with it) and never writes its status. The
// group's vrrpd write the status, each only its own node's entries: a node
// that becomes master of instances sets them to itself (an update of the
// status, with the object's resourceVersion, so concurrent writers retry
// rather than lose each other's entries) and drops the entries that still
// name it but that it no longer masters. A node that stops being master
// writes nothing (its successor's write replaces the entry), unless the
// instance left the group (its Service is gone), when it drops the entry
// itself. Takeovers close together (internal/groupsource: 50 ms apart, 400
// ms in all) are one write, however many instances move; nothing is written
// while nothing changes. Each vrrpd also watches the object and puts back an
// entry of an instance it masters that another node overwrote after its
// mastership began (two masters for a moment), so the view heals; of two
// nodes that both stay master, it names the one that has been master longer.
//
// One object per group, not per instance: 255 instances that fail over
// together are then one write per node that takes them, where an object per
// instance would be 255. The price is the table: `kubectl get` lists groups,
// and the per-VIP view is the status (README, "Where is my VIP").
//
// The status goes stale when its writers cannot reach the API server (a node
// cut off from it keeps serving, and its successor cannot be told); vrrpd's
// own /status and metrics are the authority on each node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=vipholders
// +kubebuilder:printcolumn:name="Services",type=string,JSONPath=`.status.holders[*].service`
// +kubebuilder:printcolumn:name="Nodes",type=string,JSONPath=`.status.holders[*].node`
// +kubebuilder:printcolumn:name="VIPs",type=string,priority=1,JSONPath=`.status.holders[*].vips[*]`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KeepalivedMastership struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status KeepalivedMastershipStatus `json:"status,omitempty"`
}

// KeepalivedMastershipStatus lists the instances that have a master.
type KeepalivedMastershipStatus struct {
	// Holders has one entry per virtual router that a node is master of.
	// +listType=map
	// +listMapKey=instance
	// +kubebuilder:validation:MaxItems=512
	// +optional
	Holders []VIPHolder `json:"holders,omitempty"`
}

// MaxHolderVIPs is how many VIPs a VIPHolder lists at most (its VIPs field's
// MaxItems): a shared router's holder lists the first ones in address order.
const MaxHolderVIPs = 64

// VIPHolder is the master of one virtual router.
type VIPHolder struct {
	// Instance is vrrpd's name of the virtual router: the group's instance
	// key ("namespace/name", or "namespace/name/ip" with spreadvips), with
	// "/ipv4" or "/ipv6" for each family of a dual-stack instance. A
	// shared router's key ("@class/node,node") with two long node names is
	// up to about 520 bytes.
	// +kubebuilder:validation:MaxLength=600
	Instance string `json:"instance"`
	// Service is "namespace/name" of the Service whose VIPs these are.
	// +kubebuilder:validation:MaxLength=320
	Service string `json:"service"`
	// VIPs are the addresses the master holds for the instance, in address
	// order, truncated to the first 64 (MaxHolderVIPs): a shared router holds
	// many Services' addresses and lists only the first 64 of them here; the
	// group's status has the full list.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	VIPs []string `json:"vips,omitempty"`
	// Node is the master's node name.
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// Since is when the node became master, by its own clock.
	Since metav1.MicroTime `json:"since"`
}

// KeepalivedMastershipList is a list of KeepalivedMastership.
//
// +kubebuilder:object:root=true
type KeepalivedMastershipList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KeepalivedMastership `json:"items"`
}

// MastershipFieldManager is the field manager of node's vrrpd when it writes a
// KeepalivedMastership's status (managedFields then say which node wrote
// last): "vrrpd-<node>", or for a node name too long for a field manager (128
// characters; node names may have 253) its first 100 characters and a hash of
// the whole.
func MastershipFieldManager(node string) string {
	const max = 128
	m := "vrrpd-" + node
	if len(m) <= max {
		return m
	}
	sum := sha256.Sum256([]byte(node))
	return m[:100] + "-" + hex.EncodeToString(sum[:8])
}
