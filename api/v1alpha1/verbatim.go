package v1alpha1

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Owner says who decides a keepalived keyword that verbatim configuration
// names: a Service's verbatimconfig annotation (vrrp_instance keywords) or a
// group's spec.verbatimConfig (global_defs keywords).
// +kubebuilder:object:generate=false
type Owner int

const (
	// OwnerUser: the Service (or, for global_defs keywords, the group's
	// spec) may set it. The operator copies a Service's value into the
	// instance's settings.verbatim; vrrpd applies what it implements and
	// warns about the rest.
	OwnerUser Owner = iota + 1
	// OwnerOperator: the operator decides it from the group, placement or
	// the member nodes, the same for every instance of the group, so a
	// Service's copy would contradict the rest of the cluster. The operator
	// drops it with an Event on the Service; vrrpd ignores it with a warning.
	OwnerOperator
	// OwnerRefused: it would make vrrpd run a program (keepalived's notify
	// scripts and tracked scripts). vrrpd never runs a process on a
	// Service's say: the operator drops it with an Event, and vrrpd ignores
	// it with a warning should a status carry it anyway.
	OwnerRefused
	// OwnerNode: it would change the node's own routing (virtual_routes,
	// virtual_rules): a route or policy rule on every member node, which one
	// tenant's Service must not be able to add for the whole cluster. Dropped
	// with an Event, and ignored by vrrpd with a warning, as OwnerRefused.
	OwnerNode
)

// instanceKeywords are keepalived 2.2's vrrp_instance keywords, and who
// decides each. A key not listed is a typo or a global_defs keyword.
var instanceKeywords = map[string]Owner{
	// The group decides interval, version and preemption; placement decides
	// priority and state; the member nodes decide unicast; the operator
	// assigns the VRID and VIPs; the group names interface and password.
	"advert_int": OwnerOperator, "version": OwnerOperator,
	"preempt": OwnerOperator, "nopreempt": OwnerOperator,
	"priority": OwnerOperator, "state": OwnerOperator,
	"unicast_src_ip": OwnerOperator, "mcast_src_ip": OwnerOperator, "unicast_peer": OwnerOperator,
	"authentication": OwnerOperator, "auth_type": OwnerOperator, "auth_pass": OwnerOperator,
	"interface": OwnerOperator, "virtual_router_id": OwnerOperator,
	"virtual_ipaddress": OwnerOperator, "virtual_ipaddress_excluded": OwnerOperator,
	// The group's v3ChecksumAsV2 decides the checksum form, which every
	// member and the group's other routers must agree on.
	"v3_checksum_as_v2": OwnerOperator,

	"notify": OwnerRefused, "notify_backup": OwnerRefused, "notify_deleted": OwnerRefused,
	"notify_fault": OwnerRefused, "notify_master": OwnerRefused,
	"notify_master_rx_lower_pri": OwnerRefused, "notify_stop": OwnerRefused,
	"track_script": OwnerRefused,

	"virtual_routes": OwnerNode, "virtual_rules": OwnerNode,

	"accept": OwnerUser, "no_accept": OwnerUser, "preempt_delay": OwnerUser,
	"garp_master_delay": OwnerUser, "garp_master_refresh": OwnerUser,
	"garp_master_refresh_repeat": OwnerUser, "garp_master_repeat": OwnerUser,
	"mcast_dst_ip":      OwnerUser,
	"check_unicast_src": OwnerUser, "debug": OwnerUser, "dont_track_primary": OwnerUser,
	"garp_extra_if": OwnerUser, "garp_lower_prio_delay": OwnerUser,
	"garp_lower_prio_repeat": OwnerUser, "higher_prio_send_advert": OwnerUser,
	"kernel_rx_buf_size": OwnerUser, "linkbeat_use_polling": OwnerUser,
	"lower_prio_no_advert": OwnerUser, "native_ipv6": OwnerUser,
	"old_unicast_checksum": OwnerUser, "promote_secondaries": OwnerUser,
	"skip_check_adv_addr": OwnerUser, "smtp_alert": OwnerUser,
	// strict_mode applies keepalived's strict rules to the Service's instance,
	// as it did under the original operator: every member reads the same
	// status, so all agree, and nothing it changes (no password, no accept
	// mode, lower_prio_no_advert) reaches beyond the instance. Placement's
	// priorities are never 255, so its state rule changes nothing.
	"strict_mode": OwnerUser,
	"track_bfd":   OwnerUser, "track_file": OwnerUser, "track_interface": OwnerUser,
	"track_process": OwnerUser, "track_src_ip": OwnerUser,
	"unicast_fault_no_peer": OwnerUser, "unicast_ttl": OwnerUser,
	// use_vmac makes a macvlan on every member node and changes its
	// interface's arp_ignore and arp_filter: the node's settings, which the
	// group decides (spec.useVMAC), never a Service. vmac_xmit_base goes with
	// it (spec.vmacXmitBase).
	"use_vmac": OwnerOperator, "vmac_xmit_base": OwnerOperator,
}

