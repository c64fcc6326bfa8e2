package vrrp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Protocol limits of the configuration.
const (
	// PriorityOwner is the priority of the router that owns the virtual addresses: it
	// becomes Master at once on startup (RFC 5798 §6.4.1).
	PriorityOwner = 255
	// PriorityDefault is the RFC's default priority for a backup (RFC 5798 §6.1).
	PriorityDefault = 100

	// DefaultAdvertInterval is the RFC's default Advertisement_Interval (RFC 5798 §6.1).
	DefaultAdvertInterval = time.Second

	// MaxAdvertIntervalV3 is the largest v3 interval: 4095 centiseconds (12 bits).
	MaxAdvertIntervalV3 = 4095 * 10 * time.Millisecond
	// MaxAdvertIntervalV2 is the largest v2 interval: 255 seconds (8 bits).
	MaxAdvertIntervalV2 = 255 * time.Second
	// MaxPreemptDelay is keepalived's upper bound for preempt_delay.
	MaxPreemptDelay = 1000 * time.Second
	// MaxVIPs is the most addresses one advertisement can carry (Count IPvX Addr is a byte).
	MaxVIPs = 255
)

// Config is the configuration of one virtual router, with the parameters of RFC 5798 §6.1
// and keepalived's extensions. The zero value is not valid; see Validate.
type Config struct {
	// Name identifies the instance in logs and metrics (keepalived's vrrp_instance name).
	Name string
	// VRID is the Virtual Router Identifier, 1..255.
	VRID uint8
	// Version is Version3 (IPv4 or IPv6) or Version2 (IPv4 only).
	Version Version
	// Priority is this router's priority, 1..255; 255 means it owns the addresses.
	Priority uint8
	// AdvertInterval is Advertisement_Interval: for v3 a multiple of 10ms from 10ms to
	// 40.95s, for v2 whole seconds from 1s to 255s.
	AdvertInterval time.Duration
	// Preempt is Preempt_Mode: a higher-priority backup takes over from a lower-priority
	// master. keepalived's "nopreempt" is Preempt false.
	Preempt bool
	// PreemptDelay is keepalived's preempt_delay: after startup, after a fault clears, or
	// after first seeing a lower-priority master, this long passes before such a master is
	// preempted. Zero preempts at once. At most MaxPreemptDelay.
	PreemptDelay time.Duration
	// AcceptMode is Accept_Mode: a non-owner master accepts packets addressed to the VIPs.
	// The state machine only carries it. Configuration sources default it to true, as
	// keepalived without vrrp_strict does; nothing enforces false yet (the VIPs are local
	// addresses of the master, which accepts traffic to them either way).
	AcceptMode bool
	// OwnerIgnoreAdverts makes an address owner (effective priority 255) discard every
	// advertisement it receives, as RFC 3768 §7.1 and RFC 5798 §7.1 say (keepalived >=
	// 2.3.3's owner_ignore_adverts). The default, false, processes them as keepalived
	// 2.2.7 does and RFC 9568 with erratum 8298 says, so two owners of one VRID settle
	// on one master instead of both staying master.
	OwnerIgnoreAdverts bool
	// LowerPrioNoAdvert makes a Master discard an advertisement of lower priority (or
	// equal priority from a lower address), as RFC 3768 §6.4.3 and RFC 5798 §6.4.3 say
	// (keepalived's lower_prio_no_advert, implied by vrrp_strict). The default, false,
	// answers it at once as RFC 9568 §6.4.3 says and keepalived 2.2.7 does for v2 and v3,
	// so a lower-priority router that became master goes back to Backup without waiting
	// for the next Adver_Timer.
	LowerPrioNoAdvert bool
	// V3ChecksumAsV2 makes a v3 IPv4 router send its checksum without the pseudo-header,
	// as RFC 9568 §5.2.8 says (keepalived >= 2.2.8's v3_checksum_as_v2; FRR's "no vrrp
	// checksum-with-ipv4-pseudoheader"). The default, false, includes it as keepalived
	// 2.2.7 always does and FRR does by default. Receiving accepts both forms either way.
	// v2 and IPv6 have one form and ignore it.
	V3ChecksumAsV2 bool
	// HandoverOnly makes a Backup take over only when the master hands over (a
	// priority-0 advertisement, then Skew_Time), never when the master merely falls
	// silent: no Master_Down_Timer runs otherwise. It is for taking a virtual router
	// over from routers that share this router's address (keepalived-operator's pods on
	// the same host network, whose advertisements this router cannot hear): silence
	// from them proves nothing. Leaving it by Reconfigure arms the Master_Down_Timer; a
	// Master that leaves it with a change of version stays Master (see Reconfigure); and
	// a Backup that leaves it makes its first preemption break before make: it
	// advertises at once but adds the VIPs only after HandoffDelay, once the preempted
	// master has removed them.
	HandoverOnly bool
	// BreakFirstPreempt makes every preemption break before it makes, as the first one
	// after leaving HandoverOnly does: a Backup whose Master_Down_Timer runs out while a
	// lower-priority master is advertising sends its advertisement at once but adds the
	// VIPs HandoffDelay later, once that master has heard it and removed them. RFC 5798's
	// preemption (and keepalived's) makes before it breaks: both hold the VIPs until the
	// preempted master reacts, milliseconds on a quiet host, tens on a loaded one. The
	// Kubernetes mode turns it on: a node returning from a rolling upgrade or a reboot
	// takes its VIPs back without a moment on two nodes, at the price of HandoffDelay
	// without a holder at that planned move.
	BreakFirstPreempt bool
	// HandoffAddresses is how many addresses a master of this router holds and a
	// break-first takeover waits for the preempted master to remove (handoffWait): its
	// VIPs and the addresses beyond them that the daemon adds on MASTER without
	// advertising them (keepalived's virtual_ipaddress_excluded). Zero counts the VIPs.
	HandoffAddresses int
	// VIPs are the virtual addresses, all of one family (IPv4 only for v2), at most MaxVIPs,
	// without duplicates. The prefix length says how to add them to the interface.
	VIPs []netip.Prefix
	// Primary is this router's own address on the interface: the source of its
	// advertisements and the tie-break between equal priorities (RFC 5798 §6.4.3).
	// Same family as the VIPs.
	Primary netip.Addr
	// AuthType and AuthPass are the VRRPv2 authentication (keepalived's auth_type and
	// auth_pass): AuthNone, or AuthSimple with a password of 1 to 8 bytes. v3 has none.
	AuthType AuthType
	AuthPass string
	// DownTimerAdverts is how many advertisement intervals of silence make the master
	// down: Master_Down_Interval is DownTimerAdverts * Master_Adver_Interval + Skew_Time.
	// 0 is RFC 5798 §6.1's 3; keepalived's down_timer_adverts sets 1 to
	// MaxDownTimerAdverts (fewer: a faster takeover, and a false one on a lost packet).
	DownTimerAdverts int
}

