package config

import (
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/garp"
	"github.com/vrrp-operator/vrrp-operator/internal/route"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Config is everything vrrpd runs on one host.
type Config struct {
	// RouterID names this host in logs (keepalived's global_defs router_id). Empty when the
	// file sets none; the daemon may default it to the host name.
	RouterID string
	// Instances are the virtual routers, in file order.
	Instances []Instance
	// Files are every file the load read, the main one first, then includes in the order
	// they were read. A reloader can watch them.
	Files []string
	// Scripts are the vrrp_scripts some instance tracks (no other runs), by name;
	// ScriptSettings the global script_user and enable_script_security.
	Scripts        []Script
	ScriptSettings ScriptSettings
	// NetNamespace is global_defs net_namespace: the network namespace (a name in
	// /run/netns) vrrpd runs its instances in; empty for its own. Static are the
	// static_ipaddress, static_routes and static_rules (routes.go).
	NetNamespace string
	Static       Static
	// TrackFiles are the track_file blocks some instance tracks, by name; SyncGroups the
	// vrrp_sync_groups with members (tracking.go).
	TrackFiles []TrackFileSpec
	SyncGroups []SyncGroup
}

// Instance is one virtual router, fully resolved: every field holds the value the daemon
// must use, with no "unset" markers left.
type Instance struct {
	// Name is the instance name (keepalived's vrrp_instance NAME), unique in a Config.
	Name string
	// Interface is the network interface the advertisements are sent and received on.
	Interface string
	// Family is the address family of the instance: that of its VIPs, or of its unicast
	// addresses when it has no VIPs.
	Family Family
	// VRID is the virtual router ID, 1..255.
	VRID uint8
	// Priority is this router's priority, 1..255 (255 only for the address owner).
	Priority uint8
	// Version is the VRRP version, 2 or 3. IPv6 instances are always version 3.
	Version vrrp.Version
	// AdvertInterval is the advertisement interval: whole seconds for version 2,
	// centiseconds for version 3.
	AdvertInterval time.Duration
	// Preempt says whether a higher-priority backup takes over from a lower-priority
	// master (keepalived's default; nopreempt turns it off).
	Preempt bool
	// PreemptDelay delays preemption after startup (keepalived's preempt_delay).
	PreemptDelay time.Duration
	// AcceptMode says whether a non-owner master accepts packets addressed to the VIPs
	// (keepalived's accept / no_accept).
	AcceptMode bool
	// InitialState is StateBackup or StateMaster (keepalived's state). keepalived treats
	// MASTER as a wish: the router still starts as a backup unless it owns the addresses.
	InitialState string
	// UnicastSrc is the source address of unicast advertisements; invalid (zero) when
	// the instance uses multicast or the daemon should pick the interface address.
	UnicastSrc netip.Addr
	// UnicastPeers are the peers advertisements are sent to. Empty means multicast.
	UnicastPeers []netip.Addr
	// MulticastGroup is the destination of multicast advertisements: 224.0.0.18 or
	// ff02::12 unless global_defs vrrp_mcast_group4/6 overrides it.
	MulticastGroup netip.Addr
	// AuthType is vrrp.AuthNone or vrrp.AuthSimple (keepalived's auth_type PASS); only
	// version 2 has authentication.
	AuthType vrrp.AuthType
	// AuthPass is the simple password, at most 8 bytes (longer ones are truncated with a
	// warning, as keepalived does).
	AuthPass string
	// VIPs are the virtual addresses: added on becoming master and carried in the
	// advertisements. All of the instance's family.
	VIPs []VIP
	// ExcludedVIPs (keepalived's virtual_ipaddress_excluded) are added and removed with
	// the VIPs but never put in advertisements; they may be of either family.
	ExcludedVIPs []VIP
	// DownTimerAdverts is how many advertisement intervals of silence make the master
	// down (keepalived's down_timer_adverts), 0 for RFC 5798's 3 (vrrp.Config's meaning).
	DownTimerAdverts int
	// GARP are the gratuitous ARP / unsolicited neighbour advertisement settings.
	GARP GARP
	// VMAC is the virtual MAC setting (use_vmac, vmac_xmit_base).
	VMAC VMAC
	// Strict says keepalived's strict mode applies (global_defs vrrp_strict, or the
	// instance's strict_mode): its adjustments are already made in the other fields.
	Strict bool
	// LowerPrioNoAdvert makes a master ignore lower-priority advertisements instead of
	// answering them (lower_prio_no_advert; always on in strict mode).
	LowerPrioNoAdvert bool
	// OwnerIgnoreAdverts makes an address owner ignore every advertisement (YAML
	// ownerIgnoreAdverts; keepalived 2.2.7 has no keyword for it).
	OwnerIgnoreAdverts bool
	// V3ChecksumAsV2 sends the VRRPv3 IPv4 checksum without the pseudo-header, as RFC
	// 9568 §5.2.8 says (keepalived >= 2.2.8's v3_checksum_as_v2).
	V3ChecksumAsV2 bool
	// HandoverOnly makes the instance a backup that takes over only when the master
	// hands over (vrrp.Config.HandoverOnly): the Kubernetes mode's takeover from
	// keepalived-operator's pods. No keyword sets it.
	HandoverOnly bool
	// BreakFirstPreempt makes every preemption break before it makes
	// (vrrp.Config.BreakFirstPreempt): the Kubernetes mode's. No keyword sets it.
	BreakFirstPreempt bool
	// TrackScripts are the vrrp_scripts the instance tracks (scripts.go), Notify its
	// notify hooks.
	TrackScripts []TrackScript
	Notify       Notify
	// StartDelay lengthens the instance's first Master_Down_Timer after it starts, so
	// that, of nodes starting a new instance together, the best-ranked is the first to
	// claim it (Kubernetes mode sets it from the node's rank; no keyword sets it). The
	// instance is BACKUP and hears advertisements from its start as without it. Not part
	// of its settings: it matters only when the instance starts.
	StartDelay time.Duration
	// Routes and Rules (virtual_routes, virtual_rules) are added with the VIPs on
	// becoming master and removed on leaving it. TrackSrcIP (track_src_ip) makes the
	// instance FAULT while its configured UnicastSrc is not on its interface.
	Routes     []route.Route
	Rules      []route.Rule
	TrackSrcIP bool
	// TrackInterfaces and TrackFiles are its other trackers, a sync group's included;
	// DontTrackPrimary leaves its own interface's link state out (tracking.go). SyncGroup
	// names the vrrp_sync_group it belongs to, if any.
	TrackInterfaces  []TrackInterface
	TrackFiles       []TrackFile
	DontTrackPrimary bool
	SyncGroup        string
	// Source is where the instance is defined; not part of its settings.
	Source Position
}

// Instance states accepted in InitialState.
const (
	StateBackup = "BACKUP"
	StateMaster = "MASTER"
)

// Family is an address family (the protocol core's).
type Family = vrrp.Family

// The address families of an instance.
const (
	IPv4 = vrrp.IPv4
	IPv6 = vrrp.IPv6
)

// VIP is one virtual address as keepalived writes it: addr/prefix [dev DEV] [label LABEL].
type VIP struct {
	// Prefix is the address with its prefix length (/32 or /128 when the file gives none).
	Prefix netip.Prefix
	// Dev is the interface to add the address to: the instance's interface unless given.
	Dev string
	// Label is the IPv4 address label (ip addr ... label), empty for none.
	Label string
}

// GARP holds the announcement settings of keepalived's garp_* / vrrp_garp_* keywords:
// package garp's Settings, which the daemon hands to it as they are. A count of gratuitous
// ARPs applies equally to IPv6 unsolicited neighbour advertisements.
type GARP = garp.Settings

// Position is a place in a configuration file.
type Position struct {
	File string
	Line int
}

// String returns "file:line", or just the file when the line is unknown.
func (p Position) String() string {
	if p.Line <= 0 {
		return p.File
	}
	return p.File + ":" + itoa(p.Line)
}

// Equal reports whether a and b have the same settings, ignoring where they are defined
// (Source). The daemon uses it on reload: an instance that is Equal to its running
// counterpart keeps its state, counters and VIPs.
func (a Instance) Equal(b Instance) bool {
	return a.Name == b.Name &&
		a.Interface == b.Interface &&
		a.Family == b.Family &&
		a.VRID == b.VRID &&
		a.Priority == b.Priority &&
		a.Version == b.Version &&
		a.AdvertInterval == b.AdvertInterval &&
		a.Preempt == b.Preempt &&
		a.PreemptDelay == b.PreemptDelay &&
		a.AcceptMode == b.AcceptMode &&
		a.InitialState == b.InitialState &&
		a.UnicastSrc == b.UnicastSrc &&
		slices.Equal(a.UnicastPeers, b.UnicastPeers) &&
		a.MulticastGroup == b.MulticastGroup &&
		a.AuthType == b.AuthType &&
		a.AuthPass == b.AuthPass &&
		slices.Equal(a.VIPs, b.VIPs) &&
		slices.Equal(a.ExcludedVIPs, b.ExcludedVIPs) &&
		a.GARP == b.GARP &&
		a.DownTimerAdverts == b.DownTimerAdverts &&
		a.VMAC.Equal(b.VMAC) &&
		a.Strict == b.Strict &&
		a.LowerPrioNoAdvert == b.LowerPrioNoAdvert &&
		a.OwnerIgnoreAdverts == b.OwnerIgnoreAdverts &&
		a.V3ChecksumAsV2 == b.V3ChecksumAsV2 &&
		a.HandoverOnly == b.HandoverOnly &&
		a.BreakFirstPreempt == b.BreakFirstPreempt &&
		slices.Equal(a.TrackScripts, b.TrackScripts) &&
		a.Notify.Equal(b.Notify) &&
		slices.Equal(a.Routes, b.Routes) && slices.Equal(a.Rules, b.Rules) && a.TrackSrcIP == b.TrackSrcIP &&
		slices.Equal(a.TrackInterfaces, b.TrackInterfaces) &&
		slices.Equal(a.TrackFiles, b.TrackFiles) &&
		a.DontTrackPrimary == b.DontTrackPrimary &&
		a.SyncGroup == b.SyncGroup
}

// AuthData returns the password as the 8 zero-padded bytes of a VRRPv2 advertisement.
func (a Instance) AuthData() [8]byte {
	var d [8]byte
	copy(d[:], a.AuthPass)
	return d
}

// Unicast reports whether the instance sends its advertisements to unicast peers. A
// pointer receiver: the daemon asks for every packet it reads, and a value receiver on an
// Instance held in a struct copied all of it (nearly a kilobyte) each time.
func (a *Instance) Unicast() bool { return len(a.UnicastPeers) > 0 }

// Instance returns the instance called name, or false.
func (c *Config) Instance(name string) (Instance, bool) {
	for _, in := range c.Instances {
		if in.Name == name {
			return in, true
		}
	}
	return Instance{}, false
}

// StateMachineConfig returns the vrrp state machine's configuration of the instance.
// primary is the router's own address that the daemon chose as the advertisements'
// source (UnicastSrc when set, else the interface's primary IPv4 or link-local IPv6
// address).
func (a Instance) StateMachineConfig(primary netip.Addr) vrrp.Config {
	vips := make([]netip.Prefix, len(a.VIPs))
	for i, v := range a.VIPs {
		vips[i] = v.Prefix
	}
	return vrrp.Config{
		Name:           a.Name,
		VRID:           a.VRID,
		Version:        a.Version,
		Priority:       a.Priority,
		AdvertInterval: a.AdvertInterval,
		Preempt:        a.Preempt,
		PreemptDelay:   a.PreemptDelay,
		AcceptMode:     a.AcceptMode,
		VIPs:           vips,
		Primary:        primary,
		AuthType:       a.AuthType,
		AuthPass:       a.AuthPass,

		DownTimerAdverts: a.DownTimerAdverts,

		LowerPrioNoAdvert:  a.LowerPrioNoAdvert,
		OwnerIgnoreAdverts: a.OwnerIgnoreAdverts,
		V3ChecksumAsV2:     a.V3ChecksumAsV2,
		HandoverOnly:       a.HandoverOnly,
		BreakFirstPreempt:  a.BreakFirstPreempt,
		HandoffAddresses:   len(a.VIPs) + len(a.ExcludedVIPs),
	}
}
