package keyword

import "time"

// Limits of the numbers that drive work or waiting, one set for keepalived.conf, YAML,
// a Service's and a group's verbatim keywords. keepalived 2.2.7 reads the repeat counts
// up to UINT_MAX; every round is a frame per VIP on the wire, so 255 rounds is far beyond
// any use (keepalived's default is 5) and bounds what one Service can make every member
// send. The delays are keepalived's own limit (UINT_MAX microseconds, in whole seconds);
// the refresh period is tighter than its UINT_MAX.
const (
	MaxGARPRepeat  = 255
	MaxGARPDelay   = 4294 * time.Second
	MaxGARPRefresh = (1<<31 - 1) * time.Second
	// MaxGARPInterval bounds vrrp_garp_interval and vrrp_gna_interval.
	MaxGARPInterval = 1000 * time.Second
	// MaxPreemptDelay is keepalived's bound of preempt_delay.
	MaxPreemptDelay = 1000 * time.Second
	// MaxIfName is the longest interface name the kernel takes (IFNAMSIZ - 1).
	MaxIfName = 15
)

// Values shared by several entries.
var (
	vrid     = Uint(1, 255)
	version  = Uint(2, 3)
	repeat   = Repeat(MaxGARPRepeat)
	delay    = Seconds(MaxGARPDelay)
	refresh  = Seconds(MaxGARPRefresh)
	interval = Decimal(0, MaxGARPInterval)
)

