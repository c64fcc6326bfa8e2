package config

import (
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/keyword"
)

// TestKeywordFieldsLand: every setting the keyword table names for a vrrp_instance or a
// global_defs keyword has its place in a Draft or in Globals: an entry whose value
// landed nowhere would be read, checked and then silently dropped.
func TestKeywordFieldsLand(t *testing.T) {
	for _, b := range []keyword.Block{keyword.Instance, keyword.Global} {
		for _, name := range keyword.Names(b) {
			k, ok := keyword.Lookup(b, name)
			if !ok || k.Field == keyword.FieldNone {
				continue
			}
			s := newStatement(name, nil, Position{})
			var landed bool
			if b == keyword.Instance {
				landed = (&Draft{}).land(k.Field, keyword.Parsed{}, s)
			} else {
				g := DefaultGlobals()
				landed = g.land(k.Field, keyword.Parsed{}, s)
			}
			if !landed {
				t.Errorf("%s: its field %d lands nowhere", name, k.Field)
			}
		}
	}
}
