package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Format is a configuration file format.
type Format uint8

// The formats Load understands.
const (
	FormatKeepalived Format = iota + 1 // keepalived.conf
	FormatYAML                         // vrrpd's native YAML
)

func (f Format) String() string {
	switch f {
	case FormatKeepalived:
		return "keepalived.conf"
	case FormatYAML:
		return "YAML"
	}
	return "unknown format"
}

// Load reads the configuration at path, in either format (see DetectFormat), following
// keepalived.conf includes. On any error it returns a nil Config: a file with an error
// is never half applied. Warnings are returned with a successful load, and with an
// error as far as they were collected.
func Load(path string) (*Config, []Warning, error) {
	return LoadWith(path, LoadOptions{})
}

// LoadOptions are what a load needs to know beyond the file.
type LoadOptions struct {
	// ConfigID selects keepalived.conf's conditional lines ("@ID ..." and "@^ID ..."),
	// as keepalived's -i / --config-id does. Empty means keepalived's default: the host
	// name up to its first dot.
	ConfigID string
}

// LoadWith is Load with options.
func LoadWith(path string, o LoadOptions) (*Config, []Warning, error) {
	data, err := readConfigFile(path, maxConfigBytes)
	if err != nil {
		return nil, nil, err
	}
	return ParseWith(path, data, o)
}

// Parse is Load on data already read from the file called name. keepalived.conf includes
// are still read from disk, relative to name's directory.
func Parse(name string, data []byte) (*Config, []Warning, error) {
	return ParseWith(name, data, LoadOptions{})
}

// ParseWith is Parse with options.
func ParseWith(name string, data []byte, o LoadOptions) (*Config, []Warning, error) {
	switch DetectFormat(data) {
	case FormatYAML:
		return parseYAML(name, data)
	default:
		if o.ConfigID == "" {
			o.ConfigID = DefaultConfigID()
		}
		return parseKeepalivedConf(name, data, o)
	}
}

// DefaultConfigID is keepalived's default config id: the host name up to its first dot.
func DefaultConfigID() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	id, _, _ := strings.Cut(h, ".")
	return id
}

// yamlKey matches the start of a YAML mapping ("routerID:", "instances:"), which a
// keepalived.conf line never is.
var yamlKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*:(\s|$)`)

// DetectFormat tells a YAML file from a keepalived.conf by its first line that is not
// blank or a comment: YAML starts with "key:", "---" or "{"; anything else (global_defs,
// vrrp_instance, include, ...) is keepalived.conf.
func DetectFormat(data []byte) Format {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if line == "---" || strings.HasPrefix(line, "--- ") || line[0] == '{' || yamlKey.MatchString(line) {
			return FormatYAML
		}
		return FormatKeepalived
	}
	return FormatKeepalived
}

func parseKeepalivedConf(name string, data []byte, o LoadOptions) (*Config, []Warning, error) {
	lx := newLexer(o.ConfigID)
	if err := lx.lexData(name, data, Position{}); err != nil {
		return nil, lx.warnings, err
	}
	tree, err := buildTree(lx.items)
	if err != nil {
		return nil, lx.warnings, err
	}
	p, err := parseKeepalived(tree)
	ws := lx.warnings
	if p != nil {
		ws = append(ws, p.warnings...)
	}
	if err != nil {
		return nil, groupWarnings(ws), err
	}
	cfg := &Config{RouterID: p.g.routerID, Files: lx.files}
	cfg, ws, err = finish(cfg, p.drafts, p.g, ws)
	return cfg, groupWarnings(ws), err
}

// finish resolves every draft and checks the instances against each other. It reports
// every invalid instance, not just the first, so "vrrpd check" shows them all.
func finish(cfg *Config, drafts []Draft, g Globals, ws []Warning) (*Config, []Warning, error) {
	errs := scriptUserErrors(g, drafts)
	for _, d := range drafts {
		in, iws, err := Resolve(&d, g, Options{})
		ws = append(ws, iws...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg.Instances = append(cfg.Instances, in)
	}
	if len(errs) == 0 {
		if err := cfg.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, ws, errors.Join(errs...)
	}
	sgs, sws := syncGroups(g, cfg.Instances)
	ws = append(ws, sws...)
	cfg.SyncGroups = sgs
	cfg.TrackFiles = usedTrackFiles(g, cfg.Instances)
	cfg.Scripts = usedScripts(g, cfg.Instances)
	cfg.ScriptSettings = g.scriptSettings
	applyHost(cfg, g)
	return cfg, ws, nil
}

// FormatWarnings renders warnings one per line, for logs and "vrrpd check".
func FormatWarnings(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintln(&b, w.Error())
	}
	return b.String()
}
