package groupsource

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Resolver names the interface of the route to an address: vip.InterfaceFor
// on a real host, a table in tests.
type Resolver func(netip.Addr) (string, error)

// Instance name suffixes of an instance whose VIPs span both families: the
// two virtual routers need distinct names (logs, metrics labels, reload).
const (
	SuffixIPv4 = "/ipv4"
	SuffixIPv6 = "/ipv6"
)

// Limits of what a status may hold, checked so that a damaged status is an
// error rather than a wrapped-around number.
const (
	maxAuthPass = 8   // VRRPv2 simple password bytes; keepalived truncates
	maxVIPs     = 255 // addresses one advertisement can carry
)

// Translate turns group g into the configuration of node: one instance per
// status instance in which node's priority is not 0 and per address family
// of its VIPs. password is the value of the Secret key that the instances'
// passwordAuth names (nil when none is referenced or it could not be read);
// resolve finds the interface for spec.interfaceFromIP and may be nil when
// the group names its interface.
//
// Each virtual router is named by its instance key ("ns/svc", or
// "ns/svc/ip" with spreadvips); an instance whose VIPs span both families
// runs as key+SuffixIPv4 and key+SuffixIPv6 with one VRID. VIPs are host
// prefixes (/32, /128) on the interface, in address order; RouterID is the
// node name. Instances come in key order, IPv4 before IPv6, whatever the
// order of the status' lists and maps.
//
// A node that is not a member, or takes part in no instance, gets a Config
// with no instances: the daemon then resigns whatever it ran. Warnings name
// what was ignored or adjusted (unsupported verbatim keywords, VRRPv3 with a
// password, a truncated password). An error means the status itself is
// unusable (bad priorities, address or VRID, an interface that cannot be
// found, a missing password) and names the instance; nothing of the group
// should then be applied.
func Translate(g *v1alpha1.KeepalivedGroup, node string, password []byte, resolve Resolver) (*config.Config, []config.Warning, error) {
	if g == nil {
		return nil, nil, fmt.Errorf("no KeepalivedGroup")
	}
	t := translator{
		g:        g,
		node:     node,
		password: password,
		resolve:  resolve,
		pos:      config.Position{File: "KeepalivedGroup " + g.Namespace + "/" + g.Name},
	}
	return t.run()
}

type translator struct {
	g        *v1alpha1.KeepalivedGroup
	node     string
	password []byte
	resolve  Resolver
	pos      config.Position

	warnings []config.Warning
	iface    string
	byAddr   map[config.Family][]int // member indexes by address, per family
}

// memberAddrs are one member node's addresses, at most one per family.
type memberAddrs struct {
	v4, v6 netip.Addr
}

func (m memberAddrs) of(f config.Family) netip.Addr {
	if f == config.IPv6 {
		return m.v6
	}
	return m.v4
}

func (t *translator) warn(key, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if key != "" {
		msg = "(" + key + ") " + msg
	}
	t.warnings = append(t.warnings, config.Warning{Pos: t.pos, Message: msg})
}

func (t *translator) run() (*config.Config, []config.Warning, error) {
	st := &t.g.Status
	cfg := &config.Config{RouterID: t.node}
	self := slices.IndexFunc(st.Nodes, func(n v1alpha1.GroupNode) bool { return n.Name == t.node })
	if t.node == "" || self < 0 {
		return cfg, nil, nil
	}
	members, err := t.members()
	if err != nil {
		return nil, nil, err
	}
	globals := t.globals()

	// Status instances are sorted by key already; sort a copy anyway so the
	// output never depends on the writer.
	ins := slices.Clone(st.Instances)
	slices.SortStableFunc(ins, func(a, b v1alpha1.Instance) int { return cmp.Compare(a.Key, b.Key) })
	for i := range ins {
		in := &ins[i]
		if i > 0 && ins[i-1].Key == in.Key {
			return nil, nil, fmt.Errorf("instance %s: listed twice in the status", in.Key)
		}
		prios, err := decodePriorities(in.Priorities, len(st.Nodes))
		if err != nil {
			return nil, nil, fmt.Errorf("instance %s: %w", in.Key, err)
		}
		if prios[self] == 0 {
			continue
		}
		out, err := t.instance(in, prios, self, members, globals)
		if err != nil {
			return nil, nil, fmt.Errorf("instance %s: %w", in.Key, err)
		}
		cfg.Instances = append(cfg.Instances, out...)
	}
	if err := checkUnique(cfg.Instances); err != nil {
		return nil, nil, err
	}
	return cfg, t.warnings, nil
}

