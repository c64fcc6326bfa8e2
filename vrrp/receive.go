package vrrp

import (
	"net/netip"
	"time"
)

// HandleAdvert processes an advertisement received from src, already decoded and with its
// TTL checked by the transport (RFC 5798 §7.1 for the checks, §6.4 for what follows).
//
// The checks that depend on the configuration happen here and feed the counters as
// keepalived's do: a version other than ours (vrrpd_version_err), v2 authentication
// (invalid_authtype, authtype_mismatch, auth_failure), a v2 interval other than ours or a
// v3 interval of zero (advert_interval_err); such advertisements are dropped. With
// Config.OwnerIgnoreAdverts an address owner then drops everything, uncounted.
//
// The address list: RFC 3768 §7.1 has a v2 router drop an advertisement whose addresses
// differ from its own unless the sender is the owner (priority 255); keepalived 2.2.7 drops
// it too, counting addr_list_err before advert_rcvd when the count differs and after it
// when only the addresses do, and so does this. A v3 router counts the difference in
// addr_list_err and goes on (RFC 5798 / RFC 9568 §7.1 only ask to log it; keepalived
// >= 2.3.3). One that passes counts in advert_rcvd, and priority 0 in pri_zero_rcvd.
//
// Advertisements for another VRID are not this instance's and are ignored uncounted, as
// are those with our own Primary as source (our own, looped back) and those from the other
// address family (another virtual router; the daemon routes by VRID and family). An
// IPv4-mapped src is taken as IPv4, and zones are ignored. In Init nothing is
// processed; in Fault advertisements are checked and counted but change nothing.
func (i *Instance) HandleAdvert(now time.Time, a *Advertisement, src netip.Addr, out []Action) []Action {
	src = src.Unmap().WithZone("")
	if a == nil || i.state == StateInit || a.VRID != i.cfg.VRID || src == i.primary || src.Is4() != i.primary.Is4() {
		return out
	}
	if !i.check(a) {
		return out
	}
	if i.cfg.OwnerIgnoreAdverts && i.priority == PriorityOwner {
		// RFC 3768 §7.1 and RFC 5798 §7.1: the owner discards every advertisement.
		// keepalived >= 2.3.3's owner_ignore_adverts drops them uncounted, here too.
		return out
	}
	// RFC 3768 §7.1: a v2 advertisement with other addresses is dropped unless the
	// address owner sent it.
	dropList := i.cfg.Version == Version2 && a.Priority != PriorityOwner
	if dropList && len(a.Addresses) != len(i.cfg.VIPs) {
		i.counters.AddrListErr++
		return out
	}
	i.counters.AdvertRcvd++
	if !sameAddresses(a.Addresses, i.cfg.VIPs) {
		i.counters.AddrListErr++
		if dropList {
			return out
		}
	}
	if a.Priority == 0 {
		i.counters.PriZeroRcvd++
	}
	switch i.state {
	case StateBackup:
		return i.backupAdvert(now, a, src, out)
	case StateMaster:
		return i.masterAdvert(now, a, src, out)
	}
	return out
}

// check applies the configuration-dependent checks of RFC 5798 §7.1 and RFC 3768 §7.1,
// counting what fails.
func (i *Instance) check(a *Advertisement) bool {
	if a.Version != i.cfg.Version {
		i.counters.VersionErr++
		return false
	}
	if a.Type != TypeAdvertisement {
		i.counters.InvalidTypeRcvd++
		return false
	}
	if err := a.CheckAuth(i.cfg.AuthType, i.authData); err != nil {
		i.counters.CountError(err)
		return false
	}
	iv := a.Interval()
	if iv == 0 || (a.Version == Version2 && iv != i.cfg.AdvertInterval) {
		// A v3 interval of zero is malformed. RFC 3768 §7.1: a v2 router MUST discard
		// an advertisement whose interval differs from its own.
		i.counters.AdvertIntervalErr++
		return false
	}
	return true
}

// backupAdvert is RFC 5798 §6.4.2 on receiving an advertisement, with keepalived's
// preempt_delay.
func (i *Instance) backupAdvert(now time.Time, a *Advertisement, src netip.Addr, out []Action) []Action {
	if a.Priority == 0 {
		// The master is leaving: take over after Skew_Time, so the highest backup
		// goes first.
		return i.arm(TimerMasterDown, now.Add(i.SkewTime()), out)
	}
	delay := i.cfg.PreemptDelay > 0
	if i.cfg.Preempt && a.Priority < i.priority && !(delay && (i.preemptAt.IsZero() || now.Before(i.preemptAt))) {
		// Preempt: ignore a lower-priority master and let Master_Down_Timer run out.
		i.lowerHeardAt = now
		return out
	}
	if i.cfg.Version == Version3 {
		i.masterAdverInterval = a.Interval()
	}
	i.master = src
	i.masterPriority = a.Priority
	if delay {
		if a.Priority >= i.priority {
			i.preemptAt = time.Time{}
		} else if i.preemptAt.IsZero() {
			i.preemptAt = now.Add(i.cfg.PreemptDelay)
		}
	}
	if i.cfg.HandoverOnly {
		// A master is there: a Skew_Time armed by an earlier handover is off, and
		// its silence later arms nothing.
		return i.stop(out)
	}
	return i.arm(TimerMasterDown, now.Add(i.MasterDownInterval()), out)
}

// masterAdvert is RFC 5798 §6.4.3 on receiving an advertisement, as changed by RFC 9568
// (and as keepalived does, for v2 too), or as published with Config.LowerPrioNoAdvert.
func (i *Instance) masterAdvert(now time.Time, a *Advertisement, src netip.Addr, out []Action) []Action {
	higher := a.Priority > i.priority
	if higher || (a.Priority == i.priority && src.Compare(i.primary) > 0) {
		reason := ReasonPreempted
		if !higher {
			reason = ReasonHigherAddress
		}
		iv := i.cfg.AdvertInterval
		if i.cfg.Version == Version3 {
			iv = a.Interval()
		}
		out = i.leaveMaster(StateBackup, reason, false, out)
		i.masterAdverInterval = iv
		i.master = src
		i.masterPriority = a.Priority
		if i.cfg.HandoverOnly {
			return i.stop(out)
		}
		return i.arm(TimerMasterDown, now.Add(i.MasterDownInterval()), out)
	}
	// RFC 3768 / RFC 5798 §6.4.3 discard a lower priority (Config.LowerPrioNoAdvert):
	// Adver_Timer runs on. Priority 0 (RFC 5798) or a lower priority (RFC 9568;
	// keepalived 2.2.7 in v2 and v3 alike unless lower_prio_no_advert): advertise at once,
	// so a departing master's backups or a lower-priority router that thinks it is master
	// hear from us without waiting for Adver_Timer.
	quiet := a.Priority != 0 && i.cfg.LowerPrioNoAdvert
	if !quiet {
		out = i.send(i.priority, out)
	}
	if i.pendingVIPs {
		i.extendHandoff(now)
	}
	if quiet {
		return out
	}
	return i.armAdvert(now, out)
}

// sameAddresses reports whether addrs holds exactly the addresses of vips, in any order.
// vips has no duplicates (Validate), so equal lengths and every VIP present suffice.
func sameAddresses(addrs []netip.Addr, vips []netip.Prefix) bool {
	if len(addrs) != len(vips) {
		return false
	}
	for _, p := range vips {
		found := false
		for _, a := range addrs {
			if a == p.Addr() {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
