package groupsource

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Verbatim keywords come from two places, as in the original operator: the
// group's spec.verbatimConfig went into keepalived's global_defs, a
// Service's verbatimconfig annotation into its vrrp_instance. vrrpd applies
// the keywords it implements, with keepalived's units, and warns about the
// rest. A bad value is a warning too, not an error: one Service's annotation
// must not stop every other VIP of the group from being served.

// operatorKeywords are vrrp_instance keywords whose value the operator
// decides (from the group, the Service and placement); a verbatim copy
// would contradict the rest of the cluster, so it is ignored.
var operatorKeywords = map[string]bool{
	"state": true, "priority": true, "interface": true, "virtual_router_id": true,
	"version": true, "unicast_src_ip": true, "mcast_src_ip": true, "unicast_peer": true,
	"authentication": true, "auth_type": true, "auth_pass": true,
	"virtual_ipaddress": true, "virtual_ipaddress_excluded": true,
}

// groupGlobals are the global_defs settings every instance inherits.
type groupGlobals struct {
	garp           config.GARP
	mcast4, mcast6 netip.Addr
}

// globals reads spec.verbatimConfig, keepalived's global_defs keywords.
func (t *translator) globals() groupGlobals {
	g := groupGlobals{garp: config.DefaultGARP(), mcast4: vrrp.MulticastIPv4, mcast6: vrrp.MulticastIPv6}
	kv := t.g.Spec.VerbatimConfig
	for _, k := range sortedKeys(kv) {
		v := strings.TrimSpace(kv[k])
		bad := func(err error) { t.warn("", "verbatimConfig %s %q: %v; ignored", k, v, err) }
		switch k {
		case "vrrp_garp_master_delay":
			setOr(&g.garp.MasterDelay, parseSeconds(v), bad)
		case "vrrp_garp_master_refresh":
			setOr(&g.garp.MasterRefresh, parseSeconds(v), bad)
		case "vrrp_garp_master_repeat":
			setOr(&g.garp.MasterRepeat, t.parseRepeat("verbatimConfig "+k, "", v), bad)
		case "vrrp_garp_master_refresh_repeat":
			setOr(&g.garp.MasterRefreshRepeat, t.parseRepeat("verbatimConfig "+k, "", v), bad)
		case "vrrp_garp_interval":
			setOr(&g.garp.Interval, parseDecimal(v, 0, 1000*time.Second), bad)
		case "vrrp_gna_interval":
			setOr(&g.garp.NAInterval, parseDecimal(v, 0, 1000*time.Second), bad)
		case "vrrp_mcast_group4":
			setOr(&g.mcast4, parseMulticast(v, config.IPv4), bad)
		case "vrrp_mcast_group6":
			setOr(&g.mcast6, parseMulticast(v, config.IPv6), bad)
		case "router_id":
			t.warn("", "verbatimConfig router_id is ignored: vrrpd names itself after its node")
		case "vrrp_version":
			t.warn("", "verbatimConfig vrrp_version is ignored: the group's vrrpVersion decides")
		default:
			t.warn("", "verbatimConfig %s is not supported by vrrpd; ignored", k)
		}
	}
	return g
}

// instanceVerbatim holds the vrrp_instance keywords of one status instance,
// read once and applied to each of its virtual routers.
type instanceVerbatim struct {
	preempt        *bool
	preemptDelay   *time.Duration
	accept         *bool
	advertInterval *time.Duration
	garpDelay      *time.Duration
	garpRepeat     *int
	garpRefresh    *time.Duration
	garpRefreshRep *int
	mcast          netip.Addr
}

