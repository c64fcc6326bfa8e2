package keyword

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Statement is one keyword and its values: a keepalived.conf line "key arg arg", or one
// entry of a KeepalivedGroup's verbatim map. Its readers are the one parser of each kind
// of value; their errors and notes name the keyword (Key) but no position, which the
// caller adds.
type Statement struct {
	Key   string
	Args  []string
	Notes []string // warnings: values adjusted or ignored
}

// Note adds a warning about a value adjusted or ignored.
func (s *Statement) Note(format string, a ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, a...))
}

// One returns the single value.
func (s *Statement) One() (string, error) {
	if len(s.Args) == 0 {
		return "", fmt.Errorf("%s needs a value", s.Key)
	}
	if len(s.Args) > 1 {
		s.Note("%s takes one value; ignoring %q", s.Key, strings.Join(s.Args[1:], " "))
	}
	return s.Args[0], nil
}

// NoValue notes values given to a keyword that takes none.
func (s *Statement) NoValue() {
	if len(s.Args) > 0 {
		s.Note("%s takes no value; ignoring %q", s.Key, strings.Join(s.Args, " "))
	}
}

// Flag reads keepalived's optional boolean (check_true_false): no value means true,
// else true/on/yes or false/off/no, exactly as written.
func (s *Statement) Flag() (bool, error) {
	if len(s.Args) == 0 {
		return true, nil
	}
	v, err := s.One()
	if err != nil {
		return false, err
	}
	switch v {
	case "true", "on", "yes":
		return true, nil
	case "false", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%s %q is not a boolean (true, on, yes, false, off or no)", s.Key, v)
}

// Uint reads a whole number in lo..hi.
func (s *Statement) Uint(lo, hi uint64) (uint64, error) {
	v, err := s.One()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %q is not a number between %d and %d", s.Key, v, lo, hi)
	}
	return n, nil
}

// Seconds reads a whole number of seconds up to hi (keepalived's garp delays and
// refreshes).
func (s *Statement) Seconds(hi time.Duration) (time.Duration, error) {
	v, err := s.Uint(0, uint64(hi/time.Second))
	return time.Duration(v) * time.Second, err
}

// Repeat reads a repeat count up to hi; 0 becomes 1 with a note, as in keepalived.
func (s *Statement) Repeat(hi uint64) (int, error) {
	v, err := s.Uint(0, hi)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		s.Note("%s must be greater than 0; using 1", s.Key)
		return 1, nil
	}
	return int(v), nil
}

// Decimal reads fractional seconds such as 0.05, exactly (no float rounding), in lo..hi.
func (s *Statement) Decimal(lo, hi time.Duration) (time.Duration, error) {
	v, err := s.One()
	if err != nil {
		return 0, err
	}
	d, ok := ParseDecimalSeconds(v)
	if !ok || d < lo || d > hi {
		return 0, fmt.Errorf("%s %q is not a number of seconds between %v and %v", s.Key, v, lo, hi)
	}
	return d, nil
}

// Addr reads one IP address without a zone, an IPv4-mapped IPv6 one taken as IPv4.
func (s *Statement) Addr() (netip.Addr, error) {
	v, err := s.One()
	if err != nil {
		return netip.Addr{}, err
	}
	a, ok := ParseAddr(v)
	if !ok {
		return netip.Addr{}, fmt.Errorf("bad IP address %q", v)
	}
	return a, nil
}

// Multicast reads a multicast address of IP version fam (4 or 6), or of either when
// fam is 0.
func (s *Statement) Multicast(fam int) (netip.Addr, error) {
	a, err := s.Addr()
	if err != nil {
		return a, err
	}
	if err := CheckMulticast(s.Key, a, fam); err != nil {
		return netip.Addr{}, err
	}
	return a, nil
}

// CheckMulticast is the one multicast-address check of every format: a must be a
// multicast address of IP version fam, or of either when fam is 0.
func CheckMulticast(what string, a netip.Addr, fam int) error {
	switch {
	case fam == 0 && !a.IsMulticast():
		return fmt.Errorf("%s %s is not a multicast address", what, a)
	case !IsMulticastOf(a, fam):
		return fmt.Errorf("%s %s is not an IPv%d multicast address", what, a, fam)
	}
	return nil
}

// IsMulticastOf reports whether a is a multicast address of IP version fam (either
// when 0).
func IsMulticastOf(a netip.Addr, fam int) bool {
	return a.IsMulticast() && (fam == 0 || (fam == 4) == a.Is4())
}

// ParseAddr parses an address without a zone, IPv4-mapped IPv6 taken as IPv4.
func ParseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// ParseDecimalSeconds parses "1", "0.05", "2.5" (up to microseconds, as keepalived).
func ParseDecimalSeconds(s string) (time.Duration, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 6 || len(whole) > 9 {
		return 0, false
	}
	var d time.Duration
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, false
		}
		d = d*10 + time.Duration(c-'0')
	}
	d *= time.Second
	unit := 100 * time.Millisecond
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
		d += time.Duration(c-'0') * unit
		unit /= 10
	}
	return d, true
}

// Parsed is a value as a Value read it: the field its kind fills.
type Parsed struct {
	Bool     bool
	Uint     uint64
	Int      int
	Duration time.Duration
	Text     string
	Addr     netip.Addr
	// Words are the words as written, for a keyword whose Field reads them itself.
	Words []string
}

// Value reads and checks a keyword's words.
type Value interface {
	Read(s *Statement) (Parsed, error)
}

