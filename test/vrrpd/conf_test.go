package vrrpd_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The VIPs of dualConf and oneInstanceConf.
var (
	vip4 = netip.MustParsePrefix("10.99.0.100/24")
	vip6 = netip.MustParsePrefix("fd00:99::100/64")
)

// writeConf writes a config into the test's temp dir.
func writeConf(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// passAuth is the PASS authentication of the keepalived captures' VRRPv2 configs, as
// vrrpInstance's extra lines.
const passAuth = `authentication {
  auth_type PASS
  auth_pass secret1
}
`

// vrrpInstance is one vrrp_instance block of a keepalived.conf: BACKUP on eth0 (the
// priorities decide, as a keepalived pair usually is configured), advertising every
// advertInt seconds, with the extra lines (each ending in a newline) and the VIPs.
func vrrpInstance(name string, vrid, priority int, advertInt, extra string, vips ...string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "vrrp_instance %s {\n  state BACKUP\n  interface eth0\n  virtual_router_id %d\n  priority %d\n  advert_int %s\n",
		name, vrid, priority, advertInt)
	for _, l := range strings.SplitAfter(extra, "\n") {
		if l != "" {
			sb.WriteString("  " + l)
		}
	}
	sb.WriteString("  virtual_ipaddress {\n")
	for _, v := range vips {
		sb.WriteString("    " + v + "\n")
	}
	sb.WriteString("  }\n}\n")
	return sb.String()
}

// dualConf is a keepalived.conf with one IPv4 and one IPv6 instance at 100 ms adverts.
func dualConf(priority int) string {
	return `global_defs {
  router_id test
  vrrp_version 3
  vrrp_garp_master_delay 1
  vrrp_garp_master_repeat 2
}
` + vrrpInstance("VI_4", 51, priority, "0.1", "", vip4.String()) +
		vrrpInstance("VI_6", 52, priority, "0.1", "", vip6.String())
}

// oneInstanceConf is one virtual router with VIP 10.99.0.100: VRRPv2 with PASS auth at
// 1 s, or VRRPv3 at 100 ms.
func oneInstanceConf(v2 bool, priority int) string {
	if v2 {
		return "global_defs {\n  vrrp_version 2\n}\n" + vrrpInstance("VI_1", 51, priority, "1", passAuth, vip4.String())
	}
	return "global_defs {\n  vrrp_version 3\n}\n" + vrrpInstance("VI_1", 51, priority, "0.1", "", vip4.String())
}

// manyConf is n instances at 100 ms adverts, VRIDs 1..n, with one VIP each: 10.99.0.<12+n>
// (so at most 243 IPv4 instances fit in the lab's /24), or fd00:99::1:<vrid>.
func manyConf(n, priority int, ipv6 bool) string { return manyConfAt(n, priority, ipv6, "0.1", "") }

// manyConfAt is manyConf with adverts every advertInt seconds and extra global_defs lines
// (each ending in a newline).
func manyConfAt(n, priority int, ipv6 bool, advertInt, globals string) string {
	var sb strings.Builder
	sb.WriteString("global_defs {\n  vrrp_version 3\n" + globals + "}\n")
	for i, vip := range manyVIPs(n, ipv6) {
		sb.WriteString(vrrpInstance(fmt.Sprintf("VI_%d", i+1), i+1, priority, advertInt, "", vip.String()))
	}
	return sb.String()
}

// manyVIPs are manyConf's VIPs, instance 1's first.
func manyVIPs(n int, ipv6 bool) []netip.Prefix {
	var out []netip.Prefix
	for i := 1; i <= n; i++ {
		if ipv6 {
			out = append(out, netip.MustParsePrefix(fmt.Sprintf("fd00:99::1:%x/64", i)))
		} else {
			out = append(out, netip.MustParsePrefix(fmt.Sprintf("10.99.0.%d/24", 12+i))) // after the hosts' .10-.12
		}
	}
	return out
}
