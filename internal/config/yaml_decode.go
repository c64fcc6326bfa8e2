package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// How the YAML file is decoded: by yaml.v3 alone, in one parse. The library resolves the
// scalars (YAML 1.2's core schema, with its own YAML 1.1 compatibility: yes/no/on/off
// into a boolean key, 0144 as octal), expands aliases and merge keys (<<) with its
// limit on alias expansion, refuses a key set twice and, with KnownFields, an unknown
// key. What is ours: keeping the node tree for the lines of the checks after decoding,
// decoding each part (an instance, a script...) on its own so that an error says which
// part it is in, and the wording of the library's errors.

// yamlDoc is what the decoder fills: the document's node tree and the schema decoded
// from it. It uses yaml.v3's older Unmarshaler form, whose unmarshal function decodes
// with the decoder's own settings (KnownFields); Node.Decode would not.
type yamlDoc struct {
	root *yamlv3.Node
	file yamlFile
}

func (d *yamlDoc) UnmarshalYAML(unmarshal func(any) error) error {
	d.root = nodeOf(unmarshal)
	return unmarshal(&d.file)
}

// yamlNodeOf keeps the node it is decoded from.
type yamlNodeOf struct{ node *yamlv3.Node }

func (c *yamlNodeOf) UnmarshalYAML(n *yamlv3.Node) error {
	c.node = n
	return nil
}

// nodeOf returns the node an older-form Unmarshaler is decoding (nil for a null, for
// which the decoder calls none).
func nodeOf(unmarshal func(any) error) *yamlv3.Node {
	var n yamlNodeOf
	_ = unmarshal(&n) // never fails
	return n.node
}

// yamlPart is one part of the file that is checked on its own (defaults, an instance, a
// script...). Its decoding errors are kept, not returned, so that the part's check
// reports them with the part's name, in the order the parts are checked.
type yamlPart[T any] struct {
	v T
	// err is a *yamlv3.TypeError: keys or values of the part that do not fit T.
	err error
}

func (p *yamlPart[T]) UnmarshalYAML(unmarshal func(any) error) error {
	node := nodeOf(unmarshal)
	err := unmarshal(&p.v)
	if _, ok := err.(*yamlv3.TypeError); ok || err == nil {
		p.err = err
		return nil
	}
	// Anything else (too many aliases, a bad merge) stops the decoder, whose state it
	// leaves behind is not to be trusted: the whole file fails, at this part.
	if node == nil { // never: the decoder calls no Unmarshaler for a null
		node = &yamlv3.Node{}
	}
	return &yamlPartFailure{part: node, err: err}
}

type yamlPartFailure struct {
	part *yamlv3.Node
	err  error
}

func (e *yamlPartFailure) Error() string { return e.err.Error() }

// textOrKeys is a value written either as keepalived's line, a string (Text), or as a
// mapping of T's keys (Keys), decoded strictly: a VIP, a route, a rule.
type textOrKeys[T any] struct {
	Text string
	Keys T
}

func (v *textOrKeys[T]) UnmarshalYAML(unmarshal func(any) error) error {
	if n := nodeOf(unmarshal); n != nil && n.Kind == yamlv3.MappingNode {
		return unmarshal(&v.Keys)
	}
	return unmarshal(&v.Text)
}

// yamlLineWords are a route's or rule's keepalived words: the string's, or the mapping's.
func yamlLineWords[T interface{ words() []string }](v textOrKeys[T]) []string {
	if v.Text != "" {
		return strings.Fields(v.Text)
	}
	return v.Keys.words()
}

// yamlTypeError is the library's error for a value of the wrong kind, worded as the
// library words it, for the types that decode themselves.
func yamlTypeError(n *yamlv3.Node, goType string) error {
	value := ""
	if n.Kind == yamlv3.ScalarNode {
		value = n.Value
		if len(value) > 10 {
			value = value[:7] + "..."
		}
		value = " `" + value + "`"
	}
	return &yamlv3.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s%s into %s", n.Line, n.ShortTag(), value, goType)}}
}

