package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// The native YAML schema (documented in README.md, "vrrpd configuration"), decoded by
// yaml.v3 with KnownFields: an unknown key is an error, never silently dropped, and keys
// match the tags exactly (routerId is not routerID). The parts that are checked one by
// one (defaults, each instance, script, check, track file and sync group) are yamlParts,
// so that a key or value that does not fit is reported with the part it is in.
type yamlFile struct {
	RouterID  string                   `yaml:"routerID"`
	Defaults  yamlPart[yamlDefaults]   `yaml:"defaults"`
	Instances []yamlPart[yamlInstance] `yaml:"instances"`
	// Scripts and the settings after it: yaml_scripts.go.
	Scripts              []yamlPart[yamlScript] `yaml:"scripts"`
	ScriptUser           string                 `yaml:"scriptUser"`
	ScriptGroup          string                 `yaml:"scriptGroup"`
	EnableScriptSecurity bool                   `yaml:"enableScriptSecurity"`
	NotifyFIFO           string                 `yaml:"notifyFifo"`
	// HealthChecks: yaml_checks.go.
	HealthChecks    []yamlPart[yamlHealthCheck] `yaml:"healthChecks"`
	yamlHostRouting `yaml:",inline"`            // netNamespace, static*: yaml_routes.go
	// TrackFiles and SyncGroups: yaml_tracking.go.
	TrackFiles []yamlPart[yamlTrackFileSpec] `yaml:"trackFiles"`
	SyncGroups []yamlPart[yamlSyncGroup]     `yaml:"syncGroups"`
}

type yamlDefaults struct {
	Version            *int           `yaml:"version"`
	AdvertInterval     *yamlDuration  `yaml:"advertInterval"`
	MulticastGroup4    string         `yaml:"multicastGroup4"`
	MulticastGroup6    string         `yaml:"multicastGroup6"`
	GARP               yamlGlobalGARP `yaml:"garp"`
	yamlAdvertHandling `yaml:",inline"`
}

// yamlAdvertHandling are the settings that both defaults and an instance carry, each
// keepalived's keyword of the same meaning (ownerIgnoreAdverts has none in 2.2.7).
type yamlAdvertHandling struct {
	Strict             *bool `yaml:"strict"`
	LowerPrioNoAdvert  *bool `yaml:"lowerPrioNoAdvert"`
	OwnerIgnoreAdverts *bool `yaml:"ownerIgnoreAdverts"`
	V3ChecksumAsV2     *bool `yaml:"v3ChecksumAsV2"`
}

type yamlGlobalGARP struct {
	yamlGARP   `yaml:",inline"`
	Interval   *yamlDuration `yaml:"interval"`
	NAInterval *yamlDuration `yaml:"naInterval"`
}

type yamlGARP struct {
	MasterDelay         *yamlDuration `yaml:"masterDelay"`
	MasterRepeat        *int          `yaml:"masterRepeat"`
	MasterRefresh       *yamlDuration `yaml:"masterRefresh"`
	MasterRefreshRepeat *int          `yaml:"masterRefreshRepeat"`
}

type yamlInstance struct {
	Name                 string            `yaml:"name"`
	Interface            string            `yaml:"interface"`
	VRID                 *int              `yaml:"vrid"`
	Priority             *int              `yaml:"priority"`
	Version              *int              `yaml:"version"`
	State                string            `yaml:"state"`
	AdvertInterval       *yamlDuration     `yaml:"advertInterval"`
	Preempt              *bool             `yaml:"preempt"`
	PreemptDelay         *yamlDuration     `yaml:"preemptDelay"`
	Accept               *bool             `yaml:"accept"`
	VIPs                 []yamlVIP         `yaml:"vips"`
	ExcludedVIPs         []yamlVIP         `yaml:"excludedVIPs"`
	Unicast              *yamlUnicast      `yaml:"unicast"`
	MulticastGroup       string            `yaml:"multicastGroup"`
	Auth                 *yamlAuth         `yaml:"auth"`
	GARP                 yamlGARP          `yaml:"garp"`
	VMAC                 *yamlVMAC         `yaml:"vmac"`
	TrackScripts         []yamlTrackScript `yaml:"trackScripts"`
	TrackChecks          []yamlTrackScript `yaml:"trackChecks"`
	Notify               *yamlNotify       `yaml:"notify"`
	yamlAdvertHandling   `yaml:",inline"`
	yamlInstanceRouting  `yaml:",inline"` // routes, rules, trackSourceIP: yaml_routes.go
	yamlInstanceTracking `yaml:",inline"`
}