// table is every keyword vrrpd knows, one entry each. Adding a keyword is an entry here,
// its Field's landing in internal/config (and what the setting does), and its test.
var table = []Keyword{
	// vrrp_instance keywords that land in an instance's settings. The group decides
	// interval, version and preemption; placement decides priority and state; the member
	// nodes decide unicast; the operator assigns the VRID; the group names the interface.
	{Name: "state", Block: Instance, Value: OneOf("MASTER", "BACKUP"), Field: FieldState, YAML: "state", Owner: OwnerOperator},
	{Name: "interface", Block: Instance, Value: Word(MaxIfName, "interface name"), Field: FieldInterface, YAML: "interface", Owner: OwnerOperator},
	{Name: "virtual_router_id", Block: Instance, Value: vrid, Field: FieldVRID, YAML: "vrid", Owner: OwnerOperator},
	{Name: "priority", Block: Instance, Value: vrid, Field: FieldPriority, YAML: "priority", Owner: OwnerOperator, Skip: "using the default priority 100", Fallback: "100"},
	{Name: "advert_int", Block: Instance, Value: Decimal(10*time.Millisecond, 255*time.Second), Field: FieldAdvertInterval, YAML: "advertInterval", Owner: OwnerOperator, Skip: "the advertisement interval stays as it was (1s by default)"},
	{Name: "version", Block: Instance, Value: version, Field: FieldVersion, YAML: "version", Owner: OwnerOperator, Skip: "the VRRP version stays as it was (vrrp_version's, 2 by default)"},
	{Name: "preempt", Block: Instance, Value: Const(true), Field: FieldPreempt, YAML: "preempt", Owner: OwnerOperator},
	{Name: "nopreempt", Block: Instance, Value: Const(false), Field: FieldPreempt, YAML: "preempt", Owner: OwnerOperator},
	{Name: "preempt_delay", Block: Instance, Value: Decimal(0, MaxPreemptDelay), Field: FieldPreemptDelay, YAML: "preemptDelay", Owner: OwnerService, Skip: "using no delay (0)", Fallback: "0"},
	{Name: "accept", Block: Instance, Value: Const(true), Field: FieldAccept, YAML: "accept", Owner: OwnerService},
	{Name: "no_accept", Block: Instance, Value: Const(false), Field: FieldAccept, YAML: "accept", Owner: OwnerService},
	// strict_mode applies keepalived's strict rules to the Service's instance, as it did
	// under the original operator: every member reads the same status, so all agree, and
	// nothing it changes (no password, no accept mode, lower_prio_no_advert) reaches
	// beyond the instance. Placement's priorities are never 255, so its state rule
	// changes nothing.
	{Name: "strict_mode", Block: Instance, Value: Bool(), Field: FieldStrict, YAML: "strict", Owner: OwnerService, Skip: "strict mode stays as it was (off by default)"},
	{Name: "lower_prio_no_advert", Block: Instance, Value: Bool(), Field: FieldLowerPrioNoAdvert, YAML: "lowerPrioNoAdvert", Owner: OwnerService, Skip: "lower_prio_no_advert stays as it was (off by default)"},
	// The group's v3ChecksumAsV2 decides the checksum form, which every member and the
	// group's other routers must agree on.
	{Name: "v3_checksum_as_v2", Block: Instance, Value: Bool(), Field: FieldV3ChecksumAsV2, YAML: "v3ChecksumAsV2", Owner: OwnerOperator},
	{Name: "unicast_src_ip", Block: Instance, Value: Address(), Field: FieldSource, YAML: "unicast.source", Owner: OwnerOperator, Skip: "the source address stays as it was (the interface's by default)"},
	{Name: "mcast_src_ip", Block: Instance, Value: Address(), Field: FieldSource, YAML: "unicast.source", Owner: OwnerOperator, Skip: "the source address stays as it was (the interface's by default)"},
	{Name: "mcast_dst_ip", Block: Instance, Value: Multicast(0), Field: FieldMulticastGroup, YAML: "multicastGroup", Owner: OwnerService, Skip: "the instance uses vrrp_mcast_group4/6's group (224.0.0.18 or ff02::12 by default)"},
	{Name: "garp_master_delay", Block: Instance, Value: delay, Field: FieldGARPMasterDelay, YAML: "garp.masterDelay", Owner: OwnerService, Bounded: true},
	{Name: "garp_master_repeat", Block: Instance, Value: repeat, Field: FieldGARPMasterRepeat, YAML: "garp.masterRepeat", Owner: OwnerService, Bounded: true},
	{Name: "garp_master_refresh", Block: Instance, Value: refresh, Field: FieldGARPMasterRefresh, YAML: "garp.masterRefresh", Owner: OwnerService, Bounded: true},
	{Name: "garp_master_refresh_repeat", Block: Instance, Value: repeat, Field: FieldGARPMasterRefreshRepeat, YAML: "garp.masterRefreshRepeat", Owner: OwnerService, Bounded: true},
	// The master is down after this many intervals of silence (RFC 5798's 3 by
	// default): the instance's own timing, which every member reads from one status.
	{Name: "down_timer_adverts", Block: Instance, Value: Uint(1, 100), Field: FieldDownTimerAdverts, YAML: "downTimerAdverts", Owner: OwnerService, Bounded: true, Skip: "down_timer_adverts stays as it was (vrrp_down_timer_adverts's, 3 by default)"},
	// use_vmac makes a macvlan on every member node and changes its interface's
	// arp_ignore and arp_filter: the node's settings, which the group decides
	// (spec.useVMAC), never a Service. vmac_xmit_base goes with it (spec.vmacXmitBase).
	{Name: "use_vmac", Block: Instance, Value: Words(), Field: FieldVMAC, YAML: "vmac", Owner: OwnerOperator, GroupField: "spec.useVMAC"},
	{Name: "vmac_xmit_base", Block: Instance, Value: Const(true), Field: FieldVMACXmitBase, YAML: "vmac.xmitBase", Owner: OwnerOperator, GroupField: "spec.vmacXmitBase"},

	// vrrp_instance keywords the front-ends read themselves (blocks, lists, hooks).
	{Name: "unicast_peer", Block: Instance, YAML: "unicast.peers", Owner: OwnerOperator},
	{Name: "authentication", Block: Instance, YAML: "auth", Owner: OwnerOperator},
	{Name: "auth_type", Block: Instance, YAML: "auth.type", Owner: OwnerOperator},
	{Name: "auth_pass", Block: Instance, YAML: "auth.password", Owner: OwnerOperator},
	{Name: "virtual_ipaddress", Block: Instance, YAML: "vips", Owner: OwnerOperator},
	{Name: "virtual_ipaddress_excluded", Block: Instance, YAML: "excludedVIPs", Owner: OwnerOperator},
	{Name: "notify", Block: Instance, YAML: "notify.all", Owner: OwnerRefused},
	{Name: "notify_backup", Block: Instance, YAML: "notify.backup", Owner: OwnerRefused},
	{Name: "notify_deleted", Block: Instance, YAML: "notify.deleted", Owner: OwnerRefused},
	{Name: "notify_fault", Block: Instance, YAML: "notify.fault", Owner: OwnerRefused},
	{Name: "notify_master", Block: Instance, YAML: "notify.master", Owner: OwnerRefused},
	{Name: "notify_stop", Block: Instance, YAML: "notify.stop", Owner: OwnerRefused},
	{Name: "track_script", Block: Instance, YAML: "trackScripts", Owner: OwnerRefused},
	{Name: "virtual_routes", Block: Instance, YAML: "routes", Owner: OwnerNode},
	{Name: "virtual_rules", Block: Instance, YAML: "rules", Owner: OwnerNode},
	{Name: "track_src_ip", Block: Instance, YAML: "trackSourceIP", Owner: OwnerService},
	{Name: "dont_track_primary", Block: Instance, YAML: "dontTrackPrimary", Owner: OwnerService},
	{Name: "track_file", Block: Instance, YAML: "trackFiles", Owner: OwnerService},
	{Name: "track_interface", Block: Instance, YAML: "trackInterfaces", Owner: OwnerService},

	// vrrp_instance keywords of keepalived 2.2 that vrrpd does not implement: a Service
	// may write them (keepalived-operator passed them on); vrrpd warns that it ignores
	// them. The garp_lower_prio ones are bounded all the same.
	{Name: "garp_lower_prio_delay", Block: Instance, Value: delay, Owner: OwnerService, Bounded: true},
	{Name: "garp_lower_prio_repeat", Block: Instance, Value: repeat, Owner: OwnerService, Bounded: true},
	{Name: "check_unicast_src", Block: Instance, Owner: OwnerService},
	{Name: "debug", Block: Instance, Owner: OwnerService},
	{Name: "garp_extra_if", Block: Instance, Owner: OwnerService},
	{Name: "higher_prio_send_advert", Block: Instance, Owner: OwnerService},
	{Name: "kernel_rx_buf_size", Block: Instance, Owner: OwnerService},
	{Name: "linkbeat_use_polling", Block: Instance, Owner: OwnerService},
	{Name: "native_ipv6", Block: Instance, Owner: OwnerService},
	{Name: "old_unicast_checksum", Block: Instance, Owner: OwnerService},
	{Name: "promote_secondaries", Block: Instance, Owner: OwnerService},
	{Name: "skip_check_adv_addr", Block: Instance, Owner: OwnerService},
	{Name: "unicast_fault_no_peer", Block: Instance, Owner: OwnerService},
	{Name: "unicast_ttl", Block: Instance, Owner: OwnerService},
	// ... and those it reads and warns about with what happens instead.
	{Name: "notify_master_rx_lower_pri", Block: Instance, Owner: OwnerRefused, Unsupported: "no script runs on an advertisement of lower priority", Yet: true},
	{Name: "track_process", Block: Instance, Owner: OwnerService, Unsupported: "the VIP will not follow the process", Yet: true},
	{Name: "track_bfd", Block: Instance, Owner: OwnerService, Unsupported: "the VIP will not follow BFD", Yet: true},
	{Name: "smtp_alert", Block: Instance, Owner: OwnerService, Unsupported: "no mail is sent"},

	// global_defs keywords. A group's spec.verbatimConfig may set any but those the
	// group's own fields or the node decide (Reason).
	{Name: "router_id", Block: Global, Value: Word(0, ""), Field: FieldRouterID, Owner: OwnerOperator, Reason: "vrrpd names itself after its node"},
	{Name: "net_namespace", Block: Global, Owner: OwnerOperator, Reason: "vrrpd runs in its pod's network namespace (the node's)"},
	{Name: "vrrp_version", Block: Global, Value: version, Field: FieldVersion, YAML: "version", Owner: OwnerOperator, Reason: "the group's vrrpVersion decides", Skip: "the default version stays 2"},
	// keepalived >= 2.2.8; like vrrp_strict it ignores any value.
	{Name: "v3_checksum_as_v2", Block: Global, Value: Const(true), Field: FieldV3ChecksumAsV2, YAML: "v3ChecksumAsV2", Owner: OwnerOperator, Reason: "the group's v3ChecksumAsV2 decides"},
	{Name: "vrrp_garp_master_delay", Block: Global, Value: delay, Field: FieldGARPMasterDelay, YAML: "garp.masterDelay", Owner: OwnerService, Bounded: true},
	{Name: "vrrp_garp_master_repeat", Block: Global, Value: repeat, Field: FieldGARPMasterRepeat, YAML: "garp.masterRepeat", Owner: OwnerService, Bounded: true},
	{Name: "vrrp_garp_master_refresh", Block: Global, Value: refresh, Field: FieldGARPMasterRefresh, YAML: "garp.masterRefresh", Owner: OwnerService, Bounded: true},
	{Name: "vrrp_garp_master_refresh_repeat", Block: Global, Value: repeat, Field: FieldGARPMasterRefreshRepeat, YAML: "garp.masterRefreshRepeat", Owner: OwnerService, Bounded: true},
	{Name: "vrrp_garp_lower_prio_delay", Block: Global, Value: delay, Owner: OwnerService, Bounded: true},
	{Name: "vrrp_garp_lower_prio_repeat", Block: Global, Value: repeat, Owner: OwnerService, Bounded: true},
	{Name: "vrrp_down_timer_adverts", Block: Global, Value: Uint(1, 100), Field: FieldDownTimerAdverts, YAML: "downTimerAdverts", Owner: OwnerService, Bounded: true, Skip: "the default stays 3"},
	{Name: "vrrp_garp_interval", Block: Global, Value: interval, Field: FieldGARPInterval, YAML: "garp.interval", Owner: OwnerService},
	{Name: "vrrp_gna_interval", Block: Global, Value: interval, Field: FieldGNAInterval, YAML: "garp.naInterval", Owner: OwnerService},
	{Name: "vrrp_mcast_group4", Block: Global, Value: Multicast(4), Field: FieldMulticastGroup4, YAML: "multicastGroup4", Owner: OwnerService, Skip: "the IPv4 multicast group stays as it was (224.0.0.18 by default)"},
	{Name: "vrrp_mcast_group6", Block: Global, Value: Multicast(6), Field: FieldMulticastGroup6, YAML: "multicastGroup6", Owner: OwnerService, Skip: "the IPv6 multicast group stays as it was (ff02::12 by default)"},
	// keepalived takes no value here (its handler ignores any).
	{Name: "vrrp_strict", Block: Global, Value: Const(true), Field: FieldStrict, YAML: "strict", Owner: OwnerService},
	{Name: "vrrp_lower_prio_no_advert", Block: Global, Value: Bool(), Field: FieldLowerPrioNoAdvert, YAML: "lowerPrioNoAdvert", Owner: OwnerService, Skip: "the default stays as it was (off)"},
	{Name: "notify_fifo_script", Block: Global, Owner: OwnerService, Unsupported: "no script reads the FIFO", Yet: true},
	{Name: "vrrp_notify_fifo_script", Block: Global, Owner: OwnerService, Unsupported: "no script reads the FIFO", Yet: true},
	{Name: "smtp_server", Block: Global, Owner: OwnerService, Unsupported: "no mail is sent"},
	{Name: "notification_email", Block: Global, Owner: OwnerService, Unsupported: "no mail is sent"},

	// Top-level blocks vrrpd reads and does not run.
	{Name: "vrrp_track_process", Block: Top, Unsupported: "the process is not watched", Yet: true},
	{Name: "bfd_instance", Block: Top, Unsupported: "no BFD session runs", Yet: true},
	{Name: "virtual_server", Block: Top, Unsupported: "vrrpd does no load balancing (IPVS)"},
	{Name: "virtual_server_group", Block: Top, Unsupported: "vrrpd does no load balancing (IPVS)"},
}
