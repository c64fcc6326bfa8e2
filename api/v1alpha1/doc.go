// Package v1alpha1 is the KeepalivedGroup API (group redhatcop.redhat.io,
// version v1alpha1), wire-compatible with the Red Hat keepalived-operator:
// every spec field of the original keeps its JSON name and meaning, so
// existing manifests apply unchanged.
//
// The spec is what an administrator writes: which nodes run the VRRP daemon
// (nodeSelector), on which interface, with which authentication and which
// router IDs are off limits, plus the fields this project adds (vrrpVersion,
// advertInterval, preempt, addressPool). The status is what the operator
// computed from the spec, the annotated Services and the Nodes, and it is all
// vrrpd needs to run: the member nodes with their addresses (unicast peers),
// and per VRRP instance its key, router ID, VIPs, settings and the priority of
// every node. The status is deterministic: identical inputs give
// byte-identical status.
//
// Services opt in with the annotations named by the Annotation* constants.
//
// +kubebuilder:object:generate=true
// +groupName=redhatcop.redhat.io
package v1alpha1
