package config

import (
	"net/netip"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// skipOtherFamily applies keepalived 2.2.7's rule for an instance's address family to a
// keepalived.conf instance: the first address written (source, multicast group, unicast
// peer or VIP) sets the family, and each later address of the other family is reported
// and skipped, the instance kept (vrrp_srcip_handler, vrrp_mcast_dstip_handler,
// alloc_vrrp_unicast_peer, alloc_vrrp_vip). vrrpd warns, naming the line, and skips it
// too. Only an instance written in one file is ordered so; one spread over included files
// is left to Resolve, which refuses a mix, as every other format (YAML) does.
func (p *kaParser) skipOtherFamily(d *Draft) {
	type addr struct {
		a   netip.Addr
		pos Position
	}
	var all []addr
	if d.src.IsValid() {
		all = append(all, addr{d.src, d.srcPos})
	}
	if d.mcast.IsValid() {
		all = append(all, addr{d.mcast, d.mcastPos})
	}
	for _, v := range d.peers {
		all = append(all, addr{v.Prefix.Addr(), v.pos})
	}
	for _, v := range d.vips {
		all = append(all, addr{v.Prefix.Addr(), v.pos})
	}
	var first *addr
	for i := range all {
		a := &all[i]
		if a.pos.File != d.pos.File || a.pos.Line < 1 {
			return
		}
		if first == nil || a.pos.Line < first.pos.Line {
			first = a
		}
	}
	if first == nil {
		return
	}
	fam := vrrp.FamilyOf(first.a)
	other := func(a netip.Addr, pos Position, what string) bool {
		if vrrp.FamilyOf(a) == fam {
			return false
		}
		p.warn(pos, "(%s) %s %s is not %s like the instance (its first address, %s at %s); skipped, as keepalived skips it",
			d.name, what, a, fam, first.a, first.pos)
		return true
	}
	if d.src.IsValid() && other(d.src, d.srcPos, "source address") {
		d.src, d.srcPos = netip.Addr{}, Position{}
	}
	if d.mcast.IsValid() && other(d.mcast, d.mcastPos, "multicast group") {
		d.mcast, d.mcastPos = netip.Addr{}, Position{}
	}
	keep := func(vs []draftVIP, what string) []draftVIP {
		out := vs[:0:0]
		for _, v := range vs {
			if !other(v.Prefix.Addr(), v.pos, what) {
				out = append(out, v)
			}
		}
		return out
	}
	d.peers = keep(d.peers, "unicast peer")
	d.vips = keep(d.vips, "VIP")
}
