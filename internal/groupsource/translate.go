package groupsource

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
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
// password, a truncated password) and the instances dropped: an instance
// whose status vrrpd cannot run (bad priorities, a VIP that is not a unicast
// host address, a VRID out of range or taken by another instance) is left out
// with a warning, so that one Service's bad status (from an older operator,
// say) stops only its own virtual router. An error means the group itself is
// unusable (bad member addresses, an interface that cannot be found, a missing
// password) and names the instance; nothing of the group should then be
// applied.
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
	byAddr   map[config.Family][]int  // member indexes by address, per family
	checks   map[string]config.Script // kube-proxy health checks by name (health.go)
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
			t.drop(in.Key, fmt.Errorf("instance %s: listed twice in the status", in.Key))
			continue
		}
		prios, err := v1alpha1.DecodePriorities(in.Priorities, len(st.Nodes))
		if err != nil {
			t.drop(in.Key, fmt.Errorf("instance %s: %w", in.Key, err))
			continue
		}
		if prios[self] == v1alpha1.PriorityNotMember {
			continue
		}
		out, err := t.instance(in, prios, self, members, globals)
		var ce *config.Error
		var ge groupError
		switch {
		case errors.As(err, &ge):
			return nil, nil, ge.error // the group's, not the instance's: nothing can run
		case errors.As(err, &ce):
			t.drop(in.Key, err) // names the group and the virtual router already
			continue
		case err != nil:
			t.drop(in.Key, fmt.Errorf("instance %s: %w", in.Key, err))
			continue
		}
		cfg.Instances = append(cfg.Instances, out...)
	}
	if err := cfg.Validate(); err != nil {
		// Instances that clash (one VRID twice): keep them in key order while they fit,
		// so the later one is dropped. Only here, since it validates once per instance.
		var kept []config.Instance
		for _, c := range cfg.Instances {
			try := &config.Config{RouterID: cfg.RouterID, Instances: append(slices.Clip(kept), c)}
			if err := try.Validate(); err != nil {
				t.drop(c.Name, err)
				continue
			}
			kept = try.Instances
		}
		cfg.Instances = kept
	}
	cfg.Scripts = t.usedChecks(cfg.Instances)
	return cfg, t.warnings, nil
}

// groupError is a translation error of the group itself (no interface to run on), which
// no instance can run without.
type groupError struct{ error }

// drop reports an instance that cannot run. One instance's bad status (a multicast VIP
// from an older operator, a VRID out of range) must not stop the group's others on every
// node: the instance is dropped with a warning, and vrrpd serves the rest.
func (t *translator) drop(key string, err error) {
	t.warn(key, "instance dropped, the group's others run: %v", err)
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
// address family of its VIPs, IPv4 first. It reads the status into one
// config.Draft (the Kubernetes-specific part: which values come from where)
// and leaves keepalived's rules to config.Resolve, as for a file.
func (t *translator) instance(in *v1alpha1.Instance, prios []uint8, self int, members []memberAddrs, globals config.Globals) ([]config.Instance, error) {
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
		if why := config.VIPProblem(netip.PrefixFrom(a, a.BitLen())); why != "" {
			return nil, fmt.Errorf("VIP %s %s", a, why)
		}
		byFamily[vrrp.FamilyOf(a)] = append(byFamily[vrrp.FamilyOf(a)], a)
	}
	if len(byFamily) == 0 {
		return nil, fmt.Errorf("no VIPs")
	}
	iface, err := t.interfaceName()
	if err != nil {
		return nil, groupError{fmt.Errorf("instance %s: %w", in.Key, err)}
	}
	d, opt, err := t.draft(in, iface, prios[self])
	if err != nil {
		return nil, err
	}

	var out []config.Instance
	split := len(byFamily) > 1
	for _, f := range []config.Family{config.IPv4, config.IPv6} {
		vips := byFamily[f]
		if len(vips) == 0 {
			continue
		}
		fd := d
		if split {
			fd = d.Clone(in.Key + map[config.Family]string{config.IPv4: SuffixIPv4, config.IPv6: SuffixIPv6}[f])
		}
		// The Service's mcast_dst_ip is for the virtual router of its family.
		if m := d.MulticastGroup(); m.IsValid() && vrrp.FamilyOf(m) != f {
			fd.SetMulticastGroup(netip.Addr{})
		}
		slices.SortFunc(vips, netip.Addr.Compare)
		for _, a := range vips {
			fd.AddVIP(config.VIP{Prefix: netip.PrefixFrom(a, a.BitLen())})
		}
		if in.Settings.Unicast {
			name := in.Key
			if split {
				name += map[config.Family]string{config.IPv4: SuffixIPv4, config.IPv6: SuffixIPv6}[f]
			}
			t.unicast(fd, name, f, prios, self, members)
		}
		c, ws, err := config.Resolve(fd, globals, opt)
		t.warnings = append(t.warnings, ws...)
		if err != nil && opt.MissingPassword != "" && strings.Contains(err.Error(), opt.MissingPassword) {
			// The Secret, not the instance: a password that could not be read must not
			// make every node resign the group's instances.
			return nil, groupError{err}
		}
		if err != nil {
			return nil, err
		}
		c.StartDelay = startDelay(prios, self, startDelayStep(in.Key))
		t.healthCheck(in, prios, &c, members[self])
		out = append(out, c)
	}
	return out, nil
}

