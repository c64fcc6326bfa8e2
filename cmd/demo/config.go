package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// The virtual addresses the demo's routers share, one instance per family.
var (
	vip4 = netip.MustParsePrefix("10.99.0.100/24")
	vip6 = netip.MustParsePrefix("fd00:99::100/64")
)

// Instance names and router IDs in routerConfig.
const (
	instance4 = "VI_4"
	instance6 = "VI_6"
	vrid4     = 51
	vrid6     = 52
)

// checkAdverts rejects an advertisement interval VRRPv3 cannot carry exactly: the field
// counts centiseconds in 12 bits. vrrpd would round it with a warning; the demo prefers
// to say so up front, since its timings are computed from the value asked for.
func checkAdverts(d time.Duration) error {
	if d < 10*time.Millisecond || d > 4095*10*time.Millisecond || d%(10*time.Millisecond) != 0 {
		return fmt.Errorf("--adverts %v: VRRPv3 takes 10ms to 40.95s in steps of 10ms", d)
	}
	return nil
}

// routerConfig is the keepalived.conf of one demo router. Both routers start as BACKUP
// and let the priorities decide, as a keepalived pair usually is configured; the
// announcement's second burst comes after 1s instead of keepalived's 5s so that it
// falls within the demo.
func routerConfig(routerID string, priority uint8, adverts time.Duration) string {
	advertInt := strconv.FormatFloat(adverts.Seconds(), 'f', -1, 64)
	return fmt.Sprintf(`# vrrpd demo: router %[1]s (written by cmd/demo)
global_defs {
  router_id %[1]s
  vrrp_version 3
  vrrp_garp_master_delay 1
  vrrp_garp_master_repeat 2
}

vrrp_instance %[4]s {
  state BACKUP
  interface eth0
  virtual_router_id %[5]d
  priority %[2]d
  advert_int %[3]s
  virtual_ipaddress {
    %[6]s
  }
}

vrrp_instance %[7]s {
  state BACKUP
  interface eth0
  virtual_router_id %[8]d
  priority %[2]d
  advert_int %[3]s
  virtual_ipaddress {
    %[9]s
  }
}
`, routerID, priority, advertInt, instance4, vrid4, vip4, instance6, vrid6, vip6)
}
