package vrrp

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	v6 := v3Config(100)
	v6.Primary = netip.MustParseAddr("fe80::1")
	v6.VIPs = []netip.Prefix{netip.MustParsePrefix("fd00:99::100/64")}

	tests := []struct {
		name   string
		mutate func(c *Config)
		base   Config
		err    string // substring; empty means valid
	}{
		{"v3 IPv4", nil, v3Config(100), ""},
		{"v3 IPv6", nil, v6, ""},
		{"v2 PASS", nil, v2Config(100), ""},
		{"owner", func(c *Config) { c.Priority = 255 }, v3Config(100), ""},
		{"10ms", func(c *Config) { c.AdvertInterval = 10 * time.Millisecond }, v3Config(100), ""},
		{"40.95s", func(c *Config) { c.AdvertInterval = MaxAdvertIntervalV3 }, v3Config(100), ""},
		{"VRID 0", func(c *Config) { c.VRID = 0 }, v3Config(100), "virtual router ID"},
		{"version 0", func(c *Config) { c.Version = 0 }, v3Config(100), "version must be 2 or 3"},
		{"priority 0", func(c *Config) { c.Priority = 0 }, v3Config(100), "priority"},
		{"v3 interval 5ms", func(c *Config) { c.AdvertInterval = 5 * time.Millisecond }, v3Config(100), "out of range"},
		{"v3 interval 15ms", func(c *Config) { c.AdvertInterval = 15 * time.Millisecond }, v3Config(100), "centiseconds"},
		{"v3 interval 41s", func(c *Config) { c.AdvertInterval = 41 * time.Second }, v3Config(100), "out of range"},
		{"v2 interval 1.5s", func(c *Config) { c.AdvertInterval = 1500 * time.Millisecond }, v2Config(100), "whole number of seconds"},
		{"v2 interval 256s", func(c *Config) { c.AdvertInterval = 256 * time.Second }, v2Config(100), "out of range"},
		{"negative preempt delay", func(c *Config) { c.PreemptDelay = -1 }, v3Config(100), "preempt delay"},
		{"preempt delay too long", func(c *Config) { c.PreemptDelay = MaxPreemptDelay + 1 }, v3Config(100), "preempt delay"},
		{"no primary", func(c *Config) { c.Primary = netip.Addr{} }, v3Config(100), "primary address is missing"},
		{"mapped primary", func(c *Config) { c.Primary = netip.MustParseAddr("::ffff:10.99.0.2") }, v3Config(100), "IPv4-mapped"},
		{"no VIPs", func(c *Config) { c.VIPs = nil }, v3Config(100), "no virtual addresses"},
		{"mixed families", func(c *Config) { c.VIPs = append(c.VIPs, netip.MustParsePrefix("fd00:99::1/64")) }, v3Config(100), "family"},
		{"duplicate VIP", func(c *Config) { c.VIPs = append(c.VIPs, netip.MustParsePrefix("10.99.0.100/32")) }, v3Config(100), "listed twice"},
		{"multicast VIP", func(c *Config) { c.VIPs = []netip.Prefix{netip.MustParsePrefix("224.0.0.18/32")} }, v3Config(100), "not a unicast"},
		{"invalid VIP", func(c *Config) { c.VIPs = []netip.Prefix{{}} }, v3Config(100), "invalid"},
		{"too many VIPs", func(c *Config) {
			c.VIPs = nil
			for n := 0; n < 256; n++ {
				c.VIPs = append(c.VIPs, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, byte(n >> 8), byte(n)}), 32))
			}
		}, v3Config(100), "at most 255"},
		{"v2 IPv6", nil, func() Config { c := v6; c.Version = Version2; c.AdvertInterval = time.Second; return c }(), "IPv4 only"},
		{"v3 with auth", func(c *Config) { c.AuthType = AuthSimple; c.AuthPass = "x" }, v3Config(100), "no authentication"},
		{"password without type", func(c *Config) { c.AuthType = AuthNone }, v2Config(100), "without auth type"},
		{"password too long", func(c *Config) { c.AuthPass = "123456789" }, v2Config(100), "1 to 8 bytes"},
		{"empty password", func(c *Config) { c.AuthPass = "" }, v2Config(100), "1 to 8 bytes"},
		{"AH", func(c *Config) { c.AuthType = AuthIPAH; c.AuthPass = "" }, v2Config(100), "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.base.clone()
			if tt.mutate != nil {
				tt.mutate(&c)
			}
			err := c.Validate()
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("valid config rejected: %v", err)
			case tt.err != "" && err == nil:
				t.Fatalf("invalid config accepted, want error containing %q", tt.err)
			case tt.err != "" && !strings.Contains(err.Error(), tt.err):
				t.Fatalf("error %q does not mention %q", err, tt.err)
			}
		})
	}
}

func TestAdvertisementFieldsEncode(t *testing.T) {
	for _, c := range []Config{v3Config(100), v2Config(100)} {
		a := &Advertisement{}
		c.AdvertisementFields(a, 100)
		b, err := a.AppendMarshal(nil, c.Primary, MulticastIPv4)
		if err != nil {
			t.Fatalf("v%d: %v", c.Version, err)
		}
		var back Advertisement
		if err := back.Unmarshal(b, c.Primary, MulticastIPv4); err != nil {
			t.Fatalf("v%d: %v", c.Version, err)
		}
		if back.Interval() != c.AdvertInterval || back.VRID != c.VRID || len(back.Addresses) != len(c.VIPs) {
			t.Fatalf("v%d: round trip gave %+v", c.Version, back)
		}
		if err := back.CheckAuth(c.AuthType, c.AuthData()); err != nil {
			t.Fatalf("v%d: %v", c.Version, err)
		}
	}
}