// StartDelayStep is the extra wait before a new instance's first Master_Down_Timer for
// each member node ranked above this one (by priority), up to StartDelayRanks of them.
//
// The operator spaces the top ranks' priorities widely (internal/placement): the first two
// differ in Skew_Time by 50/256 of an advertisement interval, 19.5 ms at 100 ms, 1.95 ms at
// 10 ms. That decides a race when every node stops hearing a master at the same moment. A new instance is different: each node starts it when its own watch delivers
// the group, and on a loaded node the delivery, the reload or the timer itself can be late
// by more than that (15 ms measured on the shared 2-core lab machine). The second-ranked
// node would then take the VIP, announce it, and hand it back one advertisement later.
// 100 ms a rank covers that spread with room at any interval; it costs nothing when the
// best-ranked node runs the instance, and delays a lower-ranked node's first mastership
// only while every node above it is away.
//
// SharedStartDelayStep is the step of a shared router (issue 31, an instance key starting
// with "@"). A new shared router lists addresses that the masters of other routers still
// hold (docs/design/router-sharing.md §4 case 2: staged for their holder, which ranks
// first), so a lower-ranked node that takes it first puts hundreds of addresses on two
// hosts at once. The join lab at 2,000 Services saw the holders' watches deliver that
// write 440 ms after the joining node's, on a host loaded to an average of 17; a second
// a rank covers that. It delays nothing while the node ranked first runs the router, and
// the members stay served in their old routers until the new one has a master.
const (
	StartDelayStep       = 100 * time.Millisecond
	SharedStartDelayStep = time.Second
	StartDelayRanks      = 4
)

// startDelayStep is the start delay's step for the instance keyed key.
func startDelayStep(key string) time.Duration {
	if strings.HasPrefix(key, "@") {
		return SharedStartDelayStep
	}
	return StartDelayStep
}

// startDelay is step for each member ranked above self, at most StartDelayRanks.
func startDelay(prios []uint8, self int, step time.Duration) time.Duration {
	above := 0
	for i, p := range prios {
		if i != self && p > prios[self] {
			above++
		}
	}
	return time.Duration(min(above, StartDelayRanks)) * step
}

