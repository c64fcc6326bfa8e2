package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseYAML: the native YAML file through our code around yaml.v3 (the parts, the
// node tree's lines, the rewording of the library's errors, the checks). It never
// panics; an error is an *Error at file:line with no Config; warnings name the file; a
// second parse gives the same answer; and every instance it accepts is one the VRRP
// state machine accepts.
func FuzzParseYAML(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "yaml", "*.yaml"))
	files = append(files, filepath.Join("..", "..", "deploy", "vrrpd", "vrrpd.yaml"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	inst := "instances:\n- name: A\n  interface: eth0\n  vrid: 1\n  vips: [10.0.0.1/24]\n"
	for _, s := range []string{
		inst + "  prio: 5\n", inst + "  unicast: {Peers: [10.0.0.2]}\n", inst + "  vrid: 2\n", inst + "  excludedVIPs: [~]\n",
		inst + "  routes: [{to: 10.1.0.0/16, table: 0x10, via: 10.0.0.9}]\n  rules: [\"from 10.0.0.1 table 100\"]\n",
		inst + "  garp: {masterDelay: 1e-1, masterRepeat: 010}\n  preempt: off\n",
		"instances:\n- &b\n  name: A\n  interface: eth0\n  vrid: 1\n  vips: [10.0.0.1/24]\n- <<: *b\n  name: B\n  vrid: 2\n",
		"defaults:\n  garp:\n    delay: 1s\n", "routerID: [1]\n", "---\n", "{}",
		"scripts: [{name: s, command: /bin/true, interval: 1s}]\nhealthChecks: [{name: c, tcp: {connect: \"10.0.0.9:80\"}}]\n" +
			"trackFiles: [{name: f, file: /run/f, init: {value: 1}}]\n" + inst + "  trackScripts: [{name: s}]\n  trackChecks: [{name: c}]\n  trackFiles: [{name: f}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.yaml"
		cfg, ws, err := parseYAML(name, data)
		for _, w := range ws {
			if w.Pos.File != name {
				t.Fatalf("warning without the file: %v", w)
			}
		}
		cfg2, _, err2 := parseYAML(name, data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("two parses, two answers: %v / %v", err, err2)
		}
		if err != nil {
			var e *Error
			if cfg != nil || !errors.As(err, &e) || e.Pos.File != name || e.Pos.Line < 1 {
				t.Fatalf("error %q (%T, config %v): want an *Error at %s:LINE and no Config", err, err, cfg != nil, name)
			}
			return
		}
		if len(cfg.Instances) != len(cfg2.Instances) {
			t.Fatalf("two parses, %d and %d instances", len(cfg.Instances), len(cfg2.Instances))
		}
		for i, in := range cfg.Instances {
			if !in.Equal(cfg2.Instances[i]) {
				t.Fatalf("two parses, two instances:\n%+v\n%+v", in, cfg2.Instances[i])
			}
			primary := netip.MustParseAddr("10.99.0.1")
			if in.Family == IPv6 {
				primary = netip.MustParseAddr("fe80::1")
			}
			if err := in.StateMachineConfig(primary).Validate(); err != nil {
				t.Fatalf("%s: accepted, but the state machine refuses it: %v\n%+v", in.Name, err, in)
			}
		}
	})
}