type yamlUnicast struct {
	Source string   `yaml:"source"`
	Peers  []string `yaml:"peers"`
}

type yamlAuth struct {
	Type     string `yaml:"type"`
	Password string `yaml:"password"`
}

// yamlVIP is either the keepalived form as a string ("10.0.0.1/24 dev eth0 label
// eth0:1") or a mapping {address, dev, label}.
type yamlVIP struct {
	Text    string `yaml:"-"`
	Address string `yaml:"address"`
	Dev     string `yaml:"dev"`
	Label   string `yaml:"label"`
}

func (v *yamlVIP) UnmarshalYAML(unmarshal func(any) error) error {
	type plain yamlVIP
	return textOrMapping(unmarshal, &v.Text, (*plain)(v))
}

// yamlDuration is a Go duration string ("100ms", "1.5s") or a number of seconds.
type yamlDuration struct{ text string }

func (d *yamlDuration) UnmarshalYAML(n *yamlv3.Node) error {
	if n.Kind != yamlv3.ScalarNode {
		return yamlTypeError(n, "config.yamlDuration")
	}
	d.text = n.Value
	// A number is taken as the YAML library resolves it (0144 is octal, 1e-3 a float),
	// then written in decimal for parseDecimalSeconds.
	if tag := n.ShortTag(); tag == "!!int" || tag == "!!float" {
		var f float64
		if n.Decode(&f) == nil {
			d.text = strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	// Anything else is kept as written and rejected by value, which knows the key.
	return nil
}

func (d yamlDuration) value() (time.Duration, error) {
	if v, ok := parseDecimalSeconds(d.text); ok {
		return v, nil
	}
	v, err := time.ParseDuration(d.text)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad duration %q (want e.g. \"100ms\", \"1s\" or a number of seconds)", d.text)
	}
	return v, nil
}

// yamlLine finds "line N" in a YAML library error.
var yamlLine = regexp.MustCompile(`line (\d+)`)

func parseYAML(name string, data []byte) (*Config, []Warning, error) {
	// One parse: yamlDoc keeps the node tree, for the lines of the checks below, and
	// decodes it strictly into the schema.
	var doc yamlDoc
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) { // nothing but comments
		err = nil
	}
	ix := yamlIndex{file: name, root: doc.root}
	if ix.root == nil {
		ix.root = &yamlv3.Node{Kind: yamlv3.MappingNode, Line: 1}
	}
	if err != nil {
		return nil, nil, ix.documentError(err)
	}
	if l := yamlEmptyItem(ix.root, 0); l > 0 {
		return nil, nil, errAt(Position{File: name, Line: l}, "YAML: line %d: an empty list item", l)
	}
	f := &doc.file
	var ws []Warning
	g := DefaultGlobals()
	g.routerID = f.RouterID
	if err := ix.defaults(f.Defaults, &g, &ws); err != nil {
		return nil, ws, err
	}
	if err := ix.scripts(f.Scripts, f, &g); err != nil {
		return nil, ws, err
	}
	if err := ix.healthChecks(f.HealthChecks, &g); err != nil {
		return nil, ws, err
	}

	if err := ix.hostRouting(f.yamlHostRouting, &g, &ws); err != nil {
		return nil, ws, err
	}
	if err := ix.trackFiles(f.TrackFiles, &g); err != nil {
		return nil, ws, err
	}
	if err := ix.syncGroups(f.SyncGroups, &g); err != nil {
		return nil, ws, err
	}
	var drafts []Draft
	for i, p := range f.Instances {
		d, err := ix.instance(i, p, &ws)
		if err != nil {
			return nil, ws, err
		}
		drafts = append(drafts, d)
	}
	return finish(&Config{RouterID: g.routerID, Files: []string{name}}, drafts, g, ws)
}

// yamlIndex maps paths in the document to line numbers.
type yamlIndex struct {
	file string
	root *yamlv3.Node
}

// node returns the node at path (map keys and sequence indexes) and the line of the
// deepest part of path found.
func (ix yamlIndex) node(path ...any) (*yamlv3.Node, int) {
	n := ix.root
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		var next *yamlv3.Node
		switch k := p.(type) {
		case string:
			if n.Kind == yamlv3.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						next, line = n.Content[i+1], n.Content[i].Line
						break
					}
				}
			}
		case int:
			if n.Kind == yamlv3.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
				line = next.Line
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return n, line
}