// The library's messages that are reworded: an unknown key, a key set twice, a value of
// the wrong kind ("line 4: cannot unmarshal !!str `fifty` into int", the value cut to 7
// characters and "..." past 10).
var (
	yamlUnknownKey = regexp.MustCompile(`^line (\d+): field (.*) not found in type \S+$`)
	yamlDupKey     = regexp.MustCompile(`^line (\d+): mapping key (".*") already defined at line (\d+)$`)
	yamlDupField   = regexp.MustCompile(`^line (\d+): field (.*) already set in type \S+$`)
	yamlWrongType  = regexp.MustCompile("^line (\\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (\\S+)$")
	yamlBadTag     = regexp.MustCompile("cannot decode (\\S+) `(.*)` as a (\\S+)$")
)

// documentError turns an error of the decoder into an *Error at its line.
func (ix yamlIndex) documentError(err error) error {
	var pf *yamlPartFailure
	if errors.As(err, &pf) {
		msg := oneLine(pf.err.Error())
		line := pf.part.Line
		// A value that cannot have the tag written on it ("!!int x") is on its own line.
		if m := yamlBadTag.FindStringSubmatch(msg); m != nil {
			if _, n := yamlFind(pf.part, nil, func(n *yamlv3.Node, isKey bool) bool {
				return n.Style&yamlv3.TaggedStyle != 0 && n.ShortTag() == m[3] && n.Value == m[2]
			}, 0); n != nil {
				line = n.Line
			}
		}
		return &Error{Pos: Position{File: ix.file, Line: line}, Message: "YAML: " + msg}
	}
	if _, ok := err.(*yamlv3.TypeError); ok {
		return ix.decodeError(err, nil, "")
	}
	// A syntax error: "yaml: line 3: mapping values are not allowed in this context".
	msg := oneLine(err.Error())
	pos := Position{File: ix.file, Line: ix.root.Line}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
	}
	return &Error{Pos: pos, Message: "YAML: " + msg}
}

// oneLine joins the lines of a library error.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// decodeError words the first of the decoding errors (a *yamlv3.TypeError) of the part at
// path, on its line, and says which part it is in (what; "" at the top level).
func (ix yamlIndex) decodeError(err error, path []any, what string) error {
	part, line := ix.node(path...)
	msg := oneLine(err.Error())
	if te, ok := err.(*yamlv3.TypeError); ok && len(te.Errors) > 0 {
		msg = te.Errors[0]
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
	}
	switch m := (yamlErrorMatch{}); {
	case m.find(yamlDupKey, msg):
		// A YAML error, not one of the part: said as for a syntax error.
		key, _ := strconv.Unquote(m[2])
		return &Error{Pos: Position{File: ix.file, Line: line},
			Message: fmt.Sprintf("YAML: line %d: key %q set twice (first at line %s)", line, key, m[3])}
	case m.find(yamlDupField, msg):
		return &Error{Pos: Position{File: ix.file, Line: line},
			Message: fmt.Sprintf("YAML: line %d: key %q set twice", line, m[2])}
	case m.find(yamlUnknownKey, msg):
		key := m[2]
		// As the keys of one mapping would be written, from the part or the nearest list
		// item: garp.delay, unicast.Peers.
		if p, ok := ix.find(part, func(n *yamlv3.Node, isKey bool) bool {
			return isKey && n.Line == line && n.Value == key
		}); ok {
			key = strings.Join(keysSinceList(p), ".")
		}
		msg = fmt.Sprintf("unknown key %q", key)
	case m.find(yamlWrongType, msg):
		tag, value, goType := m[2], m[3], m[4]
		p, ok := ix.find(part, func(n *yamlv3.Node, isKey bool) bool {
			return !isKey && n.Line == line && n.ShortTag() == tag && valueMatches(n, value)
		})
		if keys := keysOf(p); ok && len(keys) > 0 {
			msg = fmt.Sprintf("key %q: want %s, not %s", keys[len(keys)-1], yamlKind(goType), yamlTagKind(tag))
		} else {
			msg = fmt.Sprintf("want %s, not %s", yamlKind(goType), yamlTagKind(tag))
		}
	default:
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if what != "" {
		msg = what + ": " + msg
	}
	return &Error{Pos: Position{File: ix.file, Line: line}, Message: msg}
}

// yamlErrorMatch holds the groups of the last regexp matched.
type yamlErrorMatch []string

func (m *yamlErrorMatch) find(re *regexp.Regexp, s string) bool {
	*m = re.FindStringSubmatch(s)
	return *m != nil
}

// valueMatches reports whether n is the value a type error quoted (cut as the library
// cuts it; nothing is quoted for a list or a mapping).
func valueMatches(n *yamlv3.Node, quoted string) bool {
	if n.Kind != yamlv3.ScalarNode {
		return true
	}
	if cut, ok := strings.CutSuffix(quoted, "..."); ok && len(n.Value) > 10 {
		return strings.HasPrefix(n.Value, cut)
	}
	return n.Value == quoted
}

// find returns the path (map keys and list indexes) to the first node under part, then
// anywhere in the document, that match accepts; isKey tells a mapping's key from a value.
// Aliases are not followed: a node reached through one is found where its anchor is.
func (ix yamlIndex) find(part *yamlv3.Node, match func(n *yamlv3.Node, isKey bool) bool) ([]any, bool) {
	for _, n := range []*yamlv3.Node{part, ix.root} {
		if p, found := yamlFind(n, nil, match, 0); found != nil {
			return p, true
		}
	}
	return nil, false
}

// yamlMaxDepth bounds the recursion of yamlFind and yamlEmptyItem; yaml.v3 refuses
// documents nested deeper than 10,000 levels itself.
const yamlMaxDepth = 10000

// yamlFind returns the first node under n that match accepts, and its path from n.
func yamlFind(n *yamlv3.Node, path []any, match func(*yamlv3.Node, bool) bool, depth int) ([]any, *yamlv3.Node) {
	if n == nil || depth > yamlMaxDepth {
		return nil, nil
	}
	if match(n, false) {
		return path, n
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			if p, f := yamlFind(c, path, match, depth+1); f != nil {
				return p, f
			}
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			if p, f := yamlFind(c, append(path[:len(path):len(path)], i), match, depth+1); f != nil {
				return p, f
			}
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := append(path[:len(path):len(path)], k.Value)
			if match(k, true) {
				return kp, k
			}
			if p, f := yamlFind(v, kp, match, depth+1); f != nil {
				return p, f
			}
		}
	}
	return nil, nil
}

