package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/regularfile"
)

// item is one element of a keepalived.conf token stream after includes are expanded: a
// statement (a keyword and its values, from one line) or an opening or closing brace.
type item struct {
	kind  itemKind
	pos   Position
	words []string // itemStatement only: the keyword first
}

type itemKind uint8

const (
	itemStatement itemKind = iota
	itemOpen
	itemClose
)

// maxIncludeDepth bounds nested includes; keepalived has no cycle check of its own, we
// prefer a clear error to a stack overflow.
const maxIncludeDepth = 8

// maxConfigBytes bounds a whole keepalived.conf: the bytes of all its files together, and
// separately the text its parameters and ~SEQ lines expand to. keepalived has no such
// bound, and an include glob can match anything (a log, a dump). A real configuration
// is a few kilobytes; the largest we know of, 512 instances with scripts, is under
// 200 KiB. 16 MiB is eighty times that, and still bounds what a load can cost: the
// parsed tree takes a few times the text, well under the daemon's memory limit, and
// parsing it takes well under a second.
const maxConfigBytes = 16 << 20

// lexer turns keepalived.conf files into items, following include. Each file is read
// once: a glob that matches a file already read, or a second include of it, is skipped
// with a warning, so the work a configuration can cause is bounded by the bytes of its
// distinct files.
type lexer struct {
	items    []item
	warnings []Warning
	files    []string
	stack    []string // files being read, to detect include cycles
	seen     []seenFile
	total    int64 // bytes of all files read so far
	pp       *preprocessor
}

// seenFile is a file already read, and where (the include that pulled it in).
type seenFile struct {
	info os.FileInfo
	name string
	from Position
}

func newLexer(configID string) *lexer {
	lx := &lexer{}
	lx.pp = newPreprocessor(configID, maxConfigBytes, lx.line, func(pos Position, msg string) {
		lx.warnings = append(lx.warnings, Warning{Pos: pos, Message: msg})
	})
	return lx
}

// lexFile reads path and appends its items. from is the position of the include that
// pulled it in (zero for the main file).
func (lx *lexer) lexFile(path string, from Position) error {
	for _, f := range lx.stack {
		if f == path {
			return &Error{Pos: from, Message: fmt.Sprintf("include cycle: %s includes itself", path)}
		}
	}
	if len(lx.stack) >= maxIncludeDepth {
		return &Error{Pos: from, Message: fmt.Sprintf("includes nested more than %d deep", maxIncludeDepth)}
	}
	if st, err := os.Stat(path); err == nil {
		for _, s := range lx.seen {
			if os.SameFile(s.info, st) && slices.Contains(lx.stack, s.name) {
				return &Error{Pos: from, Message: fmt.Sprintf("include cycle: %s includes itself", path)}
			}
			if os.SameFile(s.info, st) {
				where := "as the main file"
				if s.from.File != "" {
					where = "by the include at " + s.from.String()
				}
				lx.warnings = append(lx.warnings, Warning{Pos: from, Message: fmt.Sprintf("include: %s was already read (%s); not read again", path, where)})
				return nil
			}
		}
	}
	data, err := readConfigFile(path, maxConfigBytes-lx.total)
	if err != nil {
		if from.File == "" {
			return err
		}
		return &Error{Pos: from, Message: fmt.Sprintf("include: %v", err)}
	}
	return lx.lexData(path, data, from)
}

// readConfigFile reads a regular file of at most limit bytes. An include glob can match
// anything, and reading /dev/zero or a FIFO would never end.
func readConfigFile(path string, limit int64) ([]byte, error) {
	data, err := regularfile.Read(path, limit)
	if errors.Is(err, regularfile.ErrTooLarge) {
		return nil, fmt.Errorf("%s: the configuration's files together are larger than %d bytes", path, maxConfigBytes)
	}
	return data, err
}

// lexData splits data, read from file name (included at from, or the main file), into
// items, through keepalived's preprocessor.
func (lx *lexer) lexData(name string, data []byte, from Position) error {
	lx.total += int64(len(data))
	if lx.total > maxConfigBytes {
		return &Error{Pos: from, Message: fmt.Sprintf("%s: the configuration's files together are larger than %d bytes", name, maxConfigBytes)}
	}
	if st, err := os.Stat(name); err == nil {
		lx.seen = append(lx.seen, seenFile{info: st, name: name, from: from})
	}
	lx.files = append(lx.files, name)
	lx.stack = append(lx.stack, name)
	restore := lx.pp.startFile(name)
	defer func() {
		restore()
		lx.stack = lx.stack[:len(lx.stack)-1]
	}()
	for i, text := range strings.Split(string(data), "\n") {
		if err := lx.pp.line(text, Position{File: name, Line: i + 1}); err != nil {
			return err
		}
	}
	return nil
}

