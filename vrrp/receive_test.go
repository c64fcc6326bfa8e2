package vrrp

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestAddressListCheck is RFC 3768 §7.1 for v2 (a non-owner's advertisement with other
// addresses is dropped, as keepalived 2.2.7 does) against RFC 5798 / RFC 9568 §7.1 for v3
// (counted and processed), seen through the timers: a dropped advertisement leaves the
// backup's Master_Down_Timer to run out, and a master keeps its mastership.
func TestAddressListCheck(t *testing.T) {
	other := func(c Config, prio uint8) *Advertisement {
		a := advertFor(c, prio)
		a.Addresses = []netip.Addr{vip3.Addr()}
		return a
	}
	for _, v := range []Version{Version2, Version3} {
		c := v3Config(100)
		if v == Version2 {
			c = v2Config(100)
		}
		t.Run(fmt.Sprintf("v%d backup", v), func(t *testing.T) {
			i := backupAt(t, c)
			before := i.Deadline()
			got := i.HandleAdvert(at(time.Second), other(c, 200), higher, nil)
			if v == Version2 {
				expect(t, "other addresses from priority 200", got, "")
				if i.Deadline() != before || i.Master().IsValid() {
					t.Errorf("dropped advert moved the deadline to %v / set master %v", i.Deadline().Sub(t0), i.Master())
				}
				i.HandleTimer(before, nil)
				if i.State() != StateMaster {
					t.Errorf("state %v after Master_Down_Timer, want MASTER", i.State())
				}
			} else {
				expect(t, "other addresses from priority 200", got, "Arm(Master_Down_Timer@4.609375s)")
			}
			if i.Counters().AddrListErr != 1 {
				t.Errorf("addr_list_err %d, want 1", i.Counters().AddrListErr)
			}
		})
		t.Run(fmt.Sprintf("v%d backup, owner's other addresses", v), func(t *testing.T) {
			i := backupAt(t, c)
			expect(t, "other addresses from priority 255", i.HandleAdvert(at(time.Second), other(c, PriorityOwner), higher, nil),
				"Arm(Master_Down_Timer@4.609375s)")
			if i.Master() != higher || i.Counters().AddrListErr != 1 {
				t.Errorf("master %v counters %+v", i.Master(), i.Counters())
			}
		})
		t.Run(fmt.Sprintf("v%d master", v), func(t *testing.T) {
			i, now := masterAt(t, c)
			i.HandleAdvert(now, other(c, 200), higher, nil)
			want := StateBackup
			if v == Version2 {
				want = StateMaster
			}
			if i.State() != want {
				t.Errorf("state %v after a higher priority with other addresses, want %v", i.State(), want)
			}
		})
	}
}

// TestAddressOwnerReceives: RFC 3768 §7.1 and RFC 5798 §7.1 have the address owner discard
// every advertisement; RFC 9568 erratum 8298 has it process them like any router, which is
// what keepalived 2.2.7 does in both versions (vrrp_state_master_rx) and the default here.
// Config.OwnerIgnoreAdverts restores the RFC 3768 / 5798 rule (keepalived >= 2.3.3's
// owner_ignore_adverts).
func TestAddressOwnerReceives(t *testing.T) {
	for _, v := range []Version{Version2, Version3} {
		c := v3Config(PriorityOwner)
		if v == Version2 {
			c = v2Config(PriorityOwner)
		}
		owner := func(t *testing.T, c Config) *Instance {
			i := mustInstance(t, c)
			i.Start(t0, nil)
			if i.State() != StateMaster {
				t.Fatalf("owner in %v after Start", i.State())
			}
			return i
		}
		t.Run(fmt.Sprintf("v%d default: another owner with a higher address wins", v), func(t *testing.T) {
			i := owner(t, c)
			expect(t, "255 from a higher address", i.HandleAdvert(at(time.Second), advertFor(c, PriorityOwner), higher, nil),
				"State(MASTER->BACKUP: equal priority from higher address) Remove[10.99.0.100/24 10.99.0.101/24] Arm(Master_Down_Timer@4.00390625s)")
		})
		t.Run(fmt.Sprintf("v%d default: a lower priority is answered", v), func(t *testing.T) {
			i := owner(t, c)
			expect(t, "lower priority", i.HandleAdvert(at(time.Second), advertFor(c, 100), higher, nil),
				"Send(255) Arm(Adver_Timer@2s)")
		})
		ignoring := c
		ignoring.OwnerIgnoreAdverts = true
		t.Run(fmt.Sprintf("v%d OwnerIgnoreAdverts: the owner discards everything", v), func(t *testing.T) {
			i := owner(t, ignoring)
			for _, p := range []uint8{PriorityOwner, 100, 0} {
				expect(t, fmt.Sprintf("priority %d", p), i.HandleAdvert(at(time.Second), advertFor(c, p), higher, nil), "")
			}
			if i.State() != StateMaster || i.Deadline() != at(time.Second) {
				t.Errorf("state %v deadline %v", i.State(), i.Deadline().Sub(t0))
			}
			if cs := i.Counters(); cs.AdvertRcvd != 0 || cs.PriZeroRcvd != 0 {
				t.Errorf("discarded adverts counted: %+v", cs)
			}
			// The version and authentication checks still come first and count.
			bad := advertFor(c, 100)
			bad.Version = 5 - v
			i.HandleAdvert(at(time.Second), bad, higher, nil)
			if i.Counters().VersionErr != 1 {
				t.Errorf("version error not counted: %+v", i.Counters())
			}
		})
		t.Run(fmt.Sprintf("v%d OwnerIgnoreAdverts: a non-owner is unaffected", v), func(t *testing.T) {
			n := ignoring
			n.Priority = 100
			i := backupAt(t, n)
			expect(t, "owner's advert", i.HandleAdvert(at(time.Second), advertFor(c, PriorityOwner), higher, nil),
				"Arm(Master_Down_Timer@4.609375s)")
		})
	}
}

// TestMasterLowerPriority: RFC 3768 §6.4.3 (and RFC 5798 as published) discard a lower
// priority in Master; RFC 9568 answers it at once. keepalived 2.2.7 answers in v2 and v3
// alike (vrrp_state_master_rx, unless lower_prio_no_advert / vrrp_strict), so that is the
// default for both; Config.LowerPrioNoAdvert gives the RFC 3768 behaviour.
func TestMasterLowerPriority(t *testing.T) {
	for _, v := range []Version{Version2, Version3} {
		c := v3Config(100)
		if v == Version2 {
			c = v2Config(100)
		}
		t.Run(fmt.Sprintf("v%d default answers at once", v), func(t *testing.T) {
			i, now := masterAt(t, c)
			expect(t, "lower", i.HandleAdvert(now, advertFor(c, 50), higher, nil), "Send(100) Arm(Adver_Timer@4.609375s)")
			expect(t, "equal, lower address", i.HandleAdvert(now, advertFor(c, 100), lowerIP, nil), "Send(100) Arm(Adver_Timer@4.609375s)")
		})
		quiet := c
		quiet.LowerPrioNoAdvert = true
		t.Run(fmt.Sprintf("v%d LowerPrioNoAdvert discards", v), func(t *testing.T) {
			i, now := masterAt(t, quiet)
			before := i.Deadline()
			expect(t, "lower", i.HandleAdvert(now, advertFor(c, 50), higher, nil), "")
			expect(t, "equal, lower address", i.HandleAdvert(now, advertFor(c, 100), lowerIP, nil), "")
			if i.Deadline() != before || i.State() != StateMaster {
				t.Errorf("state %v deadline %v, want MASTER at %v", i.State(), i.Deadline().Sub(t0), before.Sub(t0))
			}
			// Priority 0 is still answered (RFC 3768 §6.4.3), and a higher one still wins.
			expect(t, "priority 0", i.HandleAdvert(now, advertFor(c, 0), higher, nil), "Send(100) Arm(Adver_Timer@4.609375s)")
			i.HandleAdvert(now, advertFor(c, 150), lowerIP, nil)
			if i.State() != StateBackup {
				t.Errorf("state %v after a higher priority, want BACKUP", i.State())
			}
		})
	}
}

// TestIPv6VIPsWithoutLinkLocal: RFC 5798 §5.2.9 / §6.1 want the first IPv6 address to be
// link-local, and RFC 9568 erratum 8300 has the receiver drop an advertisement whose first
// address is not. keepalived 2.2.7 only logs "should be link local" outside vrrp_strict
// and sends the list as configured (its captured v3 IPv6 advertisement carries
// fd00:99::100 alone), so vrrpd accepts such a configuration and such advertisements.
func TestIPv6VIPsWithoutLinkLocal(t *testing.T) {
	c := v3Config(100)
	c.Primary = netip.MustParseAddr("fe80::11")
	c.VIPs = []netip.Prefix{netip.MustParsePrefix("fd00:99::100/64")}
	if err := c.Validate(); err != nil {
		t.Fatalf("global-only IPv6 VIPs rejected: %v", err)
	}
	i := backupAt(t, c)
	expect(t, "advert with a global first address", i.HandleAdvert(at(time.Second), advertFor(c, 150), netip.MustParseAddr("fe80::12"), nil),
		"Arm(Master_Down_Timer@4.609375s)")
	if i.Counters().AdvertRcvd != 1 || i.Counters().AddrListErr != 0 {
		t.Errorf("counters %+v", i.Counters())
	}
}