// MaxDownTimerAdverts is keepalived's bound of down_timer_adverts.
const MaxDownTimerAdverts = 100

// Validate reports the first problem of the configuration, or nil.
func (c Config) Validate() error {
	if c.VRID == 0 {
		return errors.New("vrrp: virtual router ID must be 1..255, not 0")
	}
	if c.Version != Version2 && c.Version != Version3 {
		return fmt.Errorf("vrrp: version must be 2 or 3, not %d", c.Version)
	}
	if c.Priority == 0 {
		return errors.New("vrrp: priority must be 1..255; 0 is reserved for a master giving up")
	}
	if err := c.validateInterval(); err != nil {
		return err
	}
	if c.PreemptDelay < 0 || c.PreemptDelay > MaxPreemptDelay {
		return fmt.Errorf("vrrp: preempt delay %v out of range 0..%v", c.PreemptDelay, MaxPreemptDelay)
	}
	if c.DownTimerAdverts < 0 || c.DownTimerAdverts > MaxDownTimerAdverts {
		return fmt.Errorf("vrrp: down timer adverts %d out of range 0..%d", c.DownTimerAdverts, MaxDownTimerAdverts)
	}
	if err := c.validateAddresses(); err != nil {
		return err
	}
	return c.validateAuth()
}

func (c Config) validateInterval() error {
	iv := c.AdvertInterval
	switch c.Version {
	case Version3:
		if iv < 10*time.Millisecond || iv > MaxAdvertIntervalV3 {
			return fmt.Errorf("vrrp: v3 advertisement interval %v out of range 10ms..%v", iv, MaxAdvertIntervalV3)
		}
		if iv%(10*time.Millisecond) != 0 {
			return fmt.Errorf("vrrp: v3 advertisement interval %v is not a whole number of centiseconds", iv)
		}
	case Version2:
		if iv < time.Second || iv > MaxAdvertIntervalV2 {
			return fmt.Errorf("vrrp: v2 advertisement interval %v out of range 1s..%v", iv, MaxAdvertIntervalV2)
		}
		if iv%time.Second != 0 {
			return fmt.Errorf("vrrp: v2 advertisement interval %v is not a whole number of seconds", iv)
		}
	}
	return nil
}

