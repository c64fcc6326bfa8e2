package config

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
)

// This file is keepalived's configuration preprocessor (lib/parser.c, read_line and its
// helpers), which runs on each line before it is split into words:
//
//   - comments: '#' or '!' outside double quotes starts one, "\#" and "\!" are the
//     characters themselves;
//   - "@ID line" keeps the line only on the router whose config id is ID, "@^ID line"
//     only on the others (keepalived -i / --config-id, by default the host name up to
//     its first dot);
//   - "$NAME=value" defines a parameter; a value ending in '\' continues on the next
//     lines (a multi-line definition), up to a line without one, an empty line or a
//     comment line;
//   - "$NAME" and "${NAME}" elsewhere are replaced by the value, again and again while
//     the result holds a '$' that names a parameter; a multi-line value only where the
//     reference ends the line, its other lines following as lines of their own;
//   - "~SEQ(VAR, start, end)" / "~SEQ(VAR, start, step, end)" / "~SEQ(VAR, end)" repeats
//     the rest of the line with $VAR set to each number ("~SEQx" writes them in hex),
//     "~LST(VAR, a, b)" / "~LST({A, B}, {a1, b1}, {a2, b2})" with each value (set);
//   - the built-in parameters $_INSTANCE (the config id), $_PWD (the directory of the
//     file being read), $_HASH ("#"), $_BANG ("!") and ${_RANDOM [min [max]]}.
//
// A generated line keeps the file:line of the line it came from, so errors still point
// at what the admin wrote.

// Bounds that keepalived does not have: a parameter defined by itself ($A=$A) or a ~SEQ
// over a billion numbers would make it loop or grow without end; here they are errors.
const (
	// maxSubstitutions bounds the parameter replacements in one line.
	maxSubstitutions = 1000
	// maxLineLength bounds a line after substitution: keepalived reads lines of at most
	// 1023 bytes (MAXBUF), so four times that loses nothing keepalived runs.
	maxLineLength = 4 << 10
	// maxSeqDepth bounds nested ~SEQ.
	maxSeqDepth = 8
	// seqRoundCost is what one ~SEQ round costs of the expansion budget besides its text.
	seqRoundCost = 32
)

// definition is one parameter's value, one string per line of a multi-line definition.
type definition struct {
	lines []string
	// builtin computes the value each time it is used ($_RANDOM, $_PWD); params are
	// its arguments ("${_RANDOM 1 6}").
	builtin   func(params []uint64) string
	maxParams int
}

func (d *definition) multiline() bool { return len(d.lines) > 1 }

// preprocessor carries keepalived's parameters across the lines and files of one
// configuration.
type preprocessor struct {
	configID string
	defs     map[string]*definition
	// cont is the multi-line definition being read, nil outside one.
	cont *definition
	// dir is the directory of the file being read, for $_PWD.
	dir string
	// emit receives each line the preprocessor lets through.
	emit func(text string, pos Position) error
	// warn receives warnings.
	warn func(pos Position, msg string)
	// budget is how many bytes of generated text may still come out.
	budget int64
}

func newPreprocessor(configID string, budget int64, emit func(string, Position) error, warn func(Position, string)) *preprocessor {
	p := &preprocessor{configID: configID, emit: emit, warn: warn, budget: budget, defs: map[string]*definition{}}
	p.defs["_INSTANCE"] = &definition{lines: []string{configID}}
	p.defs["_HASH"] = &definition{lines: []string{"#"}}
	p.defs["_BANG"] = &definition{lines: []string{"!"}}
	p.defs["_PWD"] = &definition{builtin: func([]uint64) string { return p.dir }}
	p.defs["_RANDOM"] = &definition{maxParams: 2, builtin: func(ps []uint64) string {
		lo, hi := uint64(0), uint64(32767)
		if len(ps) > 0 {
			lo = ps[0]
		}
		if len(ps) > 1 {
			hi = ps[1]
		}
		if hi < lo {
			return strconv.FormatUint(lo, 10)
		}
		if hi-lo == math.MaxUint64 { // the whole range: hi-lo+1 would wrap to 0
			return strconv.FormatUint(rand.Uint64(), 10)
		}
		return strconv.FormatUint(lo+rand.Uint64N(hi-lo+1), 10)
	}}
	return p
}

