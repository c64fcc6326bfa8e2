package track

import (
	"math"
	"strconv"
	"strings"
)

// This file is keepalived's other trackers, as pure rules: track_interface (an
// interface's link state) and track_file (a number read from a file). The daemon watches
// the interfaces and reads the files; these functions say what a state or a value does to
// the priority.

// FileValue reads a track_file's contents as keepalived's process_track_file does: strtol
// in base 0 (decimal, 0x hexadecimal, leading-0 octal) of the start of the file, after
// leading blanks; text that is not a number, an empty file and a missing file are 0. A
// number outside the 32-bit range is not a value (ok false): keepalived logs it and keeps
// the previous one.
func FileValue(data []byte) (v int64, ok bool) {
	s := strings.TrimLeft(string(data), " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHex(s[2]):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base = 8
	}
	n := 0
	for n < len(s) && digitIn(s[n], base) {
		n++
	}
	if n == 0 {
		return 0, true
	}
	u, err := strconv.ParseUint(s[:n], base, 64)
	if err != nil || u > math.MaxInt32+1 {
		return 0, false
	}
	v = int64(u)
	if neg {
		v = -v
	}
	if v < math.MinInt32 {
		return 0, false
	}
	return v, true
}

func digitIn(c byte, base int) bool {
	switch base {
	case 8:
		return c >= '0' && c <= '7'
	case 16:
		return isHex(c)
	}
	return c >= '0' && c <= '9'
}

// FileFault is the offset that stands for FAULT in keepalived's file tracking: a weighted
// value at or below it puts the instance in FAULT rather than lowering its priority.
const FileFault = -254

// FileEffect is what a track_file value does to one tracking instance
// (update_track_file_status, process_update_vrrp_track_file_status): with weight 0, FAULT
// while the value is not 0 (while it is 0, with reverse); otherwise value × weight,
// negated by reverse, clamped to -254..253, where -254 means FAULT.
func FileEffect(value int64, weight int, reverse bool) (offset int, fault bool) {
	if weight == 0 {
		return 0, (value != 0) != reverse
	}
	m := int64(1)
	if reverse {
		m = -1
	}
	o := value * int64(weight) * m
	switch {
	case o <= FileFault:
		return 0, true
	case o > OwnerPriority-2:
		o = OwnerPriority - 2
	}
	return int(o), false
}

// InterfaceEffect is what a tracked interface's state does to one tracking instance
// (initialise_interface_tracking_priorities, process_if_status_change): weight 0 means
// FAULT while it is down (while it is up, with reverse); a positive weight counts while
// it is up, a negative one while it is down, both negated by reverse.
func InterfaceEffect(up bool, weight int, reverse bool) (offset int, fault bool) {
	if weight == 0 {
		return 0, up == reverse
	}
	m := 1
	if reverse {
		m = -1
	}
	if up == (weight > 0) {
		return weight * m, false
	}
	return 0, false
}