func (ix yamlIndex) at(path ...any) Position {
	_, line := ix.node(path...)
	return Position{File: ix.file, Line: line}
}

func (ix yamlIndex) defaults(p yamlPart[yamlDefaults], g *Globals, ws *[]Warning) error {
	if p.err != nil {
		return ix.decodeError(p.err, []any{"defaults"}, "defaults")
	}
	d := p.v
	at := func(k ...any) Position { return ix.at(append([]any{"defaults"}, k...)...) }
	if d.Version != nil {
		if *d.Version != 2 && *d.Version != 3 {
			return errAt(at("version"), "defaults: version must be 2 or 3, not %d", *d.Version)
		}
		g.version = vrrp.Version(*d.Version)
	}
	if d.AdvertInterval != nil {
		v, err := advertInterval(*d.AdvertInterval)
		if err != nil {
			return errAt(at("advertInterval"), "defaults: advertInterval: %v", err)
		}
		g.advertInterval = v
	}
	for _, m := range []struct {
		key  string
		text string
		fam  Family
		dst  *netip.Addr
	}{{"multicastGroup4", d.MulticastGroup4, IPv4, &g.mcast4}, {"multicastGroup6", d.MulticastGroup6, IPv6, &g.mcast6}} {
		if m.text == "" {
			continue
		}
		a, ok := parseAddr(m.text)
		if !ok || !isMulticastOf(a, m.fam) {
			return errAt(at(m.key), "defaults: %s %q is not an %s multicast address", m.key, m.text, m.fam)
		}
		*m.dst = a
	}
	h := d.yamlAdvertHandling
	for _, b := range []struct {
		v   *bool
		dst *bool
	}{{h.Strict, &g.strict}, {h.LowerPrioNoAdvert, &g.lowerPrioNoAdvert},
		{h.OwnerIgnoreAdverts, &g.ownerIgnoreAdverts}, {h.V3ChecksumAsV2, &g.v3ChecksumAsV2}} {
		if b.v != nil {
			*b.dst = *b.v
		}
	}
	gd, err := ix.garp(d.GARP.yamlGARP, []any{"defaults", "garp"}, "defaults", ws)
	if err != nil {
		return err
	}
	applyGARP(&g.garp, gd)
	for _, iv := range []struct {
		k   string
		v   *yamlDuration
		dst *time.Duration
	}{{"interval", d.GARP.Interval, &g.garp.Interval}, {"naInterval", d.GARP.NAInterval, &g.garp.NAInterval}} {
		if iv.v == nil {
			continue
		}
		if *iv.dst, err = iv.v.value(); err != nil {
			return errAt(at("garp", iv.k), "defaults: garp.%s: %v", iv.k, err)
		}
		if *iv.dst > MaxGARPInterval {
			return errAt(at("garp", iv.k), "defaults: garp.%s %v is more than %v", iv.k, *iv.dst, MaxGARPInterval)
		}
	}
	return nil
}

func applyGARP(dst *GARP, d garpDraft) {
	if d.masterDelay != nil {
		dst.MasterDelay = *d.masterDelay
	}
	if d.masterRepeat != nil {
		dst.MasterRepeat = *d.masterRepeat
	}
	if d.masterRefresh != nil {
		dst.MasterRefresh = *d.masterRefresh
	}
	if d.masterRefreshRepeat != nil {
		dst.MasterRefreshRepeat = *d.masterRefreshRepeat
	}
}