// keysOf returns the map keys of a path.
func keysOf(path []any) []string {
	var keys []string
	for _, p := range path {
		if k, ok := p.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// keysSinceList returns the map keys of a path after its last list index.
func keysSinceList(path []any) []string {
	for i := len(path) - 1; i >= 0; i-- {
		if _, ok := path[i].(int); ok {
			return keysOf(path[i+1:])
		}
	}
	return keysOf(path)
}

// yamlEmptyItem returns the line of the first list item under n that is empty (null),
// or 0. The decoder drops such an item from a list, which would shift the items after it
// against the lines of the node tree; an empty item is a mistake besides.
func yamlEmptyItem(n *yamlv3.Node, depth int) int {
	if n == nil || depth > yamlMaxDepth {
		return 0
	}
	for _, c := range n.Content {
		if n.Kind == yamlv3.SequenceNode {
			t := c
			for i := 0; t.Kind == yamlv3.AliasNode && t.Alias != nil && i < 100; i++ {
				t = t.Alias
			}
			if t.Kind == yamlv3.ScalarNode && t.ShortTag() == "!!null" {
				return c.Line
			}
		}
		if l := yamlEmptyItem(c, depth+1); l > 0 {
			return l
		}
	}
	return 0
}

// yamlKind names a Go type of the schema the way a YAML author thinks of it.
func yamlKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "an integer"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	case goType == "config.yamlDuration":
		return "a duration"
	case goType == "config.yamlWord":
		return "a string or a number"
	}
	return "a mapping"
}

// yamlTagKind names what a YAML tag says a value is.
func yamlTagKind(tag string) string {
	switch tag {
	case "!!str":
		return "string"
	case "!!int", "!!float":
		return "number"
	case "!!bool":
		return "bool"
	case "!!seq":
		return "list"
	case "!!map":
		return "mapping"
	case "!!null":
		return "null"
	}
	return tag
}