// ValueFunc is a Value written as a function.
type ValueFunc func(s *Statement) (Parsed, error)

// Read calls f.
func (f ValueFunc) Read(s *Statement) (Parsed, error) { return f(s) }

// Const is a keyword that takes no value and sets v (preempt true, nopreempt false);
// values given are ignored with a note, as keepalived ignores them.
func Const(v bool) Value { return constant(v) }

type constant bool

func (c constant) Read(s *Statement) (Parsed, error) {
	s.NoValue()
	return Parsed{Bool: bool(c)}, nil
}

// IsConst reports whether v is a Const, and the value it sets: a format that writes the
// setting as a boolean (YAML's preempt: false) picks the entry whose constant it is.
func IsConst(v Value) (set, ok bool) {
	c, ok := v.(constant)
	return bool(c), ok
}

// Bool is keepalived's optional boolean: none means true.
func Bool() Value { return boolValue{} }

type boolValue struct{}

func (boolValue) Read(s *Statement) (Parsed, error) {
	b, err := s.Flag()
	return Parsed{Bool: b}, err
}

// IsBoolean reports whether v is a Bool or a Const: a setting a format may write as a
// boolean.
func IsBoolean(v Value) bool {
	switch v.(type) {
	case boolValue, constant:
		return true
	}
	return false
}

// Uint is a whole number in lo..hi.
func Uint(lo, hi uint64) Value { return uintValue{lo: lo, hi: hi} }

// Repeat is a repeat count up to hi, 0 taken as 1 with a note (Int).
func Repeat(hi uint64) Value { return uintValue{hi: hi, repeat: true} }

type uintValue struct {
	lo, hi uint64
	repeat bool
}

func (v uintValue) Read(s *Statement) (Parsed, error) {
	if v.repeat {
		n, err := s.Repeat(v.hi)
		return Parsed{Int: n}, err
	}
	n, err := s.Uint(v.lo, v.hi)
	return Parsed{Uint: n}, err
}

// Range returns the whole numbers a Value of a number accepts (seconds, for a
// Seconds), and false for another Value.
func Range(v Value) (lo, hi uint64, ok bool) {
	switch v := v.(type) {
	case uintValue:
		return v.lo, v.hi, true
	case durationValue:
		if v.whole {
			return 0, uint64(v.hi / time.Second), true
		}
	}
	return 0, 0, false
}

// Seconds is a whole number of seconds up to hi (Duration).
func Seconds(hi time.Duration) Value { return durationValue{hi: hi, whole: true} }

// Decimal is a number of seconds with up to six decimals in lo..hi (Duration).
func Decimal(lo, hi time.Duration) Value { return durationValue{lo: lo, hi: hi} }

type durationValue struct {
	lo, hi time.Duration
	whole  bool
}

func (v durationValue) Read(s *Statement) (Parsed, error) {
	var d time.Duration
	var err error
	if v.whole {
		d, err = s.Seconds(v.hi)
	} else {
		d, err = s.Decimal(v.lo, v.hi)
	}
	return Parsed{Duration: d}, err
}

// DurationRange is a Value of a duration, which a format that writes durations its own
// way (YAML's "100ms") checks with CheckDuration: the same range, the same message.
type DurationRange interface {
	Value
	CheckDuration(key, written string, d time.Duration) error
}

func (v durationValue) CheckDuration(key, written string, d time.Duration) error {
	switch {
	case v.whole && (d%time.Second != 0 || d < 0 || d > v.hi):
		return fmt.Errorf("%s %q is not a whole number of seconds between 0 and %d", key, written, v.hi/time.Second)
	case !v.whole && (d < v.lo || d > v.hi):
		return fmt.Errorf("%s %q is not a number of seconds between %v and %v", key, written, v.lo, v.hi)
	}
	return nil
}

// Word is one word of at most maxLen bytes (0: any length), described as what in the
// message about a longer one (Text).
func Word(maxLen int, what string) Value {
	return ValueFunc(func(s *Statement) (Parsed, error) {
		v, err := s.One()
		if err == nil && maxLen > 0 && len(v) > maxLen {
			err = fmt.Errorf("%s %q is longer than %d characters", what, v, maxLen)
		}
		return Parsed{Text: v}, err
	})
}

// OneOf is one of the words choices (Text).
func OneOf(choices ...string) Value {
	return ValueFunc(func(s *Statement) (Parsed, error) {
		v, err := s.One()
		if err == nil && !containsWord(choices, v) {
			err = fmt.Errorf("%s must be %s, not %q", s.Key, strings.Join(choices, " or "), v)
		}
		return Parsed{Text: v}, err
	})
}

func containsWord(ws []string, w string) bool {
	for _, c := range ws {
		if c == w {
			return true
		}
	}
	return false
}

// Address is one IP address (Addr).
func Address() Value {
	return ValueFunc(func(s *Statement) (Parsed, error) {
		a, err := s.Addr()
		return Parsed{Addr: a}, err
	})
}

// Multicast is a multicast address of IP version fam, either when 0 (Addr).
func Multicast(fam int) Value {
	return ValueFunc(func(s *Statement) (Parsed, error) {
		a, err := s.Multicast(fam)
		return Parsed{Addr: a}, err
	})
}

// Words hands the words to the Field, which reads them itself (use_vmac's optional
// interface name and MAC address).
func Words() Value {
	return ValueFunc(func(s *Statement) (Parsed, error) {
		return Parsed{Words: s.Args}, nil
	})
}