// members parses every member node's addresses: the first of each family.
func (t *translator) members() ([]memberAddrs, error) {
	out := make([]memberAddrs, len(t.g.Status.Nodes))
	for i, n := range t.g.Status.Nodes {
		for _, s := range n.Addresses {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("node %s: bad address %q", n.Name, s)
			}
			a = a.Unmap()
			switch {
			case a.Is4() && !out[i].v4.IsValid():
				out[i].v4 = a
			case a.Is6() && !out[i].v6.IsValid():
				out[i].v6 = a
			}
		}
	}
	// The members that have an address of each family, in address order.
	t.byAddr = map[config.Family][]int{}
	for _, f := range []config.Family{config.IPv4, config.IPv6} {
		var idx []int
		for i, m := range out {
			if m.of(f).IsValid() {
				idx = append(idx, i)
			}
		}
		slices.SortStableFunc(idx, func(a, b int) int { return out[a].of(f).Compare(out[b].of(f)) })
		t.byAddr[f] = idx
	}
	return out, nil
}

// interfaceName is spec.interface, or the interface of the route to
// spec.interfaceFromIP, looked up once per translation and only when this
// node runs an instance.
func (t *translator) interfaceName() (string, error) {
	if t.iface != "" {
		return t.iface, nil
	}
	spec := &t.g.Spec
	switch {
	case spec.InterfaceFromIP != "":
		ip, err := netip.ParseAddr(spec.InterfaceFromIP)
		if err != nil {
			return "", fmt.Errorf("interfaceFromIP %q is not an IP address", spec.InterfaceFromIP)
		}
		if t.resolve == nil {
			return "", fmt.Errorf("interfaceFromIP %s: no way to look up routes", ip)
		}
		name, err := t.resolve(ip.Unmap())
		if err != nil {
			return "", fmt.Errorf("interfaceFromIP %s: %w", ip, err)
		}
		if name == "" {
			return "", fmt.Errorf("interfaceFromIP %s: no interface", ip)
		}
		t.iface = name
	case spec.Interface != "":
		t.iface = spec.Interface
	default:
		return "", fmt.Errorf("the group sets neither interface nor interfaceFromIP")
	}
	return t.iface, nil
}