func (c Config) validateAddresses() error {
	if !c.Primary.IsValid() || c.Primary.IsUnspecified() {
		return errors.New("vrrp: primary address is missing")
	}
	if c.Primary.Is4In6() {
		return fmt.Errorf("vrrp: primary address %v is IPv4-mapped IPv6; use the IPv4 form", c.Primary)
	}
	if len(c.VIPs) == 0 && c.Version != Version2 {
		// keepalived runs a VRRPv2 instance without addresses (novip.go); v3 forbids it.
		return errors.New("vrrp: no virtual addresses")
	}
	if len(c.VIPs) > MaxVIPs {
		return fmt.Errorf("vrrp: %d virtual addresses, at most %d fit in an advertisement", len(c.VIPs), MaxVIPs)
	}
	v4 := c.Primary.Is4()
	if c.Version == Version2 && !v4 {
		return fmt.Errorf("vrrp: VRRPv2 is IPv4 only, primary address %v is IPv6", c.Primary)
	}
	for i, p := range c.VIPs {
		if !p.IsValid() {
			return fmt.Errorf("vrrp: virtual address %d is invalid", i+1)
		}
		a := p.Addr()
		if a.Is4In6() {
			return fmt.Errorf("vrrp: virtual address %v is IPv4-mapped IPv6; use the IPv4 form", p)
		}
		if a.Is4() != v4 {
			return fmt.Errorf("vrrp: virtual address %v is not of the primary address's family (%v); use one instance per family", p, c.Primary)
		}
		if a.IsUnspecified() || a.IsMulticast() {
			return fmt.Errorf("vrrp: virtual address %v is not a unicast address", p)
		}
		if slices.ContainsFunc(c.VIPs[:i], func(q netip.Prefix) bool { return q.Addr() == a }) {
			return fmt.Errorf("vrrp: virtual address %v listed twice", a)
		}
	}
	return nil
}

func (c Config) validateAuth() error {
	switch {
	case c.Version == Version3 && (c.AuthType != AuthNone || c.AuthPass != ""):
		return errors.New("vrrp: VRRPv3 has no authentication; remove auth type and password")
	case c.AuthType == AuthNone && c.AuthPass != "":
		return errors.New("vrrp: password given without auth type simple (PASS)")
	case c.AuthType == AuthSimple && (len(c.AuthPass) == 0 || len(c.AuthPass) > 8):
		return fmt.Errorf("vrrp: simple password must be 1 to 8 bytes, got %d", len(c.AuthPass))
	case c.AuthType > AuthSimple:
		return fmt.Errorf("vrrp: auth type %d not supported (0 none, 1 simple password)", c.AuthType)
	}
	return nil
}

// AuthData is the password as it travels in a v2 advertisement: zero-padded to 8 bytes.
func (c Config) AuthData() [8]byte {
	var d [8]byte
	copy(d[:], c.AuthPass)
	return d
}

// SendChecksumForm is the checksum form the router's v3 IPv4 advertisements carry, for
// AppendMarshalForm.
func (c Config) SendChecksumForm() ChecksumForm {
	if c.V3ChecksumAsV2 {
		return ChecksumNoPseudoHeader
	}
	return ChecksumPseudoHeader
}

// AdvertisementFields fills the fields of a that come from the configuration (version,
// VRID, interval, authentication, addresses) and sets the priority, so a transport can
// build what an ActionSendAdvert asks for. It reuses the capacity of a.Addresses.
func (c Config) AdvertisementFields(a *Advertisement, priority uint8) {
	a.Version = c.Version
	a.Type = TypeAdvertisement
	a.VRID = c.VRID
	a.Priority = priority
	a.MaxAdvertInterval = 0
	a.AdvertIntervalSeconds = 0
	a.AuthType = AuthNone
	a.AuthData = [8]byte{}
	if c.Version == Version2 {
		a.AdvertIntervalSeconds = uint8(c.AdvertInterval / time.Second)
		a.AuthType = c.AuthType
		if c.AuthType == AuthSimple {
			a.AuthData = c.AuthData()
		}
	} else {
		a.MaxAdvertInterval = uint16(c.AdvertInterval / (10 * time.Millisecond))
	}
	a.Addresses = a.Addresses[:0]
	for _, p := range c.VIPs {
		a.Addresses = append(a.Addresses, p.Addr())
	}
}

// clone returns c with its own copy of VIPs, so the caller's slice can change freely.
func (c Config) clone() Config {
	c.VIPs = slices.Clone(c.VIPs)
	return c
}
