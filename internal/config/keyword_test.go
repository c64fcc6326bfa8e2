package config

import (
	"reflect"
	"strings"
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

// TestKeywordYAMLKeysInSchema: every YAML key the keyword table names is a key of the
// YAML schema (an instance's, or the defaults' for a global_defs keyword), so the table
// cannot name a key the file does not have.
func TestKeywordYAMLKeysInSchema(t *testing.T) {
	for b, schema := range map[keyword.Block]reflect.Type{
		keyword.Instance: reflect.TypeFor[yamlInstance](),
		keyword.Global:   reflect.TypeFor[yamlDefaults](),
	} {
		for _, k := range keyword.ByYAML(b) {
			typ := schema
			for _, part := range strings.Split(k.YAML, ".") {
				f, ok := yamlField(typ, part)
				if !ok {
					t.Errorf("%s: YAML key %q is not in %v", k.Name, k.YAML, schema)
					break
				}
				typ = f
				for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
					typ = typ.Elem()
				}
			}
		}
	}
}

// yamlField returns the type of the field of struct t (or of its inline structs) whose
// yaml tag is key.
func yamlField(t reflect.Type, key string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key {
			return f.Type, true
		}
		if opts == "inline" {
			if ft, ok := yamlField(f.Type, key); ok {
				return ft, true
			}
		}
	}
	return nil, false
}