// line takes one line out of the preprocessor: an include, or statements.
func (lx *lexer) line(text string, pos Position) error {
	tokens, err := splitLine(text)
	if err != nil {
		return &Error{Pos: pos, Message: err.Error()}
	}
	if len(tokens) > 0 && isInclude(tokens[0]) {
		return lx.include(lx.stack[len(lx.stack)-1], pos, tokens[1:])
	}
	lx.addLine(pos, tokens)
	return nil
}

// isInclude recognises include and keepalived 2.2's includer, includem, includew,
// includeb and includea, which differ only in what they report about missing files.
func isInclude(word string) bool {
	return word == "include" || (len(word) == len("include")+1 && strings.HasPrefix(word, "include") && strings.ContainsRune("rmwba", rune(word[7])))
}

// addLine turns one line's tokens into items. Braces end a statement, so that
// "global_defs { router_id h1" is the statement global_defs, a brace, and the statement
// router_id h1, as keepalived reads it.
func (lx *lexer) addLine(pos Position, tokens []string) {
	var words []string
	flush := func() {
		if len(words) > 0 {
			lx.items = append(lx.items, item{kind: itemStatement, pos: pos, words: words})
			words = nil
		}
	}
	for _, t := range tokens {
		switch t {
		case "{":
			flush()
			lx.items = append(lx.items, item{kind: itemOpen, pos: pos})
		case "}":
			flush()
			lx.items = append(lx.items, item{kind: itemClose, pos: pos})
		default:
			words = append(words, t)
		}
	}
	flush()
}

// include expands "include PATTERN": a glob, relative to the directory of the including
// file, whose matches are read in sorted order as keepalived does.
func (lx *lexer) include(name string, pos Position, args []string) error {
	if len(args) == 0 {
		return &Error{Pos: pos, Message: "include needs a file name or pattern"}
	}
	if len(args) > 1 {
		lx.warnings = append(lx.warnings, Warning{Pos: pos, Message: fmt.Sprintf("include takes one pattern; ignoring %q", strings.Join(args[1:], " "))})
	}
	pattern := args[0]
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(name), pattern)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return &Error{Pos: pos, Message: fmt.Sprintf("include %q: bad pattern: %v", args[0], err)}
	}
	if len(matches) == 0 {
		// keepalived logs "No config files matched" and goes on.
		lx.warnings = append(lx.warnings, Warning{Pos: pos, Message: fmt.Sprintf("include %q matches no files", args[0])})
		return nil
	}
	sort.Strings(matches)
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			continue
		}
		if err := lx.lexFile(m, pos); err != nil {
			return err
		}
	}
	return nil
}

// splitLine splits one line into tokens: words separated by blanks, "{" and "}" as tokens
// of their own, "quoted strings" as one token without the quotes. Comments are gone by
// now (decomment), and a '#' or '!' left is one the admin escaped.
func splitLine(line string) ([]string, error) {
	var tokens []string
	i := 0
	for i < len(line) {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '{' || c == '}':
			tokens = append(tokens, string(c))
			i++
		case c == '"':
			end := strings.IndexByte(line[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted string")
			}
			tokens = append(tokens, line[i+1:i+1+end])
			i += end + 2
		default:
			j := i
			for j < len(line) && !strings.ContainsRune(" \t\r\f\v{}\"", rune(line[j])) {
				j++
			}
			tokens = append(tokens, line[i:j])
			i = j
		}
	}
	return tokens, nil
}

// node is a statement with its block, if it has one.
type node struct {
	pos      Position
	words    []string
	hasBlock bool
	children []node
}

func (n node) key() string    { return n.words[0] }
func (n node) args() []string { return n.words[1:] }

// buildTree nests items into statements with blocks. A "{" belongs to the statement just
// before it, on the same line or the line before.
func buildTree(items []item) ([]node, error) {
	var root []node
	type frame struct {
		children []node
		parent   node
	}
	var stack []frame
	cur := &root
	for i := 0; i < len(items); i++ {
		it := items[i]
		switch it.kind {
		case itemStatement:
			*cur = append(*cur, node{pos: it.pos, words: it.words})
		case itemOpen:
			if len(*cur) == 0 || (*cur)[len(*cur)-1].hasBlock || (i > 0 && items[i-1].kind != itemStatement) {
				return nil, &Error{Pos: it.pos, Message: "unexpected \"{\" without a keyword before it"}
			}
			parent := (*cur)[len(*cur)-1]
			*cur = (*cur)[:len(*cur)-1]
			parent.hasBlock = true
			stack = append(stack, frame{children: *cur, parent: parent})
			var children []node
			cur = &children
		case itemClose:
			if len(stack) == 0 {
				return nil, &Error{Pos: it.pos, Message: "unexpected \"}\" with no block open"}
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			f.parent.children = *cur
			outer := append(f.children, f.parent)
			cur = &outer
		}
	}
	if len(stack) > 0 {
		open := stack[len(stack)-1].parent
		return nil, &Error{Pos: open.pos, Message: fmt.Sprintf("missing \"}\": block of %q opened here is never closed", open.key())}
	}
	return *cur, nil
}