// instance builds the virtual routers of one status instance: one per
// address family of its VIPs, IPv4 first.
func (t *translator) instance(in *v1alpha1.Instance, prios []uint8, self int, members []memberAddrs, globals groupGlobals) ([]config.Instance, error) {
	if in.VRID < 1 || in.VRID > 255 {
		return nil, fmt.Errorf("VRID %d is outside 1..255", in.VRID)
	}
	byFamily := map[config.Family][]netip.Addr{}
	for _, s := range in.VIPs {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("bad VIP %q", s)
		}
		a = a.Unmap()
		if a.IsUnspecified() || a.IsMulticast() {
			return nil, fmt.Errorf("VIP %s is not a unicast address", a)
		}
		f := vrrp.FamilyOf(a)
		if slices.Contains(byFamily[f], a) {
			return nil, fmt.Errorf("VIP %s is listed twice", a)
		}
		byFamily[f] = append(byFamily[f], a)
	}
	if len(byFamily) == 0 {
		return nil, fmt.Errorf("no VIPs")
	}
	iface, err := t.interfaceName()
	if err != nil {
		return nil, err
	}
	set := in.Settings
	version := vrrp.Version(set.Version)
	switch set.Version {
	case 0:
		version = vrrp.Version3 // the CRD's default
	case 2, 3:
	default:
		return nil, fmt.Errorf("VRRP version %d is neither 2 nor 3", set.Version)
	}
	interval := set.AdvertInterval.Duration
	if interval == 0 {
		interval = config.DefaultAdvertInterval
	}
	if interval < 0 {
		return nil, fmt.Errorf("negative advertInterval %v", interval)
	}
	var families []config.Family
	for f := range byFamily {
		families = append(families, f)
	}
	v := t.verbatim(in.Key, set.Verbatim, set.Preempt, families)
	if v.advertInterval != nil {
		interval = *v.advertInterval
	}

	var out []config.Instance
	split := len(byFamily) > 1
	for _, f := range []config.Family{config.IPv4, config.IPv6} {
		vips := byFamily[f]
		if len(vips) == 0 {
			continue
		}
		slices.SortFunc(vips, netip.Addr.Compare)
		c := config.Instance{
			Name:           in.Key,
			Interface:      iface,
			Family:         f,
			VRID:           uint8(in.VRID),
			Priority:       prios[self],
			Version:        version,
			Preempt:        set.Preempt,
			AcceptMode:     config.DefaultAcceptMode,
			InitialState:   config.StateBackup,
			MulticastGroup: globals.mcast4,
			GARP:           globals.garp,
			Source:         t.pos,
		}
		if split {
			c.Name += map[config.Family]string{config.IPv4: SuffixIPv4, config.IPv6: SuffixIPv6}[f]
		}
		if f == config.IPv6 {
			c.MulticastGroup = globals.mcast6
			if version != vrrp.Version3 {
				t.warn(c.Name, "VRRP version 2 cannot carry IPv6; using version 3")
				c.Version = vrrp.Version3
			}
		}
		c.AdvertInterval = t.interval(c.Name, c.Version, interval)
		v.apply(&c)
		if err := t.auth(&c, set.PasswordAuth); err != nil {
			return nil, err
		}
		for i, a := range vips {
			vip := config.VIP{Prefix: netip.PrefixFrom(a, a.BitLen()), Dev: iface}
			if i < maxVIPs {
				c.VIPs = append(c.VIPs, vip)
				continue
			}
			if i == maxVIPs {
				t.warn(c.Name, "more than %d VIPs; the rest are added but not advertised (excluded)", maxVIPs)
			}
			c.ExcludedVIPs = append(c.ExcludedVIPs, vip)
		}
		if set.Unicast {
			t.unicast(&c, prios, self, members)
		}
		out = append(out, c)
	}
	return out, nil
}

// interval fits the advertisement interval to what the version can carry,
// rounding as keepalived does (the CRD already rejects what would need it).
func (t *translator) interval(name string, v vrrp.Version, d time.Duration) time.Duration {
	unit, limit := 10*time.Millisecond, 4095*10*time.Millisecond
	if v == vrrp.Version2 {
		unit, limit = time.Second, 255*time.Second
	}
	switch {
	case d > limit:
		t.warn(name, "VRRPv%d advertisement interval %v is out of range; using %v", v, d, limit)
		return limit
	case d%unit != 0:
		r := max(d.Round(unit), unit)
		t.warn(name, "VRRPv%d advertisement interval %v must be in units of %v; rounding to %v", v, d, unit, r)
		return r
	}
	return d
}

