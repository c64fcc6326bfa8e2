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

	"github.com/vrrp-operator/vrrp-operator/internal/keyword"
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
	DownTimerAdverts   *int           `yaml:"downTimerAdverts"`
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
	DownTimerAdverts     *int              `yaml:"downTimerAdverts"`
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
type yamlVIP = textOrKeys[yamlVIPKeys]

type yamlVIPKeys struct {
	Address string `yaml:"address"`
	Dev     string `yaml:"dev"`
	Label   string `yaml:"label"`
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
	err := ix.keywords(keyword.Global, []any{"defaults"}, "defaults", ws, g.land)
	if err != nil {
		return err
	}
	if d.AdvertInterval != nil {
		v, err := advertInterval(*d.AdvertInterval)
		if err != nil {
			return errAt(at("advertInterval"), "defaults: %v", err)
		}
		g.advertInterval = v
	}
	if d.OwnerIgnoreAdverts != nil {
		g.ownerIgnoreAdverts = *d.OwnerIgnoreAdverts
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

// advertInterval reads defaults.advertInterval (keepalived has no global keyword for it)
// with advert_int's check.
func advertInterval(y yamlDuration) (time.Duration, error) {
	v, err := y.value()
	if err != nil {
		return 0, fmt.Errorf("advertInterval: %v", err)
	}
	k, _ := keyword.Lookup(keyword.Instance, "advert_int")
	return v, k.Value.(keyword.DurationRange).CheckDuration("advertInterval", y.text, v)
}

// instance reads instances[i] into a draft, one step per part of the instance.
func (ix yamlIndex) instance(i int, p yamlPart[yamlInstance], ws *[]Warning) (Draft, error) {
	base := []any{"instances", i}
	what := ix.instanceWhat(i, p)
	if p.err != nil {
		return Draft{}, ix.decodeError(p.err, base, what)
	}
	y := p.v
	d := Draft{pos: ix.at(base...), name: y.Name, ownerIgnoreAdverts: y.OwnerIgnoreAdverts}
	for _, step := range []func() error{
		func() error {
			return ix.keywords(keyword.Instance, base, what, ws, d.land)
		},
		func() error { return ix.instanceAddresses(base, what, y, &d, ws) },
		func() error { return ix.auth(base, what, y.Auth, &d, ws) },
		func() error {
			var err error
			d.garp, err = ix.garp(y.GARP, append(append([]any{}, base...), "garp"), what, ws)
			return err
		},
		func() error { return ix.instanceVMAC(base, what, y.VMAC, &d) },
		func() error { return ix.instanceScripts(i, y.TrackScripts, y.TrackChecks, y.Notify, &d) },
		func() error { return ix.instanceRouting(i, y.yamlInstanceRouting, &d, ws) },
		func() error { return ix.instanceTracking(i, y.yamlInstanceTracking, &d) },
	} {
		if err := step(); err != nil {
			return Draft{}, err
		}
	}
	return d, nil
}

// instanceWhat names instances[i] in messages: by its name when it has one.
func (ix yamlIndex) instanceWhat(i int, p yamlPart[yamlInstance]) string {
	if p.v.Name != "" {
		return fmt.Sprintf("instance %q", p.v.Name)
	}
	if n, _ := ix.node("instances", i, "name"); p.err != nil && n != nil && n.Kind == yamlv3.ScalarNode {
		return fmt.Sprintf("instance %q", n.Value)
	}
	return fmt.Sprintf("instances[%d]", i)
}

// keywords reads the keys of the mapping at path that are keepalived keywords of block b
// (their YAML key in the keyword table), each through its keyword's value check, the one
// keepalived.conf's keyword goes through, and hands the value to land. A message names the
// YAML key. A boolean key sets a keyword that takes no value (preempt: false is
// nopreempt) by the entry whose value it is.
func (ix yamlIndex) keywords(b keyword.Block, path []any, what string, ws *[]Warning, land func(keyword.Field, keyword.Parsed, *statement) bool) error {
	for _, k := range keyword.ByYAML(b) {
		if k.Value == nil || k.Field == keyword.FieldNone || strings.Contains(k.YAML, ".") {
			continue
		}
		n := ix.child(path, k.YAML)
		if n == nil || n.Kind != yamlv3.ScalarNode || n.ShortTag() == "!!null" {
			continue
		}
		pos := ix.at(append(append([]any{}, path...), k.YAML)...)
		st := newStatement(k.YAML, nil, pos)
		v, ok, err := yamlKeywordValue(k, n, st)
		if err != nil && !strings.HasPrefix(err.Error(), k.YAML+" ") {
			err = fmt.Errorf("%s: %v", k.YAML, err) // a message that does not name the key
		}
		if err != nil {
			return errAt(pos, "%s: %v", what, err)
		}
		for _, m := range st.Notes {
			*ws = append(*ws, Warning{Pos: pos, Message: what + ": " + m})
		}
		if ok {
			land(k.Field, v, st)
		}
	}
	return nil
}

// yamlKeywordValue reads scalar n as keyword k's value: the words keepalived.conf would
// have, or a YAML duration checked against the keyword's range. ok is false for a
// boolean that selects another entry of the same key (preempt: false is not preempt).
func yamlKeywordValue(k *keyword.Keyword, n *yamlv3.Node, st *statement) (keyword.Parsed, bool, error) {
	if r, isDuration := k.Value.(keyword.DurationRange); isDuration {
		var y yamlDuration
		_ = y.UnmarshalYAML(n) // a scalar: never fails
		d, err := y.value()
		if err != nil {
			return keyword.Parsed{}, false, err
		}
		return keyword.Parsed{Duration: d}, true, r.CheckDuration(k.YAML, n.Value, d)
	}
	_, _, number := keyword.Range(k.Value)
	switch {
	case keyword.IsBoolean(k.Value):
		// As the schema decoded it (yes, on, a quoted "no"...).
		var b bool
		if n.Decode(&b) != nil {
			return keyword.Parsed{}, false, nil // the schema's decoding reports it
		}
		if set, isConst := keyword.IsConst(k.Value); !isConst {
			st.Args = []string{strconv.FormatBool(b)}
		} else if set != b {
			return keyword.Parsed{}, false, nil
		}
	case number && n.ShortTag() == "!!int":
		// As the YAML library resolves it (0x10 is 16), in decimal.
		var i int64
		if n.Decode(&i) != nil {
			return keyword.Parsed{}, false, nil
		}
		st.Args = []string{strconv.FormatInt(i, 10)}
	case n.Value == "": // unset, as an absent key
		return keyword.Parsed{}, false, nil
	default:
		st.Args = []string{n.Value}
	}
	v, err := k.Value.Read(&st.Statement)
	return v, err == nil, err
}

// child returns the value of key in the mapping at path, or nil, as the decoder reads
// it: through aliases, and from merged mappings (<<) where the mapping has no such key.
func (ix yamlIndex) child(path []any, key string) *yamlv3.Node {
	m, _ := ix.node(path...)
	return yamlChild(m, key, 0)
}

func yamlChild(m *yamlv3.Node, key string, depth int) *yamlv3.Node {
	for i := 0; m != nil && m.Kind == yamlv3.AliasNode && i < 100; i++ {
		m = m.Alias
	}
	if m == nil || m.Kind != yamlv3.MappingNode || depth > 100 {
		return nil
	}
	var merged []*yamlv3.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch k, v := m.Content[i], m.Content[i+1]; {
		case k.Value == key:
			for j := 0; v.Kind == yamlv3.AliasNode && v.Alias != nil && j < 100; j++ {
				v = v.Alias
			}
			return v
		case k.Value == "<<" && k.ShortTag() == "!!merge" && v.Kind == yamlv3.SequenceNode:
			merged = append(merged, v.Content...)
		case k.Value == "<<" && k.ShortTag() == "!!merge":
			merged = append(merged, v)
		}
	}
	for _, mm := range merged { // the first merged mapping that has it wins
		if v := yamlChild(mm, key, depth+1); v != nil {
			return v
		}
	}
	return nil
}

// instanceAddresses reads vips, excludedVIPs and unicast into d.
func (ix yamlIndex) instanceAddresses(base []any, what string, y yamlInstance, d *Draft, ws *[]Warning) error {
	at := func(k ...any) Position { return ix.at(append(append([]any{}, base...), k...)...) }
	var err error
	if d.vips, err = ix.vips(y.VIPs, base, "vips", what, ws); err != nil {
		return err
	}
	if d.evips, err = ix.vips(y.ExcludedVIPs, base, "excludedVIPs", what, ws); err != nil {
		return err
	}
	if y.Unicast == nil {
		return nil
	}
	if y.Unicast.Source != "" {
		a, ok := parseAddr(y.Unicast.Source)
		if !ok {
			return errAt(at("unicast", "source"), "%s: unicast.source: bad IP address %q", what, y.Unicast.Source)
		}
		d.src, d.srcPos = a, at("unicast", "source")
	}
	for j, s := range y.Unicast.Peers {
		a, ok := parseAddr(s)
		if !ok {
			return errAt(at("unicast", "peers", j), "%s: unicast.peers[%d]: bad IP address %q", what, j, s)
		}
		d.peers = append(d.peers, draftVIP{VIP: VIP{Prefix: netip.PrefixFrom(a, a.BitLen())}, pos: at("unicast", "peers", j)})
	}
	return nil
}

// auth reads an instance's auth into d.
func (ix yamlIndex) auth(base []any, what string, y *yamlAuth, d *Draft, ws *[]Warning) error {
	if y == nil {
		return nil
	}
	at := func(k ...any) Position { return ix.at(append(append([]any{}, base...), k...)...) }
	d.authPos = at("auth")
	switch strings.ToUpper(y.Type) {
	case "PASS":
		t := vrrp.AuthSimple
		d.auth = &t
	case "", "NONE":
		t := vrrp.AuthNone
		d.auth = &t
	case "AH":
		return errAt(at("auth", "type"), "%s: auth.type AH (IPsec authentication header) is not supported by vrrpd; use PASS or none", what)
	default:
		return errAt(at("auth", "type"), "%s: unknown auth.type %q (want PASS)", what, y.Type)
	}
	var note string
	if d.authPass, note = truncateAuthPass(y.Password, "auth.password"); note != "" {
		*ws = append(*ws, Warning{Pos: at("auth", "password"), Message: what + ": " + note})
	}
	return nil
}

// instanceVMAC reads an instance's vmac into d.
func (ix yamlIndex) instanceVMAC(base []any, what string, y *yamlVMAC, d *Draft) error {
	if y == nil {
		return nil
	}
	pos := ix.at(append(append([]any{}, base...), "vmac")...)
	var err error
	if d.vmac, err = y.draft(pos); err != nil {
		return errAt(pos, "%s: %v", what, err)
	}
	return nil
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
			p, err := parsePrefix(y.Keys.Address)
			if err != nil {
				return nil, errAt(pos, "%s: %s[%d]: %v", what, key, j, err)
			}
			v = VIP{Prefix: p, Dev: y.Keys.Dev, Label: y.Keys.Label}
			if len(v.Dev) > 15 || len(v.Label) > 15 {
				return nil, errAt(pos, "%s: %s[%d]: dev and label are at most 15 characters", what, key, j)
			}
		}
		out = append(out, draftVIP{VIP: v, pos: pos})
	}
	return out, nil
}