func (ix yamlIndex) garp(y yamlGARP, path []any, what string, ws *[]Warning) (garpDraft, error) {
	var d garpDraft
	at := func(k string) Position { return ix.at(append(append([]any{}, path...), k)...) }
	dur := func(k string, v *yamlDuration, lo, hi time.Duration) (*time.Duration, error) {
		if v == nil {
			return nil, nil
		}
		t, err := v.value()
		if err != nil {
			return nil, errAt(at(k), "%s: garp.%s: %v", what, k, err)
		}
		if (t != 0 && t < lo) || t > hi {
			return nil, errAt(at(k), "%s: garp.%s %v is not 0 or between %v and %v", what, k, t, lo, hi)
		}
		return &t, nil
	}
	rep := func(k string, v *int) (*int, error) {
		if v == nil {
			return nil, nil
		}
		if *v < 0 {
			return nil, errAt(at(k), "%s: garp.%s must not be negative", what, k)
		}
		if *v > MaxGARPRepeat {
			return nil, errAt(at(k), "%s: garp.%s %d is more than %d", what, k, *v, MaxGARPRepeat)
		}
		n, adjusted := repeatCount(uint64(*v))
		if adjusted {
			*ws = append(*ws, Warning{Pos: at(k), Message: fmt.Sprintf("%s: garp.%s must be greater than 0; using 1", what, k)})
		}
		return &n, nil
	}
	var err error
	if d.masterDelay, err = dur("masterDelay", y.MasterDelay, 0, MaxGARPDelay); err != nil {
		return d, err
	}
	if d.masterRefresh, err = dur("masterRefresh", y.MasterRefresh, time.Second, MaxGARPRefresh); err != nil {
		return d, err
	}
	if d.masterRepeat, err = rep("masterRepeat", y.MasterRepeat); err != nil {
		return d, err
	}
	if d.masterRefreshRepeat, err = rep("masterRefreshRepeat", y.MasterRefreshRepeat); err != nil {
		return d, err
	}
	return d, nil
}

func advertInterval(y yamlDuration) (time.Duration, error) {
	v, err := y.value()
	if err != nil {
		return 0, err
	}
	if v < 10*time.Millisecond || v > 255*time.Second {
		return 0, fmt.Errorf("%v is out of range (10ms to 255s)", v)
	}
	return v, nil
}

