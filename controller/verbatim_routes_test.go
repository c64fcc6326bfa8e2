package controller

import (
	"strings"
	"testing"
)

// A Service's verbatimconfig cannot add routes or rules on the nodes: the keys are
// dropped with a problem (an Event) naming why.
func TestParseVerbatimRefusesRoutes(t *testing.T) {
	got, problems := parseVerbatim(`{"virtual_routes": "10.0.0.0/8 via 192.0.2.1", "virtual_rules": "from all table 5", "garp_master_delay": "5"}`)
	if len(got) != 1 || got["garp_master_delay"] != "5" {
		t.Errorf("kept %v, want only garp_master_delay", got)
	}
	if len(problems) != 2 {
		t.Fatalf("problems %q, want two", problems)
	}
	for i, k := range []string{"virtual_routes", "virtual_rules"} {
		if !strings.Contains(problems[i], `key "`+k+`" would add routes or rules on the nodes`) {
			t.Errorf("problem %q does not refuse %s", problems[i], k)
		}
	}
}