// verbatim reads settings.verbatim of instance key. preempt is the
// settings' value, needed to check preempt_delay against the outcome;
// families are those of the instance's VIPs.
func (t *translator) verbatim(key string, kv map[string]string, preempt bool, families []config.Family) instanceVerbatim {
	var iv instanceVerbatim
	yes, no := true, false
	for _, k := range sortedKeys(kv) {
		v := strings.TrimSpace(kv[k])
		bad := func(err error) { t.warn(key, "verbatim %s %q: %v; ignored", k, v, err) }
		flag := func(p **bool, val *bool) {
			if v != "" {
				t.warn(key, "verbatim %s takes no value; ignoring %q", k, v)
			}
			*p = val
		}
		switch k {
		case "nopreempt":
			flag(&iv.preempt, &no)
		case "preempt":
			flag(&iv.preempt, &yes)
		case "accept":
			flag(&iv.accept, &yes)
		case "no_accept":
			flag(&iv.accept, &no)
		case "preempt_delay":
			setPtrOr(&iv.preemptDelay, parseDecimal(v, 0, vrrp.MaxPreemptDelay), bad)
		case "advert_int":
			setPtrOr(&iv.advertInterval, parseDecimal(v, 10*time.Millisecond, 255*time.Second), bad)
		case "garp_master_delay":
			setPtrOr(&iv.garpDelay, parseSeconds(v), bad)
		case "garp_master_refresh":
			setPtrOr(&iv.garpRefresh, parseSeconds(v), bad)
		case "garp_master_repeat":
			setPtrOr(&iv.garpRepeat, t.parseRepeat("verbatim "+k, key, v), bad)
		case "garp_master_refresh_repeat":
			setPtrOr(&iv.garpRefreshRep, t.parseRepeat("verbatim "+k, key, v), bad)
		case "mcast_dst_ip":
			a, err := netip.ParseAddr(v)
			switch {
			case err != nil || a.Zone() != "" || !a.Unmap().IsMulticast():
				bad(fmt.Errorf("not a multicast address"))
			case !slices.Contains(families, vrrp.FamilyOf(a.Unmap())):
				t.warn(key, "verbatim mcast_dst_ip %s: the instance has no %s VIP; ignored", v, vrrp.FamilyOf(a.Unmap()))
			default:
				iv.mcast = a.Unmap()
			}
		default:
			if operatorKeywords[k] {
				t.warn(key, "verbatim %s is set by the operator; ignored", k)
			} else {
				t.warn(key, "verbatim %s is not supported by vrrpd; ignored", k)
			}
		}
	}
	if iv.preempt != nil {
		preempt = *iv.preempt
	}
	if !preempt && iv.preemptDelay != nil && *iv.preemptDelay != 0 {
		t.warn(key, "preempt_delay is incompatible with nopreempt; clearing it")
		iv.preemptDelay = nil
	}
	return iv
}

// apply sets the keywords on one virtual router.
func (iv instanceVerbatim) apply(c *config.Instance) {
	if iv.preempt != nil {
		c.Preempt = *iv.preempt
	}
	if iv.preemptDelay != nil && c.Preempt {
		c.PreemptDelay = *iv.preemptDelay
	}
	if iv.accept != nil {
		c.AcceptMode = *iv.accept
	}
	if iv.garpDelay != nil {
		c.GARP.MasterDelay = *iv.garpDelay
	}
	if iv.garpRepeat != nil {
		c.GARP.MasterRepeat = *iv.garpRepeat
	}
	if iv.garpRefresh != nil {
		c.GARP.MasterRefresh = *iv.garpRefresh
	}
	if iv.garpRefreshRep != nil {
		c.GARP.MasterRefreshRepeat = *iv.garpRefreshRep
	}
	if iv.mcast.IsValid() && vrrp.FamilyOf(iv.mcast) == c.Family {
		c.MulticastGroup = iv.mcast
	}
}

// result is a parsed value or the reason it is bad.
type result[T any] struct {
	v   T
	err error
}

func setOr[T any](dst *T, r result[T], bad func(error)) {
	if r.err != nil {
		bad(r.err)
		return
	}
	*dst = r.v
}

func setPtrOr[T any](dst **T, r result[T], bad func(error)) {
	if r.err != nil {
		bad(r.err)
		return
	}
	v := r.v
	*dst = &v
}

// parseSeconds reads keepalived's whole seconds (garp delays and refreshes).
func parseSeconds(s string) result[time.Duration] {
	v, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return result[time.Duration]{err: fmt.Errorf("not a whole number of seconds")}
	}
	return result[time.Duration]{v: time.Duration(v) * time.Second}
}

// parseRepeat reads a repeat count; 0 becomes 1 with a warning, as in
// keepalived.
func (t *translator) parseRepeat(what, key, s string) result[int] {
	v, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return result[int]{err: fmt.Errorf("not a count")}
	}
	if v == 0 {
		t.warn(key, "%s must be greater than 0; using 1", what)
		v = 1
	}
	return result[int]{v: int(v)}
}

// parseDecimal reads fractional seconds such as "0.05" exactly (keepalived
// allows up to microseconds) and checks lo <= d <= hi.
func parseDecimal(s string, lo, hi time.Duration) result[time.Duration] {
	bad := result[time.Duration]{err: fmt.Errorf("not a number of seconds between %v and %v", lo, hi)}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(whole) > 9 || len(frac) > 6 {
		return bad
	}
	var d time.Duration
	for _, c := range whole {
		if c < '0' || c > '9' {
			return bad
		}
		d = d*10 + time.Duration(c-'0')
	}
	d *= time.Second
	unit := 100 * time.Millisecond
	for _, c := range frac {
		if c < '0' || c > '9' {
			return bad
		}
		d += time.Duration(c-'0') * unit
		unit /= 10
	}
	if d < lo || d > hi {
		return bad
	}
	return result[time.Duration]{v: d}
}

func parseMulticast(s string, f config.Family) result[netip.Addr] {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || vrrp.FamilyOf(a.Unmap()) != f || !a.Unmap().IsMulticast() {
		return result[netip.Addr]{err: fmt.Errorf("not an %s multicast address", f)}
	}
	return result[netip.Addr]{v: a.Unmap()}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