// groupFields name the group's field that decides an operator-owned
// vrrp_instance keyword, where one does, for the Event that tells a Service
// owner (and a user migrating from keepalived-operator) what to ask for.
var groupFields = map[string]string{
	"use_vmac":       "spec.useVMAC",
	"vmac_xmit_base": "spec.vmacXmitBase",
}

// GroupField names the KeepalivedGroup field that decides vrrp_instance
// keyword k in a Service's place, and false when no single field does.
func GroupField(k string) (string, bool) {
	f, ok := groupFields[k]
	return f, ok
}

// ServiceValueProblem says why a Service may not give keyword k the value v,
// or "" when it may.
//
// A keyword with a number limit (VerbatimNumberLimit) must be a whole number
// in its range: a Service must not make every member of its group send
// millions of gratuitous ARPs.
func ServiceValueProblem(k, v string) string {
	if l, ok := numberLimits[k]; ok {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil || n < l.Min || n > l.Max {
			return fmt.Sprintf("must be a whole number from %d to %d", l.Min, l.Max)
		}
	}
	return ""
}

// NumberLimit is the range of a keyword's whole-number value.
// +kubebuilder:object:generate=false
type NumberLimit struct{ Min, Max uint64 }

// numberLimits bound the verbatim keywords whose number drives work or
// waiting: keepalived 2.2.7's limits (vrrp_parser.c, global_parser.c) or
// tighter. keepalived reads the repeat counts up to UINT_MAX; every round is
// a frame per VIP, so 255 bounds them (the default is 5). The delays are
// keepalived's UINT_MAX microseconds in whole seconds. vrrpd's configuration
// (internal/config, for files too) holds the same limits, and a test there
// checks that the two agree.
var numberLimits = map[string]NumberLimit{
	"garp_master_repeat":              {0, 255},
	"garp_master_refresh_repeat":      {0, 255},
	"garp_lower_prio_repeat":          {0, 255},
	"garp_master_delay":               {0, 4294},
	"garp_lower_prio_delay":           {0, 4294},
	"garp_master_refresh":             {0, 1<<31 - 1},
	"vrrp_garp_master_repeat":         {0, 255},
	"vrrp_garp_master_refresh_repeat": {0, 255},
	"vrrp_garp_lower_prio_repeat":     {0, 255},
	"vrrp_garp_master_delay":          {0, 4294},
	"vrrp_garp_lower_prio_delay":      {0, 4294},
	"vrrp_garp_master_refresh":        {0, 1<<31 - 1},
}

// VerbatimNumberLimit returns the range of keyword k's value, and false when
// k has none in this table.
func VerbatimNumberLimit(k string) (NumberLimit, bool) {
	l, ok := numberLimits[k]
	return l, ok
}

// globalKeywords are the global_defs keywords of spec.verbatimConfig that
// the operator or the node decides, with the reason; every other key is
// passed to vrrpd, which applies what it implements and warns about the rest.
var globalKeywords = map[string]string{
	"router_id":         "vrrpd names itself after its node",
	"net_namespace":     "vrrpd runs in its pod's network namespace (the node's)",
	"vrrp_version":      "the group's vrrpVersion decides",
	"v3_checksum_as_v2": "the group's v3ChecksumAsV2 decides",
}

// InstanceKeyword reports who decides vrrp_instance keyword k, and false
// when k is not a keepalived vrrp_instance keyword.
func InstanceKeyword(k string) (Owner, bool) {
	o, ok := instanceKeywords[k]
	return o, ok
}

// InstanceKeywords lists every vrrp_instance keyword of the table, sorted.
func InstanceKeywords() []string {
	return slices.Sorted(maps.Keys(instanceKeywords))
}

// GlobalKeyword reports who decides global_defs keyword k of a group's
// spec.verbatimConfig: OwnerOperator, with the reason, for the keywords the
// group's own fields or the node decide; OwnerUser for any other.
func GlobalKeyword(k string) (Owner, string) {
	if why, ok := globalKeywords[k]; ok {
		return OwnerOperator, why
	}
	return OwnerUser, ""
}
