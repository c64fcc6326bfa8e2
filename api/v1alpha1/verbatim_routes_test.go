package v1alpha1

import "testing"

// TestRoutingKeywordsAreNotAService's: a Service's verbatimconfig must not add routes or
// policy rules on the group's nodes, nor move vrrpd to another network namespace.
func TestRoutingKeywordsAreNotAServices(t *testing.T) {
	for _, k := range []string{"virtual_routes", "virtual_rules"} {
		if o, ok := InstanceKeyword(k); !ok || o != OwnerNode {
			t.Errorf("InstanceKeyword(%q) = %v, %v; want OwnerNode", k, o, ok)
		}
	}
	if o, why := GlobalKeyword("net_namespace"); o != OwnerOperator || why == "" {
		t.Errorf("GlobalKeyword(net_namespace) = %v %q; want the operator's, with a reason", o, why)
	}
}
