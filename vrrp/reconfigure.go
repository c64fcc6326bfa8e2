package vrrp

import (
	"net/netip"
	"time"
)

// Reconfigure applies a new configuration. A change of VRID, version or address family
// restarts the instance (Shutdown, then Start unless it was in Init). Anything else is
// applied in place: a Master removes the VIPs that went, adds and announces the new ones,
// and advertises at once if anything it advertises changed; a changed Config.Priority
// replaces the effective priority; a Backup that becomes the address owner takes over.
// An invalid configuration is an error and changes nothing.
func (i *Instance) Reconfigure(now time.Time, c Config, out []Action) ([]Action, error) {
	if err := c.Validate(); err != nil {
		return out, err
	}
	old := i.cfg
	if i.state == StateMaster && old.HandoverOnly && !c.HandoverOnly && c.Version != old.Version &&
		c.VRID == old.VRID && c.Primary.Is4() == old.Primary.Is4() {
		// The end of a takeover that moves to another version: the backups switch
		// together (they follow the same change), and a restart here would leave the
		// VIPs unserved for a whole Master_Down_Interval. The Master stays Master and
		// advertises in the new version at once.
		return i.keepMasterNewVersion(now, c, out), nil
	}
	if c.VRID != old.VRID || c.Version != old.Version || c.Primary.Is4() != old.Primary.Is4() {
		was := i.state
		out = i.Shutdown(now, out)
		i.setConfig(c)
		i.afterHandover = old.HandoverOnly && !c.HandoverOnly
		i.priority = c.Priority
		i.masterAdverInterval = c.AdvertInterval
		if was == StateInit {
			return out, nil
		}
		if i.fault {
			i.state = StateFault
			return append(out, Action{Kind: ActionStateChange, From: StateInit, To: StateFault, Reason: i.faultReason}), nil
		}
		return i.startup(now, StateInit, ReasonReconfigured, out), nil
	}

	i.setConfig(c)
	if c.Priority != old.Priority {
		i.priority = c.Priority
	}
	if c.PreemptDelay == 0 {
		i.preemptAt = time.Time{}
	}
	switch i.state {
	case StateMaster:
		var removed, added []netip.Prefix
		out, removed, added = i.moveVIPs(old.VIPs, i.cfg.VIPs, out)
		changed := len(removed) > 0 || len(added) > 0 || c.Priority != old.Priority ||
			c.AdvertInterval != old.AdvertInterval || c.AuthType != old.AuthType ||
			c.AuthPass != old.AuthPass || c.Primary != old.Primary
		if changed {
			i.masterPriority = i.priority
			i.master = c.Primary
			out = i.send(i.priority, out)
		}
		if len(added) > 0 {
			out = append(out, Action{Kind: ActionAnnounce, VIPs: added})
		}
		if changed {
			out = i.armAdvert(now, out)
		}
	case StateBackup:
		switch {
		case c.HandoverOnly && !old.HandoverOnly:
			out = i.stop(out)
		case old.HandoverOnly && !c.HandoverOnly:
			i.afterHandover = true
			if i.timer == TimerNone {
				// Silence counts again, from now.
				out = i.arm(TimerMasterDown, now.Add(i.MasterDownInterval()), out)
			}
		}
		if c.Version == Version2 || i.master == (netip.Addr{}) {
			// v2 always runs on its own interval; a v3 backup that has heard no
			// master yet has nothing to adopt.
			i.masterAdverInterval = c.AdvertInterval
		}
		if i.priority == PriorityOwner {
			return i.becomeMaster(now, StateBackup, ReasonPriorityChanged, out), nil
		}
	}
	return out, nil
}

// moveVIPs is a Master's change of VIPs from was to now: those that went are removed,
// those that came added (and returned, to be announced). None moves while the VIPs are
// pending: none was added yet, and the Adver_Timer adds the new list.
func (i *Instance) moveVIPs(was, now []netip.Prefix, out []Action) (_ []Action, removed, added []netip.Prefix) {
	if i.pendingVIPs {
		return out, nil, nil
	}
	removed, added = prefixesNotIn(was, now), prefixesNotIn(now, was)
	if len(removed) > 0 {
		out = append(out, Action{Kind: ActionRemoveVIPs, VIPs: removed})
	}
	if len(added) > 0 {
		out = append(out, Action{Kind: ActionAddVIPs, VIPs: added})
	}
	return out, removed, added
}

// prefixesNotIn returns the prefixes of a that are not in b, or nil.
func prefixesNotIn(a, b []netip.Prefix) []netip.Prefix {
	var r []netip.Prefix
	for _, p := range a {
		found := false
		for _, q := range b {
			if p == q {
				found = true
				break
			}
		}
		if !found {
			r = append(r, p)
		}
	}
	return r
}

// keepMasterNewVersion applies c, which differs from the running configuration in its
// version (and possibly anything but VRID and family), to a Master without leaving
// Master: VIPs that went are removed, new ones added and announced, and the first
// advertisement of the new version leaves at once.
func (i *Instance) keepMasterNewVersion(now time.Time, c Config, out []Action) []Action {
	old := i.cfg
	i.setConfig(c)
	i.priority = c.Priority
	i.masterAdverInterval = c.AdvertInterval
	i.masterPriority = i.priority
	i.master = c.Primary
	i.preemptAt = time.Time{}
	out, _, added := i.moveVIPs(old.VIPs, c.VIPs, out)
	out = i.send(i.priority, out)
	if len(added) > 0 {
		out = append(out, Action{Kind: ActionAnnounce, VIPs: added})
	}
	return i.armAdvert(now, out)
}
