package keyword

import (
	"maps"
	"slices"
	"strings"
)

// Block is where a keyword is written: in a vrrp_instance, in global_defs, or at the
// top level of keepalived.conf.
type Block uint8

// The blocks of the table.
const (
	Instance Block = iota + 1
	Global
	Top
)

// Owner says who decides a keyword written in Kubernetes: for a vrrp_instance keyword,
// whether a Service's verbatimconfig annotation may set it; for a global_defs keyword,
// whether a group's spec.verbatimConfig may.
type Owner int

const (
	// OwnerService: the Service (or, for global_defs keywords, the group's spec) may set
	// it. The operator copies a Service's value into the instance's settings.verbatim;
	// vrrpd applies what it implements and warns about the rest.
	OwnerService Owner = iota + 1
	// OwnerOperator: the operator decides it from the group, placement or the member
	// nodes, the same for every instance of the group, so a Service's copy would
	// contradict the rest of the cluster. The operator drops it with an Event on the
	// Service; vrrpd ignores it with a warning.
	OwnerOperator
	// OwnerRefused: it would make vrrpd run a program (keepalived's notify scripts and
	// tracked scripts). vrrpd never runs a process on a Service's say: the operator drops
	// it with an Event, and vrrpd ignores it with a warning should a status carry it.
	OwnerRefused
	// OwnerNode: it would change the node's own routing (virtual_routes,
	// virtual_rules): a route or policy rule on every member node, which one tenant's
	// Service must not be able to add for the whole cluster. Dropped with an Event, and
	// ignored by vrrpd with a warning, as OwnerRefused.
	OwnerNode
)

// Field is where a keyword's value lands: a setting of an instance as written
// (config.Draft) or of the global settings (config.Globals). Keywords that set one
// setting two ways share it (preempt and nopreempt, unicast_src_ip and mcast_src_ip).
type Field uint8

// The settings keywords set. FieldNone: the keyword is read elsewhere (a block the
// front-ends parse themselves) or not at all.
const (
	FieldNone Field = iota
	FieldState
	FieldInterface
	FieldVRID
	FieldPriority
	FieldAdvertInterval
	FieldVersion
	FieldPreempt
	FieldPreemptDelay
	FieldAccept
	FieldStrict
	FieldLowerPrioNoAdvert
	FieldV3ChecksumAsV2
	FieldSource
	FieldMulticastGroup
	FieldGARPMasterDelay
	FieldGARPMasterRepeat
	FieldGARPMasterRefresh
	FieldGARPMasterRefreshRepeat
	FieldVMAC
	FieldVMACXmitBase
	FieldRouterID
	FieldGARPInterval
	FieldGNAInterval
	FieldMulticastGroup4
	FieldMulticastGroup6
	FieldDownTimerAdverts
)

// Keyword is one entry of the table.
type Keyword struct {
	Name  string
	Block Block
	// Value reads and checks the words after the keyword; nil when vrrpd reads the
	// keyword elsewhere (a block) or not at all.
	Value Value
	// Field is where the value lands; FieldNone when vrrpd does not apply it here.
	Field Field
	// YAML is the key of the same setting in vrrpd's YAML schema, under an instance (or
	// under defaults, for a global keyword); dotted for a nested key. Empty: none.
	YAML string
	// Owner decides it in Kubernetes; GroupField names the KeepalivedGroup field that
	// decides an operator-owned instance keyword, where one does; Reason says why an
	// operator-owned global keyword is.
	Owner      Owner
	GroupField string
	Reason     string
	// Bounded: the number drives work or waiting (announcement repeats and delays), so
	// the operator refuses a Service's value that Value refuses, and does not leave it to
	// vrrpd's warning.
	Bounded bool
	// Unsupported is, for a keyword keepalived acts on that vrrpd reads without acting on
	// it, what happens instead (the warning's text and the migration guide's); Yet says
	// vrrpd plans to implement it (issue 9).
	Unsupported string
	Yet         bool
	// Skip is, for a keyword whose bad value keepalived 2.2.7 reports and then goes on
	// without (the instance kept, the line skipped), what is in use instead: keepalived.conf
	// then warns with it and goes on too. Empty: a bad value is an error, as it is in
	// every other format (YAML, a Service's keywords), which stay strict. Fallback, when
	// set, is the value keepalived puts in place of the bad one (priority's default),
	// read as if written.
	Skip     string
	Fallback string
}

// Lookup returns the entry of keyword name in block b.
func Lookup(b Block, name string) (*Keyword, bool) {
	k, ok := index[key{b, name}]
	return k, ok
}

// ByYAML returns the entries of block b with a YAML key, in table order.
func ByYAML(b Block) []*Keyword {
	var out []*Keyword
	for i := range table {
		if k := &table[i]; k.Block == b && k.YAML != "" {
			out = append(out, k)
		}
	}
	return out
}

// Unsupported returns what happens instead of keyword name, which vrrpd reads and does
// not act on (in whatever block it is written), and whether vrrpd plans to implement it.
func Unsupported(name string) (effect string, yet, ok bool) {
	for i := range table {
		if k := &table[i]; k.Name == name && k.Unsupported != "" {
			return k.Unsupported, k.Yet, true
		}
	}
	return "", false, false
}

// UnsupportedNames lists the keywords of Unsupported, sorted.
func UnsupportedNames() []string {
	names := map[string]bool{}
	for _, k := range table {
		if k.Unsupported != "" {
			names[k.Name] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// Names lists the keywords of block b that Kubernetes knows (an Owner), sorted.
func Names(b Block) []string {
	var out []string
	for _, k := range table {
		if k.Block == b && k.Owner != 0 {
			out = append(out, k.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ValueProblem says why a Service may not give keyword k the words of v when k is
// Bounded (the Value's own message, without the keyword), or "".
func ValueProblem(k, v string) string {
	e, ok := Lookup(Instance, k)
	if !ok {
		e, ok = Lookup(Global, k)
	}
	if !ok || !e.Bounded || e.Value == nil {
		return ""
	}
	s := &Statement{Key: k, Args: strings.Fields(v)}
	if _, err := e.Value.Read(s); err != nil {
		return strings.TrimPrefix(err.Error(), k+" ")
	}
	return ""
}

// ServiceProblem says why a Service's verbatimconfig may not set vrrp_instance keyword
// k to v, or "" when it may: the one wording of the operator's Events and vrrpd's
// warnings, which follows the keyword ("priority is set by the operator").
func ServiceProblem(k, v string) string {
	e, ok := Lookup(Instance, k)
	switch {
	case !ok || e.Owner == 0:
		return "is not a keepalived vrrp_instance keyword"
	case e.Owner == OwnerOperator && e.GroupField != "":
		return "is the group's decision (" + e.GroupField + " of the KeepalivedGroup), not a Service's"
	case e.Owner == OwnerOperator:
		return "is set by the operator"
	case e.Owner == OwnerNode:
		return "would add routes or rules on the nodes, which a Service may not"
	case e.Owner == OwnerRefused:
		return "would run a program, which vrrpd never does on a Service's say"
	}
	return ValueProblem(k, v)
}

type key struct {
	b    Block
	name string
}

var index = func() map[key]*Keyword {
	m := make(map[key]*Keyword, len(table))
	for i := range table {
		k := &table[i]
		m[key{k.Block, k.Name}] = k
	}
	return m
}()