// auth sets VRRPv2 simple password authentication from the Secret's value.
// A VRRPv2 instance that should authenticate but has no password is an
// error: running it without would answer peers that all drop its
// advertisements (an authentication mismatch), making two masters.
func (t *translator) auth(c *config.Instance, pa *v1alpha1.PasswordAuth) error {
	if pa == nil {
		return nil
	}
	if c.Version != vrrp.Version2 {
		t.warn(c.Name, "VRRP version 3 does not support authentication; ignoring passwordAuth")
		return nil
	}
	// keepalived read the password as one word of keepalived.conf, so the
	// original operator's Secrets may end in a newline that was never part
	// of the password.
	pass := bytes.TrimSpace(t.password)
	if len(pass) == 0 {
		return fmt.Errorf("passwordAuth: no password in Secret %s key %q", pa.SecretRef.Name, secretKey(pa))
	}
	if len(pass) > maxAuthPass {
		t.warn(c.Name, "password longer than %d characters; using the first %d, as keepalived does", maxAuthPass, maxAuthPass)
		pass = pass[:maxAuthPass]
	}
	c.AuthType = vrrp.AuthSimple
	c.AuthPass = string(pass)
	return nil
}

// unicast sets this node's address as the source and the other taking-part
// members' addresses of the family as peers.
func (t *translator) unicast(c *config.Instance, prios []uint8, self int, members []memberAddrs) {
	c.UnicastSrc = members[self].of(c.Family)
	if !c.UnicastSrc.IsValid() {
		t.warn(c.Name, "unicast: node %s has no %s address in the status; peers will not accept its advertisements", t.node, c.Family)
	}
	// Members in address order, so the peers come out sorted.
	peers := make([]netip.Addr, 0, len(t.byAddr[c.Family]))
	for _, i := range t.byAddr[c.Family] {
		a := members[i].of(c.Family)
		if i == self || prios[i] == 0 || a == c.UnicastSrc {
			continue
		}
		if n := len(peers); n > 0 && peers[n-1] == a {
			continue // two nodes reporting one address
		}
		peers = append(peers, a)
	}
	if len(peers) > 0 {
		c.UnicastPeers = peers
	}
	if len(c.UnicastPeers) == 0 {
		// The model has no "unicast to nobody": no peers means multicast.
		// Alone, this node is master anyway; say so rather than go quiet.
		t.warn(c.Name, "unicast: no other member has an %s address; advertising by multicast", c.Family)
		c.UnicastSrc = netip.Addr{}
	}
}

// secretKey is the key of the password in the Secret, with the CRD default.
func secretKey(pa *v1alpha1.PasswordAuth) string {
	if pa.SecretKey == "" {
		return "password"
	}
	return pa.SecretKey
}

// decodePriorities reads the status' priorities: standard padded base64 of
// one byte per member node. Unlike placement.Decode it accepts 0, which the
// API defines as "this node does not take part".
func decodePriorities(s string, n int) ([]uint8, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("priorities %q: not base64: %v", s, err)
	}
	if len(b) != n {
		return nil, fmt.Errorf("priorities %q: %d values for %d nodes", s, len(b), n)
	}
	for i, p := range b {
		if p == 255 {
			return nil, fmt.Errorf("priorities %q: value 255 for node %d is the address owner's, which a VIP never has", s, i)
		}
	}
	return b, nil
}

// checkUnique rejects two virtual routers with one name, or with one
// interface, VRID and family: they would answer each other's advertisements.
func checkUnique(ins []config.Instance) error {
	type id struct {
		iface  string
		vrid   uint8
		family config.Family
	}
	names := map[string]bool{}
	ids := map[id]string{}
	for _, in := range ins {
		if names[in.Name] {
			return fmt.Errorf("instance %s: two virtual routers with this name", in.Name)
		}
		names[in.Name] = true
		k := id{in.Interface, in.VRID, in.Family}
		if o, dup := ids[k]; dup {
			return fmt.Errorf("instance %s: interface %s, VRID %d, %s is already used by instance %s", in.Name, in.Interface, in.VRID, in.Family, o)
		}
		ids[k] = in.Name
	}
	return nil
}
