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
		removed := prefixesNotIn(old.VIPs, i.cfg.VIPs)
		added := prefixesNotIn(i.cfg.VIPs, old.VIPs)
		if i.pendingVIPs {
			removed, added = nil, nil // none added yet; the Adver_Timer adds the new list
		}
		if len(removed) > 0 {
			out = append(out, Action{Kind: ActionRemoveVIPs, VIPs: removed})
		}
		if len(added) > 0 {
			out = append(out, Action{Kind: ActionAddVIPs, VIPs: added})
		}
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
	removed := prefixesNotIn(old.VIPs, c.VIPs)
	added := prefixesNotIn(c.VIPs, old.VIPs)
	if i.pendingVIPs {
		removed, added = nil, nil // none added yet; the Adver_Timer adds the new list
	}
	if len(removed) > 0 {
		out = append(out, Action{Kind: ActionRemoveVIPs, VIPs: removed})
	}
	if len(added) > 0 {
		out = append(out, Action{Kind: ActionAddVIPs, VIPs: added})
	}
	out = i.send(i.priority, out)
	if len(added) > 0 {
		out = append(out, Action{Kind: ActionAnnounce, VIPs: added})
	}
	return i.armAdvert(now, out)
}
