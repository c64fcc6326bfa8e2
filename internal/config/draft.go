package config

import (
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/keyword"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// This file is where keepalived's keywords land in a Draft and in Globals: the keyword
// table (package keyword) reads and checks each value, land puts it in the setting the
// entry names. keepalived.conf, YAML and a KeepalivedGroup's verbatim keywords all go
// through it. Below, setters for what Kubernetes mode reads from the group's status
// rather than from keywords.

// Globals are the host-wide settings an instance inherits: keepalived's global_defs, the
// defaults section of the YAML file, or a KeepalivedGroup's spec.verbatimConfig. Build
// one with DefaultGlobals and SetKeyword.
type Globals struct {
	routerID       string
	version        vrrp.Version
	advertInterval time.Duration
	garp           GARP
	mcast4, mcast6 netip.Addr
	// strict is vrrp_strict: every instance that does not say otherwise (strict_mode)
	// follows keepalived's strict rules.
	strict bool
	// lowerPrioNoAdvert (vrrp_lower_prio_no_advert), v3ChecksumAsV2 (v3_checksum_as_v2)
	// and ownerIgnoreAdverts (YAML only) are the defaults of the instance settings.
	lowerPrioNoAdvert  bool
	v3ChecksumAsV2     bool
	ownerIgnoreAdverts bool
	// downTimerAdverts is vrrp_down_timer_adverts, 0 when unset.
	downTimerAdverts int
	// scripts are the vrrp_script blocks by name (behind a pointer: Globals stay
	// comparable), and scriptSettings script_user and enable_script_security (scripts.go).
	scripts        *scriptTable
	scriptSettings ScriptSettings
	scriptUserPos  Position // where script_user is set, for its error
	// host is net_namespace and the static blocks (routes.go), nil when none is set.
	host *hostSettings
	// trk are the track_file blocks and sync groups (tracking.go).
	trk *trackTables
}

// DefaultGlobals returns keepalived's built-in global settings (VRRPv2, 1s, the standard
// multicast groups, keepalived's announcement defaults).
func DefaultGlobals() Globals {
	return Globals{
		version:        DefaultVersion,
		advertInterval: DefaultAdvertInterval,
		garp:           DefaultGARP(),
		mcast4:         vrrp.MulticastIPv4,
		mcast6:         vrrp.MulticastIPv6,
	}
}

// SetVersion sets the VRRP version of instances that name none (keepalived.conf's
// global vrrp_version; Kubernetes mode uses the CRD's default, 3).
func (g *Globals) SetVersion(v vrrp.Version) { g.version = v }

// draftVIP is a VIP with where it was written.
type draftVIP struct {
	VIP
	pos Position
}

// Draft is an instance as written, before defaults and validation. The two file formats
// and Kubernetes mode all fill one (the parsers directly, Kubernetes mode through the
// setters in draft.go) and pass it to Resolve, so all follow exactly the same rules.
// Pointer and zero fields mean "not set".
type Draft struct {
	pos          Position
	name         string
	iface        string
	vrid         *uint8
	priority     *uint8
	version      vrrp.Version
	versionPos   Position
	advert       time.Duration
	advertPos    Position
	preempt      *bool
	preemptPos   Position
	preemptDelay time.Duration
	delayPos     Position
	accept       *bool
	state        string
	statePos     Position
	strict       *bool
	// lowerPrioNoAdvert, v3ChecksumAsV2 and ownerIgnoreAdverts are nil when unset: the
	// global default applies.
	lowerPrioNoAdvert  *bool
	lpnaPos            Position
	v3ChecksumAsV2     *bool
	ownerIgnoreAdverts *bool
	handoverOnly       bool
	breakFirstPreempt  bool
	src                netip.Addr
	srcPos             Position
	peers              []draftVIP // Prefix holds the single address
	auth               *vrrp.AuthType
	authPass           string
	authPos            Position
	vips               []draftVIP
	evips              []draftVIP
	mcast              netip.Addr
	mcastPos           Position
	garp               garpDraft
	downTimerAdverts   int // 0: unset
	downTimerPos       Position
	vmac               vmacDraft
	tracks             []trackRef // track_script entries (scripts.go)
	notify             Notify
	routing            routeDraft // virtual_routes, virtual_rules, track_src_ip (routes.go)
	// ifTracks, fileTracks and dontTrackPrimary: tracking.go.
	ifTracks         []ifTrackRef
	fileTracks       []fileTrackRef
	dontTrackPrimary bool
}

// garpDraft holds the per-instance announcement overrides.
type garpDraft struct {
	masterDelay         *time.Duration
	masterRepeat        *int
	masterRefresh       *time.Duration
	masterRefreshRepeat *int
}

func applyGARP(dst *GARP, d garpDraft) {
	if d.masterDelay != nil {
		dst.MasterDelay = *d.masterDelay
	}
	if d.masterRepeat != nil {
		dst.MasterRepeat = *d.masterRepeat
	}
	if d.masterRefresh != nil {
		dst.MasterRefresh = *d.masterRefresh
	}
	if d.masterRefreshRepeat != nil {
		dst.MasterRefreshRepeat = *d.masterRefreshRepeat
	}
}

// ErrUnknownKeyword is returned by SetKeyword for a keyword vrrpd does not implement.
var ErrUnknownKeyword = errors.New("keyword not implemented by vrrpd")

// SetKeyword applies one keepalived global_defs keyword with its values (the words after
// the keyword). It returns notes about values it adjusted or ignored, and an error for a
// bad value (then g is unchanged) or ErrUnknownKeyword. keepalived.conf's global_defs and
// a KeepalivedGroup's spec.verbatimConfig both go through it.
func (g *Globals) SetKeyword(key string, args []string) ([]string, error) {
	s := newStatement(key, args, Position{})
	err := g.set(s)
	return s.Notes, err
}

func (g *Globals) set(s *statement) error { return setKeyword(g, keyword.Global, s, (*Globals).land) }

// setKeyword reads s through the keyword table and lands a good value in a copy of *dst
// that then replaces it: a bad value changes nothing.
func setKeyword[T any](dst *T, b keyword.Block, s *statement, land func(*T, keyword.Field, keyword.Parsed, *statement) bool) error {
	v, f, err := read(b, s)
	if err != nil {
		return err
	}
	n := *dst
	if !land(&n, f, v, s) {
		return ErrUnknownKeyword
	}
	*dst = n
	return nil
}

// read reads statement s of block b through the keyword table: the value and the
// setting it lands in, or ErrUnknownKeyword for a keyword vrrpd does not apply.
func read(b keyword.Block, s *statement) (keyword.Parsed, keyword.Field, error) {
	k, ok := keyword.Lookup(b, s.Key)
	if !ok || k.Value == nil || k.Field == keyword.FieldNone {
		return keyword.Parsed{}, 0, ErrUnknownKeyword
	}
	v, err := k.Value.Read(&s.Statement)
	return v, k.Field, err
}

// land puts a global keyword's value in its setting; false for a setting Globals do not
// have.
func (g *Globals) land(f keyword.Field, v keyword.Parsed, _ *statement) bool {
	switch f {
	case keyword.FieldRouterID:
		g.routerID = v.Text
	case keyword.FieldVersion:
		g.version = vrrp.Version(v.Uint)
	case keyword.FieldGARPMasterDelay:
		g.garp.MasterDelay = v.Duration
	case keyword.FieldGARPMasterRepeat:
		g.garp.MasterRepeat = v.Int
	case keyword.FieldGARPMasterRefresh:
		g.garp.MasterRefresh = v.Duration
	case keyword.FieldGARPMasterRefreshRepeat:
		g.garp.MasterRefreshRepeat = v.Int
	case keyword.FieldGARPInterval:
		g.garp.Interval = v.Duration
	case keyword.FieldGNAInterval:
		g.garp.NAInterval = v.Duration
	case keyword.FieldMulticastGroup4:
		g.mcast4 = v.Addr
	case keyword.FieldMulticastGroup6:
		g.mcast6 = v.Addr
	case keyword.FieldStrict:
		g.strict = v.Bool
	case keyword.FieldLowerPrioNoAdvert:
		g.lowerPrioNoAdvert = v.Bool
	case keyword.FieldV3ChecksumAsV2:
		g.v3ChecksumAsV2 = v.Bool
	case keyword.FieldDownTimerAdverts:
		g.downTimerAdverts = int(v.Uint)
	default:
		return false
	}
	return true
}

// NewDraft starts an instance called name, defined at pos: every warning and error about
// it names both.
func NewDraft(name string, pos Position) *Draft {
	return &Draft{name: name, pos: pos}
}

// Clone returns a copy of d called name, for one source entry that becomes several
// instances (Kubernetes mode's one virtual router per address family).
func (d *Draft) Clone(name string) *Draft {
	c := *d
	c.name = name
	c.peers = slices.Clone(d.peers)
	c.vips = slices.Clone(d.vips)
	c.evips = slices.Clone(d.evips)
	c.tracks = slices.Clone(d.tracks)
	c.routing = d.routing.clone()
	return &c
}

// SetKeyword applies one keepalived vrrp_instance keyword that takes no block, with its
// values (the words after the keyword). It returns notes about values it adjusted or
// ignored, and an error for a bad value (then d is unchanged) or ErrUnknownKeyword.
// keepalived.conf's vrrp_instance and a Service's verbatim keywords both go through it.
func (d *Draft) SetKeyword(key string, args []string) ([]string, error) {
	s := newStatement(key, args, d.pos)
	err := d.set(s)
	return s.Notes, err
}

func (d *Draft) set(s *statement) error { return setKeyword(d, keyword.Instance, s, (*Draft).land) }

// land puts an instance keyword's value in its setting, with where it was written for
// the settings whose later warnings name it; false for a setting a Draft does not have.
func (d *Draft) land(f keyword.Field, v keyword.Parsed, s *statement) bool {
	b := v.Bool
	switch f {
	case keyword.FieldState:
		d.state, d.statePos = v.Text, s.pos
	case keyword.FieldInterface:
		d.iface = v.Text
	case keyword.FieldVRID:
		id := uint8(v.Uint)
		d.vrid = &id
	case keyword.FieldPriority:
		p := uint8(v.Uint)
		d.priority = &p
	case keyword.FieldAdvertInterval:
		d.advert, d.advertPos = v.Duration, s.pos
	case keyword.FieldVersion:
		d.version, d.versionPos = vrrp.Version(v.Uint), s.pos
	case keyword.FieldPreempt:
		d.preempt, d.preemptPos = &b, s.pos
	case keyword.FieldPreemptDelay:
		d.preemptDelay, d.delayPos = v.Duration, s.pos
	case keyword.FieldAccept:
		d.accept = &b
	case keyword.FieldStrict:
		d.strict = &b
	case keyword.FieldLowerPrioNoAdvert:
		d.lowerPrioNoAdvert, d.lpnaPos = &b, s.pos
	case keyword.FieldV3ChecksumAsV2:
		d.v3ChecksumAsV2 = &b
	case keyword.FieldSource:
		d.src, d.srcPos = v.Addr, s.pos
	case keyword.FieldMulticastGroup:
		d.mcast, d.mcastPos = v.Addr, s.pos
	case keyword.FieldGARPMasterDelay:
		d.garp.masterDelay = &v.Duration
	case keyword.FieldGARPMasterRepeat:
		d.garp.masterRepeat = &v.Int
	case keyword.FieldGARPMasterRefresh:
		d.garp.masterRefresh = &v.Duration
	case keyword.FieldGARPMasterRefreshRepeat:
		d.garp.masterRefreshRepeat = &v.Int
	case keyword.FieldDownTimerAdverts:
		d.downTimerAdverts, d.downTimerPos = int(v.Uint), s.pos
	case keyword.FieldVMAC:
		s.useVMAC(&d.vmac)
	case keyword.FieldVMACXmitBase:
		d.vmac.xmitBase = true
	default:
		return false
	}
	return true
}

// isKnownInstanceKeyword reports whether SetKeyword implements k.
func isKnownInstanceKeyword(k string) bool {
	e, ok := keyword.Lookup(keyword.Instance, k)
	return ok && e.Value != nil && e.Field != keyword.FieldNone
}

// Setters for what Kubernetes mode takes from the group's status. Each sets what the
// keepalived keyword of the same meaning sets.

// SetInterface sets the interface (interface).
func (d *Draft) SetInterface(name string) { d.iface = name }

// SetVRID sets the virtual router ID (virtual_router_id).
func (d *Draft) SetVRID(id uint8) { d.vrid = &id }

// SetPriority sets the priority (priority).
func (d *Draft) SetPriority(p uint8) { d.priority = &p }

// SetState sets the initial state, StateMaster or StateBackup (state).
func (d *Draft) SetState(s string) { d.state = s }

// SetVersion sets the VRRP version (version).
func (d *Draft) SetVersion(v vrrp.Version) { d.version = v }

// SetAdvertInterval sets the advertisement interval (advert_int); Resolve rounds it to
// what the version carries.
func (d *Draft) SetAdvertInterval(i time.Duration) { d.advert = i }

// SetV3ChecksumAsV2 sets the VRRPv3 IPv4 checksum form: on, without the pseudo-header
// as RFC 9568 says (v3_checksum_as_v2).
func (d *Draft) SetV3ChecksumAsV2(on bool) { d.v3ChecksumAsV2 = &on }

// SetHandoverOnly makes the instance take over only on a master's handover (no
// keyword: Instance.HandoverOnly).
func (d *Draft) SetHandoverOnly(on bool) { d.handoverOnly = on }

// SetBreakFirstPreempt makes every preemption break before it makes (no keyword:
// Instance.BreakFirstPreempt).
func (d *Draft) SetBreakFirstPreempt(on bool) { d.breakFirstPreempt = on }

// SetPreempt sets preemption (preempt / nopreempt).
func (d *Draft) SetPreempt(on bool) { d.preempt = &on }

// SetAuthPass asks for VRRPv2 simple password authentication with pass (authentication
// { auth_type PASS; auth_pass ... }). what names the password in the note returned when
// it is longer than VRRPv2 carries and is truncated, as keepalived does.
func (d *Draft) SetAuthPass(pass, what string) (note string) {
	t := vrrp.AuthSimple
	d.auth = &t
	d.authPass, note = truncateAuthPass(pass, what)
	return note
}

// AddVIP adds a virtual address (a virtual_ipaddress line).
func (d *Draft) AddVIP(v VIP) { d.vips = append(d.vips, draftVIP{VIP: v, pos: d.pos}) }

// SetUnicast sets the unicast source and peers (unicast_src_ip, unicast_peer).
func (d *Draft) SetUnicast(src netip.Addr, peers []netip.Addr) {
	d.src = src
	d.peers = d.peers[:0]
	for _, p := range peers {
		d.peers = append(d.peers, draftVIP{VIP: VIP{Prefix: netip.PrefixFrom(p, p.BitLen())}, pos: d.pos})
	}
}

// MulticastGroup is the instance's own multicast group (mcast_dst_ip), invalid if unset.
func (d *Draft) MulticastGroup() netip.Addr { return d.mcast }

// SetMulticastGroup sets (or, with the zero Addr, clears) the instance's own multicast
// group (mcast_dst_ip).
func (d *Draft) SetMulticastGroup(a netip.Addr) { d.mcast = a }
