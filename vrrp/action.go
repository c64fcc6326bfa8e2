package vrrp

import (
	"net/netip"
	"time"
)

// ActionKind says what an Action asks the caller to do.
type ActionKind uint8

// The kinds of Action.
//
// Every input appends its actions in this fixed order, skipping those that do not apply:
//
//	SendAdvert (becoming Master), StateChange, SendAdvert (priority 0 when leaving Master),
//	RemoveVIPs, AddVIPs, SendAdvert, Announce, ArmTimer or StopTimer
//
// The sequences that occur:
//
//	become Master:        SendAdvert, StateChange, AddVIPs, Announce, ArmTimer(Adver_Timer)
//	become Backup:        StateChange, ArmTimer(Master_Down_Timer)
//	Master -> Backup:     StateChange, RemoveVIPs, ArmTimer(Master_Down_Timer)
//	Master shutdown:      StateChange, SendAdvert(priority 0), RemoveVIPs, StopTimer
//	Master -> Fault:      StateChange, SendAdvert(priority 0), RemoveVIPs, StopTimer
//	Backup -> Init/Fault: StateChange, StopTimer
//	Adver_Timer fires:    SendAdvert, ArmTimer(Adver_Timer)
//	advert accepted in Backup:   ArmTimer(Master_Down_Timer)
//	priority-0 or lower advert in Master: SendAdvert, ArmTimer(Adver_Timer)
//	VIPs changed in Master: RemoveVIPs (the removed ones), AddVIPs (the new ones),
//	  SendAdvert, Announce (the new ones), ArmTimer
//	restart (Reconfigure of VRID, version or family): the shutdown sequence of the old
//	  state, then the startup sequence
//
// Leaving Master sends the priority-0 advertisement before the VIPs go, as keepalived does,
// so the backups start their Skew_Time takeover while this router still answers.
//
// Becoming Master sends the first advertisement before anything else, as RFC 5798 §6.4.1
// and §6.4.2 order it and keepalived 2.2.7 does (vrrp_state_master_tx): the other backups'
// Master_Down_Timers may run out a few milliseconds after ours (Skew_Time differs by
// Master_Adver_Interval/256 per priority step), and only the advertisement stops them. A
// caller carrying the actions out in order thus puts it on the wire before it logs the
// transition, publishes it, or adds the addresses (which may write and sync a crash
// record): everything that can block comes after it.
const (
	// ActionStateChange reports a transition From -> To, with a Reason.
	ActionStateChange ActionKind = iota + 1
	// ActionSendAdvert asks for one advertisement with Priority and the instance's VIPs,
	// from Config.Primary, with Config.AdvertInterval.
	ActionSendAdvert
	// ActionAddVIPs asks for the addresses in VIPs to be added to the interface.
	ActionAddVIPs
	// ActionRemoveVIPs asks for the addresses in VIPs to be removed from the interface.
	ActionRemoveVIPs
	// ActionAnnounce follows an AddVIPs: the addresses in VIPs are new on this router
	// (every VIP on becoming Master, the added ones when Reconfigure gives a Master new
	// VIPs), and the LAN should hear it through gratuitous ARP (IPv4) or unsolicited
	// neighbour advertisements (IPv6). VIPs is the least to announce; how much and how
	// often is the caller's policy: vrrpd announces all of the instance's addresses,
	// excluded ones included, and restarts its keepalived garp_* schedule.
	ActionAnnounce
	// ActionArmTimer asks for HandleTimer to be called at At (replacing any earlier
	// deadline). Timer says which RFC timer it is.
	ActionArmTimer
	// ActionStopTimer cancels the timer: HandleTimer is not due until the next ArmTimer.
	ActionStopTimer
)

// String names the kind.
func (k ActionKind) String() string {
	switch k {
	case ActionStateChange:
		return "StateChange"
	case ActionSendAdvert:
		return "SendAdvert"
	case ActionAddVIPs:
		return "AddVIPs"
	case ActionRemoveVIPs:
		return "RemoveVIPs"
	case ActionAnnounce:
		return "Announce"
	case ActionArmTimer:
		return "ArmTimer"
	case ActionStopTimer:
		return "StopTimer"
	}
	return "unknown"
}

// An Action is one thing the caller must do on behalf of an Instance. Only the fields of its
// Kind are set.
type Action struct {
	Kind ActionKind

	// StateChange
	From, To State
	Reason   Reason

	// SendAdvert: the priority to advertise (0 when giving up mastership).
	Priority uint8

	// AddVIPs, RemoveVIPs, Announce: the addresses concerned. The slice may share memory
	// with the instance's configuration; the caller must not modify it.
	VIPs []netip.Prefix

	// ArmTimer: when HandleTimer is due and which timer that is.
	At    time.Time
	Timer TimerKind
}
