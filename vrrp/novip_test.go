package vrrp

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

// A VRRPv2 instance without addresses is valid, advertises a count of zero that only
// the NoAddresses codec accepts, and elects a master like any other; v3 still refuses.
func TestNoVIPsVersion2(t *testing.T) {
	src, dst := netip.MustParseAddr("10.99.0.2"), MulticastIPv4
	c := Config{Name: "n", VRID: 7, Version: Version2, Priority: 100, AdvertInterval: time.Second, Preempt: true, Primary: src}
	if err := c.Validate(); err != nil {
		t.Fatalf("v2 without VIPs: %v", err)
	}
	c3 := c
	c3.Version, c3.AdvertInterval = Version3, time.Second
	if err := c3.Validate(); err == nil {
		t.Fatal("v3 without VIPs accepted")
	}
	var a Advertisement
	c.AdvertisementFields(&a, 100)
	if _, err := a.AppendMarshal(nil, src, dst); !errors.Is(err, ErrNoAddresses) {
		t.Fatalf("AppendMarshal = %v, want ErrNoAddresses", err)
	}
	b, err := a.AppendMarshalNoAddresses(nil, src, dst)
	if err != nil || len(b) != HeaderLen+AuthDataLen || b[3] != 0 {
		t.Fatalf("AppendMarshalNoAddresses = %x, %v", b, err)
	}
	var got Advertisement
	if err := got.Unmarshal(b, src, dst); !errors.Is(err, ErrNoAddresses) {
		t.Fatalf("Unmarshal = %v, want ErrNoAddresses", err)
	}
	if err := got.UnmarshalNoAddresses(b, src, dst); err != nil || got.VRID != 7 || got.Priority != 100 || len(got.Addresses) != 0 {
		t.Fatalf("UnmarshalNoAddresses = %+v, %v", got, err)
	}
	a3 := Advertisement{Version: Version3, VRID: 7, Priority: 100, MaxAdvertInterval: 100}
	if _, err := a3.AppendMarshalNoAddresses(nil, src, dst); !errors.Is(err, ErrNoAddresses) {
		t.Fatalf("v3 AppendMarshalNoAddresses = %v, want ErrNoAddresses", err)
	}

	// A backup hearing a higher priority stays backup; without it, it takes over.
	i, err := NewInstance(c)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	i.Start(now, nil)
	got.Priority = 200
	i.HandleAdvert(now.Add(time.Second), &got, netip.MustParseAddr("10.99.0.3"), nil)
	i.HandleTimer(now.Add(3500*time.Millisecond), nil)
	if i.State() != StateBackup || i.Master() != netip.MustParseAddr("10.99.0.3") {
		t.Fatalf("after a higher advert: %v, master %v", i.State(), i.Master())
	}
	i.HandleTimer(now.Add(10*time.Second), nil)
	if i.State() != StateMaster {
		t.Fatalf("silent master: %v, want MASTER", i.State())
	}
}