func (ix yamlIndex) instance(i int, p yamlPart[yamlInstance], ws *[]Warning) (Draft, error) {
	base := []any{"instances", i}
	at := func(k ...any) Position { return ix.at(append(append([]any{}, base...), k...)...) }
	y := p.v
	what := fmt.Sprintf("instances[%d]", i)
	if p.err != nil {
		if n, _ := ix.node(append(base, "name")...); n != nil && n.Kind == yamlv3.ScalarNode {
			what = fmt.Sprintf("instance %q", n.Value)
		}
		return Draft{}, ix.decodeError(p.err, base, what)
	}
	if y.Name != "" {
		what = fmt.Sprintf("instance %q", y.Name)
	}
	fail := func(pos Position, format string, a ...any) (Draft, error) {
		return Draft{}, errAt(pos, "%s: %s", what, fmt.Sprintf(format, a...))
	}
	d := Draft{pos: at(), name: y.Name, iface: y.Interface, preempt: y.Preempt, accept: y.Accept,
		preemptPos: at("preempt"), delayPos: at("preemptDelay"), statePos: at("state"),
		strict: y.Strict, lowerPrioNoAdvert: y.LowerPrioNoAdvert, lpnaPos: at("lowerPrioNoAdvert"),
		ownerIgnoreAdverts: y.OwnerIgnoreAdverts, v3ChecksumAsV2: y.V3ChecksumAsV2}
	if len(y.Interface) > 15 {
		return fail(at("interface"), "interface name %q is longer than 15 characters", y.Interface)
	}
	if y.VRID != nil {
		if *y.VRID < 1 || *y.VRID > 255 {
			return fail(at("vrid"), "vrid must be between 1 and 255, not %d", *y.VRID)
		}
		v := uint8(*y.VRID)
		d.vrid = &v
	}
	if y.Priority != nil {
		if *y.Priority < 1 || *y.Priority > 255 {
			return fail(at("priority"), "priority must be between 1 and 255, not %d", *y.Priority)
		}
		v := uint8(*y.Priority)
		d.priority = &v
	}
	if y.Version != nil {
		if *y.Version != 2 && *y.Version != 3 {
			return fail(at("version"), "version must be 2 or 3, not %d", *y.Version)
		}
		d.version, d.versionPos = vrrp.Version(*y.Version), at("version")
	}
	switch y.State {
	case "", StateMaster, StateBackup:
		d.state = y.State
	default:
		return fail(at("state"), "state must be MASTER or BACKUP, not %q", y.State)
	}
	if y.AdvertInterval != nil {
		v, err := advertInterval(*y.AdvertInterval)
		if err != nil {
			return fail(at("advertInterval"), "advertInterval: %v", err)
		}
		d.advert, d.advertPos = v, at("advertInterval")
	}
	if y.PreemptDelay != nil {
		v, err := y.PreemptDelay.value()
		if err != nil || v > vrrp.MaxPreemptDelay {
			return fail(at("preemptDelay"), "preemptDelay %q is not a duration from 0 to %v", y.PreemptDelay.text, vrrp.MaxPreemptDelay)
		}
		d.preemptDelay = v
	}
	var err error
	if d.vips, err = ix.vips(y.VIPs, base, "vips", what, ws); err != nil {
		return d, err
	}
	if d.evips, err = ix.vips(y.ExcludedVIPs, base, "excludedVIPs", what, ws); err != nil {
		return d, err
	}
	if y.Unicast != nil {
		if y.Unicast.Source != "" {
			a, ok := parseAddr(y.Unicast.Source)
			if !ok {
				return fail(at("unicast", "source"), "unicast.source: bad IP address %q", y.Unicast.Source)
			}
			d.src, d.srcPos = a, at("unicast", "source")
		}
		for j, s := range y.Unicast.Peers {
			a, ok := parseAddr(s)
			if !ok {
				return fail(at("unicast", "peers", j), "unicast.peers[%d]: bad IP address %q", j, s)
			}
			d.peers = append(d.peers, draftVIP{VIP: VIP{Prefix: netip.PrefixFrom(a, a.BitLen())}, pos: at("unicast", "peers", j)})
		}
	}
	if y.MulticastGroup != "" {
		a, ok := parseAddr(y.MulticastGroup)
		if !ok || !isMulticastOf(a, 0) {
			return fail(at("multicastGroup"), "multicastGroup %q is not a multicast address", y.MulticastGroup)
		}
		d.mcast, d.mcastPos = a, at("multicastGroup")
	}
	if y.Auth != nil {
		d.authPos = at("auth")
		switch strings.ToUpper(y.Auth.Type) {
		case "PASS":
			t := vrrp.AuthSimple
			d.auth = &t
		case "", "NONE":
			t := vrrp.AuthNone
			d.auth = &t
		case "AH":
			return fail(at("auth", "type"), "auth.type AH (IPsec authentication header) is not supported by vrrpd; use PASS or none")
		default:
			return fail(at("auth", "type"), "unknown auth.type %q (want PASS)", y.Auth.Type)
		}
		var note string
		if d.authPass, note = truncateAuthPass(y.Auth.Password, "auth.password"); note != "" {
			*ws = append(*ws, Warning{Pos: at("auth", "password"), Message: what + ": " + note})
		}
	}
	if d.garp, err = ix.garp(y.GARP, append(append([]any{}, base...), "garp"), what, ws); err != nil {
		return d, err
	}
	if y.VMAC != nil {
		if d.vmac, err = y.VMAC.draft(at("vmac")); err != nil {
			return fail(at("vmac"), "%v", err)
		}
	}
	if err := ix.instanceScripts(i, y.TrackScripts, y.TrackChecks, y.Notify, &d); err != nil {
		return Draft{}, err
	}
	if err := ix.instanceRouting(i, y.yamlInstanceRouting, &d, ws); err != nil {
		return Draft{}, err
	}
	if err := ix.instanceTracking(i, y.yamlInstanceTracking, &d); err != nil {
		return Draft{}, err
	}
	return d, nil
}

func (ix yamlIndex) vips(ys []yamlVIP, base []any, key, what string, ws *[]Warning) ([]draftVIP, error) {
	var out []draftVIP
	for j, y := range ys {
		pos := ix.at(append(append([]any{}, base...), key, j)...)
		var v VIP
		if y.Text != "" {
			words := strings.Fields(y.Text)
			pv, vws, err := parseVIPWords(words)
			if err != nil {
				return nil, errAt(pos, "%s: %s[%d]: %v", what, key, j, err)
			}
			for _, w := range vws {
				*ws = append(*ws, Warning{Pos: pos, Message: fmt.Sprintf("%s: %s", what, w)})
			}
			v = pv
		} else {
			p, err := parsePrefix(y.Address)
			if err != nil {
				return nil, errAt(pos, "%s: %s[%d]: %v", what, key, j, err)
			}
			v = VIP{Prefix: p, Dev: y.Dev, Label: y.Label}
			if len(v.Dev) > 15 || len(v.Label) > 15 {
				return nil, errAt(pos, "%s: %s[%d]: dev and label are at most 15 characters", what, key, j)
			}
		}
		out = append(out, draftVIP{VIP: v, pos: pos})
	}
	return out, nil
}
