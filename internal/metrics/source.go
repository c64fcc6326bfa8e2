package metrics

import (
	"net/netip"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// A Source gives the daemon's current view. Snapshot is called once per scrape and per
// status request, from HTTP goroutines, so it must be safe for concurrent use and cheap:
// typically it returns a value the daemon's loop republished after its last change.
// The returned Snapshot is only read.
type Source interface {
	Snapshot() Snapshot
}

// SourceFunc adapts a function to Source.
type SourceFunc func() Snapshot

// Snapshot calls f.
func (f SourceFunc) Snapshot() Snapshot { return f() }

// Snapshot is the daemon's state at one moment.
type Snapshot struct {
	Instances  []Instance
	Interfaces []Interface
	Scripts    []Script
	SyncGroups []SyncGroup
	// Conflicts are the VIPs of masters here that another host answers for too
	// (internal/conflict).
	Conflicts []VIPConflict
}

// VIPConflict is one VIP that a MASTER here holds and another host, by its MAC, answers
// for too: two holders.
type VIPConflict struct {
	Instance  string
	Interface string
	VRID      uint8
	VIP       netip.Addr
	MAC       string
	Since     time.Time // when it was confirmed
}

// SyncGroup is one vrrp_sync_group and the state its hooks last heard (INIT before any).
type SyncGroup struct {
	Name    string
	State   string
	Members []string
}

// Tracker is one tracked interface or file of an instance: Kind "interface" or "file",
// its status (UP, DOWN or UNTRACKED for an interface; OK or FAULT for a file), OK when it
// does not hold the instance in FAULT, the offset it adds to the priority now, and a
// file's value.
type Tracker struct {
	Kind    string
	Name    string
	Weight  int
	Reverse bool
	Status  string
	OK      bool
	Offset  int
	Value   int64
}

// Script is one vrrp_script: its status (track.Status's names: INIT, GOOD, FAILED,
// DISABLED) and its runs.
type Script struct {
	Name     string
	Status   string
	Runs     uint64
	Failures uint64 // runs that failed, timeouts included
	Timeouts uint64
}

// Tracked is one script an instance tracks, with the weight it applies (0: FAULT while
// failing) and the script's status.
type Tracked struct {
	Script  string
	Weight  int
	Reverse bool
	Status  string
}

// Instance is one virtual router as the daemon sees it.
type Instance struct {
	Name      string // keepalived's vrrp_instance name, e.g. "VI_1"
	Interface string
	Family    Family
	VRID      uint8
	Version   int // VRRP version, 2 or 3
	State     vrrp.State
	// Priority is the priority the instance advertises now; BasePriority the configured
	// one (they differ when tracking adjusts it, or 255 for an address owner).
	Priority     uint8
	BasePriority uint8
	// Master is the current master's address: our own source when we are master, the
	// last advertiser's when backup; invalid when unknown.
	Master netip.Addr
	// VIPs are the instance's virtual addresses, held or not.
	VIPs []netip.Prefix
	// Transitions counts every state change (including to and from FAULT) since start;
	// LastTransition is the time of the latest (zero if none).
	Transitions    uint64
	LastTransition time.Time
	Counters       vrrp.Counters
	// PreexistingVIPs counts the VIPs found on the interface already, without vrrpd having
	// added them, when the instance became master: left alone, never removed.
	// ReaddedVIPs counts the VIPs someone else took off while it was master, put back.
	PreexistingVIPs uint64
	ReaddedVIPs     uint64
	// SendErrors counts the advertisements the instance failed to send
	// (vrrpd_advert_send_errors_total).
	SendErrors uint64
	// Tracked are its track_script entries; Trackers its tracked interfaces and files;
	// SyncGroup the vrrp_sync_group it is in, if any.
	Tracked   []Tracked
	Trackers  []Tracker
	SyncGroup string
}

// Family is an instance's or socket's address family, as a label value.
type Family string

// The families, spelt as keepalived and iproute2 do.
const (
	FamilyIPv4 Family = "inet"
	FamilyIPv6 Family = "inet6"
)

// Interface holds per-socket counters: what arrived on one interface and family before it
// could be attributed to an instance.
type Interface struct {
	Name   string
	Family Family
	// Received counts every packet read from the socket.
	Received uint64
	// Unattributed counts packets dropped before reaching any instance: not decodable
	// far enough to read the VRID, unicast from a source that is not among the peers of
	// the instance its VRID names, or discarded by the transport itself (oversized,
	// broken IP header).
	Unattributed uint64
	// OtherVRID counts packets for a VRID that no running instance here has: other
	// virtual routers on the segment, normal on a shared wire, so apart from Unattributed.
	OtherVRID uint64
}
