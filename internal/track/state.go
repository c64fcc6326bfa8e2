package track

import (
	"errors"
	"strings"
)

// Status is what a tracker says about its check.
type Status uint8

// The statuses of a tracker.
const (
	// StatusInit: no result yet. A weighted script changes nothing; an instance with a
	// weight-0 script waits (FAULT) until it has one.
	StatusInit Status = iota
	StatusGood
	StatusFailed
	// StatusDisabled: the script was refused (enable_script_security, a user that does
	// not exist). keepalived then stops tracking it: it neither moves the priority nor
	// causes FAULT.
	StatusDisabled
)

func (s Status) String() string {
	switch s {
	case StatusInit:
		return "INIT"
	case StatusGood:
		return "GOOD"
	case StatusFailed:
		return "FAILED"
	case StatusDisabled:
		return "DISABLED"
	}
	return "UNKNOWN"
}

// State is keepalived's rise/fall counter of one script (vrrp_script_t.result): the
// script is good while result >= rise. A success counts result up to rise+fall-1, a
// failure down; crossing rise changes the status.
type State struct {
	rise, fall int
	result     int
	status     Status
}

// NewState returns the state of a script before its first result. initFail is
// keepalived's init_fail: the script starts failed and needs rise successes.
func NewState(rise, fall int, initFail bool) State {
	if rise < 1 {
		rise = 1
	}
	if fall < 1 {
		fall = 1
	}
	s := State{rise: rise, fall: fall, result: rise - 1} // one success is enough
	if initFail {
		s.result = 0
		s.status = StatusFailed
	}
	return s
}

// Status returns the script's status.
func (s State) Status() Status { return s.status }

// Observe counts one result and reports whether the status changed. It follows
// vrrp_script_child_thread: from init, the first result decides either way.
func (s *State) Observe(ok bool) bool {
	old := s.status
	if ok {
		// From init result is rise-1, so one success is enough; after a failure it
		// takes rise.
		if s.result < s.rise-1 {
			s.result++
		} else {
			s.result = s.rise + s.fall - 1
			s.status = StatusGood
		}
	} else {
		if s.result > s.rise {
			s.result--
		} else {
			s.result = 0
			s.status = StatusFailed
		}
	}
	return s.status != old
}

// Contribution is what one tracked script adds to the priority in status st, with
// keepalived's weight (-253..253) and reverse: a positive weight counts while the script
// succeeds, a negative one while it fails; reverse turns the sign around (and for weight 0,
// makes success the fault). Init and disabled scripts count nothing.
func Contribution(weight int, reverse bool, st Status) int {
	m := 1
	if reverse {
		m = -1
	}
	switch {
	case st == StatusGood && weight > 0:
		return weight * m
	case st == StatusFailed && weight < 0:
		return weight * m
	}
	return 0
}

// Faults reports whether a weight-0 tracker in status st holds its instance in FAULT:
// while failing (succeeding, with reverse), and while it has no result yet.
func Faults(reverse bool, st Status) bool {
	switch st {
	case StatusInit:
		return true
	case StatusGood:
		return reverse
	case StatusFailed:
		return !reverse
	}
	return false
}

// OwnerPriority is the address owner's priority, which tracking never changes.
const OwnerPriority = 255

// Effective returns the effective priority from the configured one and the sum of the
// contributions: clamped to 1..254, and the owner's 255 unchanged
// (vrrp_set_effective_priority).
func Effective(base uint8, sum int) uint8 {
	if base == OwnerPriority {
		return base
	}
	p := int(base) + sum
	switch {
	case p < 1:
		return 1
	case p > OwnerPriority-1:
		return OwnerPriority - 1
	}
	return uint8(p)
}

// ErrUnterminated is SplitCommand's error for a quote that does not close.
var ErrUnterminated = errors.New("missing terminating quote")

// SplitCommand splits a script value into argv as keepalived's
// alloc_strvec_quoted_escaped does: words separated by blanks, '...' and "..." quoting
// (a quote may start mid-word), and backslash escapes (\n \t \r \a \b \f \v \E, \xHH,
// octal \NNN, \cX, any other character as itself).
func SplitCommand(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("escape at end of string")
			}
			n, adv := unescape(s[i+1:])
			cur.WriteByte(n)
			i += adv
			inWord = true
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, ErrUnterminated
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// unescape decodes the escape after a backslash at the start of s: the byte and how many
// bytes of s it used.
func unescape(s string) (byte, int) {
	switch c := s[0]; {
	case c == 'x' && len(s) > 1 && isHex(s[1]):
		var v byte
		n := 1
		for n < len(s) && isHex(s[n]) {
			v = v<<4 | hexVal(s[n])
			n++
		}
		return v, n
	case c == 'c' && len(s) > 1:
		return s[1] & 0x1f, 2
	case c >= '0' && c <= '7':
		v := c - '0'
		n := 1
		for n < 3 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			v = v<<3 + s[n] - '0'
			n++
		}
		return v, n
	default:
		if e, ok := simpleEscapes[c]; ok {
			return e, 1
		}
		return c, 1
	}
}

var simpleEscapes = map[byte]byte{'a': '\a', 'b': '\b', 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
