package v1alpha1

import "github.com/vrrp-operator/vrrp-operator/internal/keyword"

// The operator↔vrrpd contract about verbatim keywords reads keepalived's keyword table
// (package keyword): the one place a keyword's owner, its value's check and its meaning
// to vrrpd are written. The table is a package of its own, below api, because vrrpd's
// configuration (internal/config) reads it too, and api must not import vrrpd's layer.

// Owner says who decides a keepalived keyword that verbatim configuration
// names: a Service's verbatimconfig annotation (vrrp_instance keywords) or a
// group's spec.verbatimConfig (global_defs keywords).
// +kubebuilder:object:generate=false
type Owner = keyword.Owner

const (
	// OwnerUser: the Service (or, for global_defs keywords, the group's
	// spec) may set it. The operator copies a Service's value into the
	// instance's settings.verbatim; vrrpd applies what it implements and
	// warns about the rest.
	OwnerUser = keyword.OwnerService
	// OwnerOperator: the operator decides it from the group, placement or
	// the member nodes (keyword.OwnerOperator).
	OwnerOperator = keyword.OwnerOperator
	// OwnerRefused: it would make vrrpd run a program (keyword.OwnerRefused).
	OwnerRefused = keyword.OwnerRefused
	// OwnerNode: it would change the node's own routing (keyword.OwnerNode).
	OwnerNode = keyword.OwnerNode
)

// GroupField names the KeepalivedGroup field that decides vrrp_instance
// keyword k in a Service's place, and false when no single field does.
func GroupField(k string) (string, bool) {
	e, ok := keyword.Lookup(keyword.Instance, k)
	if !ok || e.GroupField == "" {
		return "", false
	}
	return e.GroupField, true
}

// ServiceValueProblem says why a Service may not give keyword k the value v,
// or "" when it may.
//
// A keyword with a number limit (VerbatimNumberLimit) must be a whole number
// in its range: a Service must not make every member of its group send
// millions of gratuitous ARPs. The message is the keyword table's, the one
// vrrpd gives for a file.
func ServiceValueProblem(k, v string) string { return keyword.ValueProblem(k, v) }

// VerbatimProblem says why a Service's verbatimconfig may not set
// vrrp_instance keyword k to v (the operator's Event and vrrpd's warning
// follow the keyword with it), or "" when it may.
func VerbatimProblem(k, v string) string { return keyword.ServiceProblem(k, v) }

// NumberLimit is the range of a keyword's whole-number value.
// +kubebuilder:object:generate=false
type NumberLimit struct{ Min, Max uint64 }

// VerbatimNumberLimit returns the range of keyword k's value, and false when
// k's value is not a bounded number. The range is the one the keyword table's
// check accepts.
func VerbatimNumberLimit(k string) (NumberLimit, bool) {
	e, ok := keyword.Lookup(keyword.Instance, k)
	if !ok {
		e, ok = keyword.Lookup(keyword.Global, k)
	}
	if !ok || !e.Bounded || e.Value == nil {
		return NumberLimit{}, false
	}
	lo, hi, ok := keyword.Range(e.Value)
	return NumberLimit{Min: lo, Max: hi}, ok
}

// instanceKeywords are keepalived 2.2's vrrp_instance keywords of the table,
// and who decides each. A key not listed is a typo or a global_defs keyword.
var instanceKeywords = func() map[string]Owner {
	m := map[string]Owner{}
	for _, k := range keyword.Names(keyword.Instance) {
		e, _ := keyword.Lookup(keyword.Instance, k)
		m[k] = e.Owner
	}
	return m
}()

// InstanceKeyword reports who decides vrrp_instance keyword k, and false
// when k is not a keepalived vrrp_instance keyword.
func InstanceKeyword(k string) (Owner, bool) {
	o, ok := instanceKeywords[k]
	return o, ok
}

// InstanceKeywords lists every vrrp_instance keyword of the table, sorted.
func InstanceKeywords() []string { return keyword.Names(keyword.Instance) }

// GlobalKeyword reports who decides global_defs keyword k of a group's
// spec.verbatimConfig: OwnerOperator, with the reason, for the keywords the
// group's own fields or the node decide; OwnerUser for any other.
func GlobalKeyword(k string) (Owner, string) {
	if e, ok := keyword.Lookup(keyword.Global, k); ok && e.Owner == OwnerOperator {
		return OwnerOperator, e.Reason
	}
	return OwnerUser, ""
}
