package groupsource

import (
	"strings"
	"testing"
)

// A group status that carries virtual_routes or virtual_rules in a Service's verbatim
// settings (an operator that did not drop them) still adds no route: vrrpd ignores them
// with a warning.
func TestTranslateVerbatimRoutesRefused(t *testing.T) {
	g := testGroup()
	g.Status.Instances = g.Status.Instances[2:] // default/web, IPv4 only
	g.Status.Instances[0].Settings.Verbatim = map[string]string{
		"virtual_routes": "0.0.0.0/0 via 10.99.0.1",
		"virtual_rules":  "from all table 5",
	}
	cfg, ws := mustTranslate(t, g, "a", nil, nil)
	in := cfg.Instances[0]
	if len(in.Routes) != 0 || len(in.Rules) != 0 {
		t.Errorf("routes %v rules %v from a Service", in.Routes, in.Rules)
	}
	text := warningsText(ws)
	for _, k := range []string{"virtual_routes", "virtual_rules"} {
		if !strings.Contains(text, "(default/web) verbatim "+k+" would add routes or rules on the nodes") {
			t.Errorf("no warning refusing %s in:\n%s", k, text)
		}
	}
}
