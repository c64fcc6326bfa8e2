package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// The YAML configuration is parsed once, by yaml.v3 (for line numbers), then turned into
// JSON here and decoded strictly into the yaml* structs (strictJSON). This replaces
// sigs.k8s.io/yaml (a second parse, by yaml.v2) and sigs.k8s.io/json: together with
// their tables they were 0.6 MiB of vrrpd's resident set (issue 12).

// Limits on the JSON made from a document: an alias may repeat a node many times over
// ("billion laughs"), which must fail rather than fill memory.
const (
	yamlMaxDepth = 64
	yamlMaxJSON  = 16 << 20
)

// yamlToJSON converts a document parsed by yaml.v3 into JSON. Scalars resolve as YAML 1.1
// resolved them through sigs.k8s.io/yaml, which configurations were written against: an
// unquoted yes, no, on, off, y or n is a boolean, and an integer with a leading 0 is
// octal. A key set twice in one mapping is an error, "line N: ..." for yamlSyntaxError.
func yamlToJSON(doc *yamlv3.Node) ([]byte, error) {
	c := yamlConverter{}
	n := doc
	if n.Kind == yamlv3.DocumentNode {
		if len(n.Content) == 0 {
			return []byte("null"), nil
		}
		n = n.Content[0]
	}
	if err := c.value(n, 0); err != nil {
		return nil, err
	}
	return c.out.Bytes(), nil
}

type yamlConverter struct {
	out       bytes.Buffer
	aliasLine int // of the alias being expanded, outermost first; 0 outside aliases
}

func (c *yamlConverter) value(n *yamlv3.Node, depth int) error {
	if depth > yamlMaxDepth {
		return fmt.Errorf("line %d: nested more than %d deep", n.Line, yamlMaxDepth)
	}
	if c.out.Len() > yamlMaxJSON {
		line := n.Line
		if c.aliasLine > 0 {
			line = c.aliasLine // where the expansion was asked for, not the anchor
		}
		return fmt.Errorf("line %d: the document expands to more than %d MiB (aliases?)", line, yamlMaxJSON>>20)
	}
	switch n.Kind {
	case yamlv3.AliasNode:
		if c.aliasLine == 0 {
			c.aliasLine = n.Line
			defer func() { c.aliasLine = 0 }()
		}
		return c.value(n.Alias, depth+1)
	case yamlv3.SequenceNode:
		c.out.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				c.out.WriteByte(',')
			}
			if err := c.value(e, depth+1); err != nil {
				return err
			}
		}
		c.out.WriteByte(']')
		return nil
	case yamlv3.MappingNode:
		return c.mapping(n, depth)
	case yamlv3.ScalarNode:
		return c.scalar(n)
	}
	return fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// yamlPair is one key of a mapping and its value.
type yamlPair struct {
	key   string
	line  int
	value *yamlv3.Node
}

// mapping writes a mapping as an object: its own keys, then those of merge keys (<<)
// that it does not set itself.
func (c *yamlConverter) mapping(n *yamlv3.Node, depth int) error {
	pairs, err := yamlPairs(n, depth)
	if err != nil {
		return err
	}
	c.out.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			c.out.WriteByte(',')
		}
		k, _ := json.Marshal(p.key)
		c.out.Write(k)
		c.out.WriteByte(':')
		if err := c.value(p.value, depth+1); err != nil {
			return err
		}
	}
	c.out.WriteByte('}')
	return nil
}

func yamlPairs(n *yamlv3.Node, depth int) ([]yamlPair, error) {
	if depth > yamlMaxDepth {
		return nil, fmt.Errorf("line %d: nested more than %d deep", n.Line, yamlMaxDepth)
	}
	var own, merged []yamlPair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yamlv3.ScalarNode && k.ShortTag() == "!!merge" {
			m, err := yamlMerge(v, depth+1)
			if err != nil {
				return nil, err
			}
			merged = append(merged, m...)
			continue
		}
		if k.Kind != yamlv3.ScalarNode {
			return nil, fmt.Errorf("line %d: a key must be a plain value, not a list or a mapping", k.Line)
		}
		if first, dup := seen[k.Value]; dup {
			return nil, fmt.Errorf("line %d: key %q set twice (first at line %d)", k.Line, k.Value, first)
		}
		seen[k.Value] = k.Line
		own = append(own, yamlPair{k.Value, k.Line, v})
	}
	for _, p := range merged {
		if _, dup := seen[p.key]; !dup {
			seen[p.key] = p.line
			own = append(own, p)
		}
	}
	return own, nil
}

