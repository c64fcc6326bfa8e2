package daemon

import (
	"slices"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// publish builds a fresh snapshot of every instance and socket and makes it the one
// Snapshot returns. It runs on state changes at once and, for counters, at most every
// publishInterval, so HTTP readers never touch the loop and the per-packet path never
// builds snapshots.
func (d *Daemon) publish(now time.Time) {
	d.dirty = false
	d.timers.Stop(d.publishK)
	s := &metrics.Snapshot{Instances: make([]metrics.Instance, 0, len(d.instances))}
	for _, in := range d.instances {
		mi := metrics.Instance{
			Name:            in.cfg.Name,
			Interface:       in.cfg.Interface,
			Family:          family(in.cfg.Family),
			VRID:            in.cfg.VRID,
			Version:         int(in.cfg.Version),
			State:           in.state,
			Priority:        in.cfg.Priority,
			BasePriority:    in.cfg.Priority,
			Transitions:     in.transitions,
			LastTransition:  in.lastTransition,
			PreexistingVIPs: in.preexisting,
			ReaddedVIPs:     in.readded,
			SendErrors:      in.sendErrors,
			VIPs:            in.vipPrefixes(),
		}
		mi.Tracked = d.trackedSnapshot(in)
		mi.Trackers = d.trackersSnapshot(in)
		mi.SyncGroup = in.cfg.SyncGroup
		if in.sm != nil {
			mi.State = in.sm.State()
			mi.Priority = in.sm.Priority()
			mi.Master = in.sm.Master()
			mi.Counters = in.sm.Counters()
		} else {
			mi.State = vrrp.StateFault
		}
		s.Instances = append(s.Instances, mi)
	}
	for _, c := range d.conns {
		s.Interfaces = append(s.Interfaces, metrics.Interface{
			Name:         c.key.ifname,
			Family:       family(c.key.fam),
			Received:     c.received,
			Unattributed: c.unattributed + c.dropped(),
			OtherVRID:    c.otherVRID,
		})
	}
	// Map order is random; a stable order keeps /status readable and diffable.
	slices.SortFunc(s.Interfaces, func(a, b metrics.Interface) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(string(a.Family), string(b.Family))
	})
	s.Scripts = d.scriptsSnapshot()
	s.SyncGroups = d.groupsSnapshot()
	d.snap.Store(s)
	d.health.Store(d.computeHealth())
	d.handHeld()
}

func family(f config.Family) metrics.Family {
	if f == config.IPv6 {
		return metrics.FamilyIPv6
	}
	return metrics.FamilyIPv4
}

// dropped is what the transport discarded before handing packets over.
func (c *conn) dropped() uint64 {
	if c.tc == nil {
		return c.droppedBefore
	}
	return c.droppedBefore + c.tc.Stats().Dropped
}
