package keyword

import (
	"strings"
	"testing"
)

// TestTable: every entry is whole: one per keyword and block, a Field only with a Value
// to fill it, a Kubernetes owner for every vrrp_instance and global_defs keyword, a
// number range for every bounded one, and a keyword vrrpd does not act on lands nowhere.
func TestTable(t *testing.T) {
	seen := map[key]bool{}
	for _, k := range table {
		id := key{k.Block, k.Name}
		switch {
		case seen[id]:
			t.Errorf("%s: twice in block %d", k.Name, k.Block)
		case k.Field != FieldNone && k.Value == nil:
			t.Errorf("%s: lands in field %d without a Value to read it", k.Name, k.Field)
		case k.Block != Top && k.Owner == 0:
			t.Errorf("%s: no Kubernetes owner", k.Name)
		case k.Unsupported != "" && k.Field != FieldNone:
			t.Errorf("%s: unsupported, yet it lands in field %d", k.Name, k.Field)
		case k.GroupField != "" && k.Owner != OwnerOperator:
			t.Errorf("%s: a group field decides it, yet the operator does not own it", k.Name)
		case k.Reason != "" && (k.Block != Global || k.Owner != OwnerOperator):
			t.Errorf("%s: a reason is for operator-owned global keywords", k.Name)
		case (k.Skip != "" || k.Fallback != "") && (k.Value == nil || k.Field == FieldNone):
			t.Errorf("%s: a bad value is skipped, yet no Value reads it or it lands nowhere", k.Name)
		case k.Fallback != "" && k.Skip == "":
			t.Errorf("%s: a fallback without the Skip warning that announces it", k.Name)
		}
		if k.Fallback != "" && k.Value != nil {
			if _, err := k.Value.Read(&Statement{Key: k.Name, Args: []string{k.Fallback}}); err != nil {
				t.Errorf("%s: fallback %q is itself bad: %v", k.Name, k.Fallback, err)
			}
		}
		seen[id] = true
		if k.Bounded {
			if _, _, ok := Range(k.Value); !ok {
				t.Errorf("%s: bounded without a number range", k.Name)
			}
		}
	}
}

// TestServiceProblem: the one wording of what a Service may not set, and the value
// check of a bounded keyword, the message of keepalived.conf's reader without its key.
func TestServiceProblem(t *testing.T) {
	for _, tt := range []struct{ k, v, want string }{
		{"preempt_delay", "3", ""},
		{"garp_master_repeat", "255", ""},
		{"garp_master_repeat", "256", `"256" is not a number between 0 and 255`},
		{"garp_lower_prio_delay", "4295", `"4295" is not a number between 0 and 4294`},
		{"priority", "200", "is set by the operator"},
		{"use_vmac", "", "is the group's decision (spec.useVMAC of the KeepalivedGroup), not a Service's"},
		{"virtual_routes", "", "would add routes or rules on the nodes, which a Service may not"},
		{"notify_master", "/bin/true", "would run a program, which vrrpd never does on a Service's say"},
		{"vrrp_garp_interval", "1", "is not a keepalived vrrp_instance keyword"},
		{"bogus", "1", "is not a keepalived vrrp_instance keyword"},
	} {
		if got := ServiceProblem(tt.k, tt.v); got != tt.want {
			t.Errorf("ServiceProblem(%q, %q) = %q, want %q", tt.k, tt.v, got, tt.want)
		}
	}
	s := &Statement{Key: "garp_master_repeat", Args: []string{"256"}}
	e, _ := Lookup(Instance, "garp_master_repeat")
	if _, err := e.Value.Read(s); err == nil || !strings.HasSuffix(err.Error(), ServiceProblem("garp_master_repeat", "256")) {
		t.Errorf("the reader's message %v is not the Service's", err)
	}
}