// yamlMerge is the pairs a merge key's value brings: a mapping, or a list of them, the
// earlier ones winning.
func yamlMerge(v *yamlv3.Node, depth int) ([]yamlPair, error) {
	for v.Kind == yamlv3.AliasNode {
		v = v.Alias
	}
	switch v.Kind {
	case yamlv3.MappingNode:
		return yamlPairs(v, depth)
	case yamlv3.SequenceNode:
		var out []yamlPair
		seen := map[string]bool{}
		for _, e := range v.Content {
			for e.Kind == yamlv3.AliasNode {
				e = e.Alias
			}
			if e.Kind != yamlv3.MappingNode {
				return nil, fmt.Errorf("line %d: a merge (<<) takes a mapping or a list of mappings", e.Line)
			}
			ps, err := yamlPairs(e, depth+1)
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				if !seen[p.key] {
					seen[p.key] = true
					out = append(out, p)
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: a merge (<<) takes a mapping or a list of mappings", v.Line)
}

// yaml11Bools are the plain scalars YAML 1.1 reads as booleans, beyond true and false.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

func (c *yamlConverter) scalar(n *yamlv3.Node) error {
	plain := n.Style&(yamlv3.SingleQuotedStyle|yamlv3.DoubleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) == 0
	switch n.ShortTag() {
	case "!!null":
		c.out.WriteString("null")
		return nil
	case "!!bool":
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err != nil {
			return fmt.Errorf("line %d: %q is not a boolean", n.Line, n.Value)
		}
		c.out.WriteString(strconv.FormatBool(b))
		return nil
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			c.out.WriteString(strconv.FormatInt(i, 10))
			return nil
		}
		if u, err := strconv.ParseUint(s, 0, 64); err == nil {
			c.out.WriteString(strconv.FormatUint(u, 10))
			return nil
		}
		return fmt.Errorf("line %d: integer %q out of range", n.Line, n.Value)
	case "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %q is not a number JSON can hold", n.Line, n.Value)
		}
		c.out.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		return nil
	case "!!str":
		if b, ok := yaml11Bools[n.Value]; ok && plain && n.Style&yamlv3.TaggedStyle == 0 {
			c.out.WriteString(strconv.FormatBool(b))
			return nil
		}
	}
	s, _ := json.Marshal(n.Value) // strings, timestamps, binary and custom tags: as written
	c.out.Write(s)
	return nil
}

// strictJSON decodes b into v, case-sensitively (encoding/json would take "routerId" for
// routerID) and rejecting unknown keys. Duplicate keys were rejected by yamlToJSON, on
// their line.
func strictJSON(b []byte, v any) error {
	if err := exactKeys(b, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("json: data after the value")
	}
	return nil
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
)

// exactKeys fails on the first key of an object in b (in sorted order) that is not
// exactly the name of a field of the struct that t decodes it into, with encoding/json's
// message for an unknown field and the key's path from the top (garp.delay). What is not an object where a struct is wanted is
// left for the decoder to report; types with their own UnmarshalJSON check themselves.
func exactKeys(b []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("json: unknown field %q", path+k)
			}
			if err := exactKeys(m[k], ft, path+k+"."); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var a []json.RawMessage
		if json.Unmarshal(b, &a) != nil {
			return nil
		}
		for i, e := range a {
			if err := exactKeys(e, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		for k, e := range m {
			if err := exactKeys(e, t.Elem(), path+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields adds the JSON names of t's fields to fields, those of embedded structs
// without a name of their own included, as encoding/json sees them.
func jsonFields(t reflect.Type, fields map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, fields)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
}