// draft reads what every virtual router of status instance in shares: the
// group's settings, this node's priority, the Service's verbatim keywords
// and the password. Warnings about them name the instance key, once.
func (t *translator) draft(in *v1alpha1.Instance, iface string, prio uint8) (*config.Draft, config.Options, error) {
	var opt config.Options
	set := in.Settings
	d := config.NewDraft(in.Key, t.pos)
	d.SetInterface(iface)
	d.SetVRID(uint8(in.VRID))
	d.SetPriority(prio)
	d.SetState(config.StateBackup) // placement, not the initial state, decides the master
	switch set.Version {
	case 0: // the CRD's default, which the globals carry
	case 2, 3:
		d.SetVersion(vrrp.Version(set.Version))
	default:
		return nil, opt, fmt.Errorf("VRRP version %d is neither 2 nor 3", set.Version)
	}
	switch interval := set.AdvertInterval.Duration; {
	case interval < 0:
		return nil, opt, fmt.Errorf("negative advertInterval %v", interval)
	case interval > 0:
		d.SetAdvertInterval(interval)
	}
	d.SetPreempt(set.Preempt)
	d.SetV3ChecksumAsV2(set.V3ChecksumAsV2)
	// The operator's takeover from keepalived-operator (status.migration).
	d.SetHandoverOnly(set.HandoverOnly)
	// A node coming back (a rolling upgrade, a reboot, the end of an exclusion) takes its
	// VIPs back from the node that stood in without a moment on two nodes.
	d.SetBreakFirstPreempt(true)
	if set.UseVMAC {
		// keepalived's use_vmac without arguments: the name and MAC follow the
		// VRID. The group decides it, never a Service (verbatim use_vmac is the
		// operator's keyword, ignored below).
		notes, err := d.SetKeyword("use_vmac", nil)
		t.keywordResult(in.Key, "useVMAC", "use_vmac", notes, err)
		if set.VMACXmitBase {
			notes, err := d.SetKeyword("vmac_xmit_base", nil)
			t.keywordResult(in.Key, "vmacXmitBase", "vmac_xmit_base", notes, err)
		}
	}
	t.verbatim(in.Key, d, set.Verbatim)
	if m := d.MulticastGroup(); m.IsValid() && !slices.ContainsFunc(in.VIPs, func(s string) bool {
		a, err := netip.ParseAddr(s)
		return err == nil && vrrp.FamilyOf(a.Unmap()) == vrrp.FamilyOf(m)
	}) {
		t.warn(in.Key, "verbatim mcast_dst_ip %s: the instance has no %s VIP; ignored", m, vrrp.FamilyOf(m))
	}
	if pa := set.PasswordAuth; pa != nil {
		// keepalived read the password as one word of keepalived.conf, so the
		// original operator's Secrets may end in a newline that was never
		// part of the password.
		if note := d.SetAuthPass(string(bytes.TrimSpace(t.password)), "password"); note != "" {
			t.warn(in.Key, "%s, as keepalived does", note)
		}
		// Running a VRRPv2 instance without the password would answer peers
		// that all drop its advertisements (an authentication mismatch),
		// making two masters: an error rather than keepalived's warning.
		opt.MissingPassword = fmt.Sprintf("passwordAuth: no password in Secret %s key %q", pa.SecretRef.Name, secretKey(pa))
	}
	return d, opt, nil
}

// unicast sets this node's address as the source and the other members'
// addresses of the family as peers, those with priority 0 included: such a
// node runs no instance, but it may be a master handing over (an excluded
// node, which the operator gives 0 and whose vrrpd resigns on the same status
// write). Were it dropped from the peers, a backup whose watch delivered
// that write first would discard the master's adverts, its priority-0 one
// included (unicast takes adverts only from peers), and take over at
// Master_Down_Interval instead of Skew_Time, beside the master if that one's
// watch were slower. A node coming back would likewise preempt a master
// that ignores its adverts. Adverts sent to a node that runs no instance
// cost it a dropped packet.
func (t *translator) unicast(d *config.Draft, name string, f config.Family, prios []uint8, self int, members []memberAddrs) {
	src := members[self].of(f)
	if !src.IsValid() {
		t.warn(name, "unicast: node %s has no %s address in the status; peers will not accept its advertisements", t.node, f)
	}
	// Members in address order, so the peers come out sorted.
	peers := make([]netip.Addr, 0, len(t.byAddr[f]))
	for _, i := range t.byAddr[f] {
		a := members[i].of(f)
		if i == self || a == src {
			continue
		}
		if n := len(peers); n > 0 && peers[n-1] == a {
			continue // two nodes reporting one address
		}
		peers = append(peers, a)
	}
	if len(peers) == 0 {
		// The model has no "unicast to nobody": no peers means multicast.
		// Alone, this node is master anyway; say so rather than go quiet.
		t.warn(name, "unicast: no other member has an %s address; advertising by multicast", f)
		src = netip.Addr{}
	}
	d.SetUnicast(src, peers)
}

// secretKey is the key of the password in the Secret, with the CRD default.
func secretKey(pa *v1alpha1.PasswordAuth) string {
	if pa.SecretKey == "" {
		return "password"
	}
	return pa.SecretKey
}