// startFile is called before the lines of a file: $_PWD follows it. A multi-line
// definition does not run on into an included file.
func (p *preprocessor) startFile(name string) (restore func()) {
	saved := p.dir
	p.dir = filepath.Dir(name)
	if abs, err := filepath.Abs(p.dir); err == nil {
		p.dir = abs
	}
	p.cont = nil
	return func() { p.dir = saved; p.cont = nil }
}

// line takes one raw line of a file.
func (p *preprocessor) line(raw string, pos Position) error {
	text := decomment(strings.TrimRight(raw, "\r"))
	if text == "" {
		// An empty line ends a multi-line definition, and so does a line that is only
		// a comment: keepalived's parent writes a copy of the configuration without
		// comments for the VRRP process to read, and there it is an empty line.
		p.cont = nil
		return nil
	}
	if d := p.cont; d != nil {
		more := strings.HasSuffix(text, `\`)
		if more {
			text = strings.TrimRight(strings.TrimSuffix(text, `\`), " \t")
		} else {
			p.cont = nil
		}
		if text != "" {
			if d.lines[0] == "" && len(d.lines) == 1 {
				d.lines[0] = text
			} else {
				d.lines = append(d.lines, text)
			}
		}
		return nil
	}
	return p.process(text, pos, 0)
}

// process runs one decommented line through the conditional, definition, ~SEQ and
// substitution steps, and emits what comes out.
func (p *preprocessor) process(text string, pos Position, depth int) error {
	var after []string // lines of a multi-line value, to follow this one
	for range maxSubstitutions {
		if strings.HasPrefix(text, "@") {
			var keep bool
			if text, keep = p.conditional(text); !keep {
				return p.followers(after, pos, depth)
			}
		}
		if name, value, ok := parseDefinition(text); ok {
			d := &definition{lines: []string{value}}
			if strings.HasSuffix(value, `\`) {
				d.lines[0] = strings.TrimRight(strings.TrimSuffix(value, `\`), " \t")
				p.cont = d
			}
			p.defs[name] = d
			return p.followers(after, pos, depth)
		}
		if strings.HasPrefix(text, "~SEQ") {
			if err := p.seq(text, pos, depth); err != nil {
				return err
			}
			return p.followers(after, pos, depth)
		}
		if strings.HasPrefix(text, "~LST") {
			if err := p.lst(text, pos, depth); err != nil {
				return err
			}
			return p.followers(after, pos, depth)
		}
		if strings.HasPrefix(text, "~") || !strings.Contains(text, "$") {
			break
		}
		out, more, changed, err := p.substitute(text)
		if err != nil {
			return &Error{Pos: pos, Message: err.Error()}
		}
		if !changed {
			break
		}
		after = append(more, after...)
		if text = decomment(out); text == "" {
			return p.followers(after, pos, depth)
		}
		if !strings.HasPrefix(text, "@") && !strings.HasPrefix(text, "~SEQ") && !strings.Contains(text, "$") {
			break
		}
	}
	if err := p.out(text, pos); err != nil {
		return err
	}
	return p.followers(after, pos, depth)
}

// followers processes the remaining lines of a multi-line parameter value.
func (p *preprocessor) followers(lines []string, pos Position, depth int) error {
	for _, l := range lines {
		if err := p.process(l, pos, depth); err != nil {
			return err
		}
	}
	return nil
}

func (p *preprocessor) out(text string, pos Position) error {
	p.budget -= int64(len(text)) + 1
	if p.budget < 0 {
		return &Error{Pos: pos, Message: fmt.Sprintf("the configuration expands to more than %d bytes (parameters, ~SEQ)", maxConfigBytes)}
	}
	p.undefined(text, pos)
	return p.emit(text, pos)
}

// undefined warns about a "$NAME" left in a line outside quotes: keepalived keeps it as
// it is, so "interface $IF" with $IF never defined (or defined on an "@other" line)
// names an interface called "$IF".
func (p *preprocessor) undefined(text string, pos Position) {
	quote := false
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '"':
			quote = !quote
		case '$':
			if quote {
				continue
			}
			name, _, _, ok := reference(text[i+1:])
			switch {
			case !ok:
			case p.defs[name] != nil:
				p.warn(pos, fmt.Sprintf("parameter $%s has several lines, which keepalived only puts at the end of a line; the text %q is used as it is", name, "$"+name))
			default:
				p.warn(pos, fmt.Sprintf("parameter $%s is not defined; the text %q is used as it is, as keepalived does", name, "$"+name))
			}
		}
	}
}

// conditional handles "@ID rest" and "@^ID rest": it returns rest and whether the line
// applies to this router. A line with nothing after the id is dropped, as keepalived
// does.
func (p *preprocessor) conditional(text string) (string, bool) {
	id, invert := text[1:], false
	if strings.HasPrefix(id, "^") {
		id, invert = id[1:], true
	}
	sp := strings.IndexAny(id, " \t")
	if sp < 0 {
		return "", false
	}
	rest := strings.TrimLeft(id[sp:], " \t")
	id = id[:sp]
	if (id == p.configID) == invert {
		return "", false
	}
	return rest, true
}

// parseDefinition recognises "$NAME=value", blanks allowed after the '=' but not before
// it: keepalived reads "$NAME = value" as a line whose keyword is "$NAME".
func parseDefinition(text string) (name, value string, ok bool) {
	if len(text) < 2 || text[0] != '$' || !isNameStart(text[1]) {
		return "", "", false
	}
	i := 2
	for i < len(text) && isNameChar(text[i]) {
		i++
	}
	if i == len(text) || text[i] != '=' {
		return "", "", false
	}
	return text[1:i], strings.TrimLeft(text[i+1:], " \t"), true
}

func isNameStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isNameChar(c byte) bool { return isNameStart(c) || ('0' <= c && c <= '9') }

// reference finds the parameter named at s (just after a '$'): "NAME" followed by a blank,
// ',', ')' or the end, or "{NAME}" / "{NAME 1 2}". It returns the name, the parameters,
// and how many bytes of s the reference takes.
func reference(s string) (name string, params []uint64, n int, ok bool) {
	braces := strings.HasPrefix(s, "{")
	i := 0
	if braces {
		i = 1
	}
	if i >= len(s) || !isNameStart(s[i]) {
		return "", nil, 0, false
	}
	j := i + 1
	for j < len(s) && isNameChar(s[j]) {
		j++
	}
	name = s[i:j]
	if !braces {
		if j < len(s) && !strings.ContainsRune(" \t,)", rune(s[j])) {
			return "", nil, 0, false
		}
		return name, nil, j, true
	}
	end := strings.IndexByte(s[j:], '}')
	if end < 0 {
		return "", nil, 0, false
	}
	args := s[j : j+end]
	if args != "" {
		// keepalived allows only blanks and digits here, and not ending in a blank.
		if args[0] != ' ' || strings.HasSuffix(args, " ") || strings.Trim(args, " 0123456789") != "" {
			return "", nil, 0, false
		}
		for _, f := range strings.Fields(args) {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return "", nil, 0, false
			}
			params = append(params, v)
		}
	}
	return name, params, j + end + 1, true
}

// substitute replaces the parameters in text, as keepalived's replace_param does: the
// scan goes on from the start of each replacement, so a value naming another parameter
// is expanded too; it stops after a value that starts with '~' (a ~SEQ kept in a
// parameter), whose own references belong to the ~SEQ. A multi-line value may only end
// the line: its first line replaces the reference, the others come back in more.
func (p *preprocessor) substitute(text string) (out string, more []string, changed bool, err error) {
	n := 0
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], '$')
		if k < 0 {
			break
		}
		i += k
		name, params, l, ok := reference(text[i+1:])
		d := p.defs[name]
		if !ok || d == nil || (d.multiline() && i+1+l != len(text)) || (len(params) > 0 && d.maxParams == 0) {
			i++
			continue
		}
		if n++; n > maxSubstitutions {
			return "", nil, false, fmt.Errorf("parameter substitution does not end (a parameter defined by itself?)")
		}
		var value string
		switch {
		case d.builtin != nil:
			value = d.builtin(params)
		case len(d.lines) > 0:
			value = d.lines[0]
			if d.multiline() {
				more = append(append([]string(nil), d.lines[1:]...), more...)
			}
		}
		text = text[:i] + value + text[i+1+l:]
		changed = true
		if len(text) > maxLineLength {
			return "", nil, false, fmt.Errorf("parameter substitution makes the line longer than %d bytes", maxLineLength)
		}
		// Each replacement copies the line: that work counts too, so that lines of
		// a thousand references each stay cheap.
		if p.budget -= int64(len(text)); p.budget < 0 {
			return "", nil, false, fmt.Errorf("the configuration expands to more than %d bytes (parameters, ~SEQ)", maxConfigBytes)
		}
		if strings.HasPrefix(strings.TrimLeft(value, " \t"), "~") {
			break
		}
	}
	return text, more, changed, nil
}

// seq expands "~SEQ(VAR, ...) text": text once per number, with $VAR set to it.
func (p *preprocessor) seq(text string, pos Position, depth int) error {
	fail := func(format string, a ...any) error {
		return &Error{Pos: pos, Message: fmt.Sprintf(format, a...)}
	}
	if depth >= maxSeqDepth {
		return fail("~SEQ nested more than %d deep", maxSeqDepth)
	}
	s := text[len("~SEQ"):]
	hex := strings.HasPrefix(s, "x")
	if hex {
		s = s[1:]
	}
	s = strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(s, "(") {
		return fail("invalid ~SEQ %q: want ~SEQ(VAR, start, end) text", text)
	}
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return fail("invalid ~SEQ %q: no closing ')'", text)
	}
	body, rest := s[1:end], strings.TrimLeft(s[end+1:], " \t")
	// Parameters may give the numbers: ~SEQ(i, $FIRST, $LAST).
	if strings.Contains(body, "$") {
		b, more, _, err := p.substitute(body)
		if err != nil || len(more) > 0 {
			return fail("invalid ~SEQ %q: its numbers are not single-line parameters", text)
		}
		body = b
	}
	parts := strings.Split(body, ",")
	name := strings.TrimSpace(parts[0])
	if name == "" || len(parts) < 2 || len(parts) > 4 || strings.ContainsAny(name, " \t") {
		return fail("invalid ~SEQ %q: want ~SEQ(VAR, start, end) or ~SEQ(VAR, start, step, end)", text)
	}
	var nums []int64
	for _, f := range parts[1:] {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 0, 64)
		if err != nil {
			return fail("invalid ~SEQ %q: %q is not a number", text, strings.TrimSpace(f))
		}
		nums = append(nums, v)
	}
	var first, step, last int64
	switch len(nums) {
	case 1: // ~SEQ(VAR, end): 1..end, or -1..end downwards
		last, step, first = nums[0], 1, 1
		if last < 1 {
			step = -1
		}
		if last < 0 {
			first = -1
		}
	case 2:
		first, last, step = nums[0], nums[1], 1
		if first > last {
			step = -1
		}
	case 3:
		first, step, last = nums[0], nums[1], nums[2]
		if step == 0 || (first < last && step < 0) || (first > last && step > 0) {
			return fail("invalid ~SEQ values %q: the step must go from start towards end", text)
		}
	}
	if hex && (first < 0 || last < 0) {
		return fail("~SEQx %q is only valid for positive numbers", text)
	}
	for v := first; (step > 0 && v <= last) || (step < 0 && v >= last); v += step {
		val := strconv.FormatInt(v, 10)
		if hex {
			val = strconv.FormatInt(v, 16)
		}
		if err := p.round(rest, pos, depth, []string{name}, []string{val}); err != nil {
			return err
		}
		if v+step < v == (step > 0) { // overflow
			break
		}
	}
	return nil
}

// round is one repetition of a ~SEQ or ~LST: names set to values, then text.
func (p *preprocessor) round(text string, pos Position, depth int, names, values []string) error {
	// Each round costs budget even when it emits nothing, so an empty text over a huge
	// range ends quickly: at most 512 Ki rounds in all.
	if p.budget -= int64(len(text)) + seqRoundCost; p.budget < 0 {
		return &Error{Pos: pos, Message: fmt.Sprintf("the configuration expands to more than %d bytes (parameters, ~SEQ)", maxConfigBytes)}
	}
	for i, n := range names {
		v := ""
		if i < len(values) {
			v = values[i]
		}
		p.defs[n] = &definition{lines: []string{v}}
	}
	return p.process(text, pos, depth+1)
}

// lst expands "~LST(VAR, v1, v2, ...) text" and "~LST({A, B}, {a1, b1}, {a2, b2}) text":
// text once per value (set), with the parameters set to it; a set with fewer values
// than parameters leaves the rest empty, as keepalived does.
func (p *preprocessor) lst(text string, pos Position, depth int) error {
	fail := func(format string, a ...any) error {
		return &Error{Pos: pos, Message: fmt.Sprintf(format, a...)}
	}
	if depth >= maxSeqDepth {
		return fail("~LST nested more than %d deep", maxSeqDepth)
	}
	s := strings.TrimLeft(text[len("~LST"):], " \t")
	end := strings.IndexByte(s, ')')
	if !strings.HasPrefix(s, "(") || end < 0 {
		return fail("invalid ~LST %q: want ~LST(VAR, value, ...) or ~LST({VAR, ...}, {value, ...}, ...) text", text)
	}
	groups, ok := listGroups(s[1:end])
	if !ok || len(groups) < 2 {
		return fail("invalid ~LST %q: want ~LST(VAR, value, ...) or ~LST({VAR, ...}, {value, ...}, ...) text", text)
	}
	names := groups[0]
	for _, n := range names {
		if n == "" || !isNameStart(n[0]) || strings.IndexFunc(n, func(r rune) bool { return r > 0x7f || !isNameChar(byte(r)) }) >= 0 {
			return fail("invalid ~LST %q: %q is not a parameter name", text, n)
		}
	}
	rest := strings.TrimLeft(s[end+1:], " \t")
	for _, values := range groups[1:] {
		if len(values) > len(names) {
			return fail("invalid ~LST %q: a set has more values than there are parameters", text)
		}
		if err := p.round(rest, pos, depth, names, values); err != nil {
			return err
		}
	}
	return nil
}

// listGroups splits "a, b" or "{a, b}, {c, d}, e" into groups of words.
func listGroups(s string) ([][]string, bool) {
	var out [][]string
	s = strings.TrimSpace(s)
	for {
		var g []string
		if strings.HasPrefix(s, "{") {
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return nil, false
			}
			for _, f := range strings.Split(s[1:end], ",") {
				g = append(g, strings.TrimSpace(f))
			}
			s = strings.TrimLeft(s[end+1:], " \t")
		} else {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				i = len(s)
			}
			g = []string{strings.TrimSpace(s[:i])}
			s = s[i:]
		}
		out = append(out, g)
		if s == "" {
			return out, true
		}
		if s[0] != ',' {
			return nil, false
		}
		s = strings.TrimSpace(s[1:])
	}
}

// decomment removes a comment ('#' or '!' outside double quotes, to the end of the line),
// the backslash of "\#" and "\!", and leading and trailing blanks, keeping a final '\'
// (a continued definition), as keepalived's decomment does.
func decomment(s string) string {
	s = strings.TrimLeft(s, " \t")
	var b strings.Builder
	quote, cont := false, false
	cut := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			if cut < 0 {
				quote = !quote
			}
		case c == '\\':
			if i+1 == len(s) {
				cont = true
				continue
			}
			if !quote && (s[i+1] == '#' || s[i+1] == '!') {
				i++
				c = s[i]
			} else {
				b.WriteByte(c)
				i++
				c = s[i]
			}
		case (c == '#' || c == '!') && !quote && cut < 0:
			cut = b.Len()
		}
		b.WriteByte(c)
	}
	out := b.String()
	if cut >= 0 {
		out = out[:cut]
	}
	out = strings.TrimRight(out, " \t")
	if cont {
		out += `\`
	}
	return out
}
