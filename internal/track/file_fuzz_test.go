package track

import (
	"math"
	"strconv"
	"testing"
)

// FuzzFileValue: a track_file holds whatever whoever can write it put there. FileValue
// reads the first 127 bytes the daemon reads (readTrackFile) without panicking, into
// keepalived's 32-bit range; the value reads back from what init_file writes
// (strconv.Itoa(v)+"\n"), and from its hexadecimal and octal forms; leading blanks and
// what follows the number do not change it; and the value moves a priority by at most
// 253 or means FAULT.
func FuzzFileValue(f *testing.F) {
	// What scripts and init_file write, and the cases of TestFileValue.
	for _, s := range []string{"0\n", "1\n", "-254\n", "100", "  -7 apples", "+3", "0x1f", "0X10", "010", "09",
		"abc", "0x", "", "2147483648", "2147483649", "-2147483648", "-2147483649", "99999999999999999999999", "\t\n\v\f\r 5"} {
		f.Add([]byte(s), 10, false)
	}
	f.Add([]byte("-3\n"), -100, true)
	f.Add([]byte("0"), 0, true)
	f.Fuzz(func(t *testing.T, data []byte, weight int, reverse bool) {
		if len(data) > 127 {
			data = data[:127] // readTrackFile's buffer
		}
		v, ok := FileValue(data)
		if !ok {
			if v != 0 {
				t.Fatalf("FileValue(%q) = %d, false: a refused value must be 0", data, v)
			}
			return
		}
		if v < math.MinInt32 || v > math.MaxInt32+1 {
			t.Fatalf("FileValue(%q) = %d: outside keepalived's range", data, v)
		}
		// init_file's write, and the other bases strtol reads.
		for _, w := range []string{strconv.FormatInt(v, 10) + "\n", hexOf(v), octOf(v)} {
			if got, ok := FileValue([]byte(w)); !ok || got != v {
				t.Fatalf("FileValue(%q) = %d, %v; %q read %d", w, got, ok, data, v)
			}
		}
		// Blanks before and a line end after change nothing.
		if got, ok := FileValue(append([]byte(" \t"), data...)); !ok || got != v {
			t.Fatalf("leading blanks: %d, %v; want %d", got, ok, v)
		}
		if got, ok := FileValue(append(append([]byte{}, data...), '\n')); !ok || got != v {
			t.Fatalf("a line end after %q: %d, %v; want %d", data, got, ok, v)
		}
		// keepalived's weights are -254..254 (the configuration refuses others).
		weight %= 255
		off, fault := FileEffect(v, weight, reverse)
		if off < -253 || off > 253 || (fault && off != 0) {
			t.Fatalf("FileEffect(%d, %d, %v) = %d, %v", v, weight, reverse, off, fault)
		}
	})
}

func hexOf(v int64) string {
	if v < 0 {
		return "-0x" + strconv.FormatInt(-v, 16)
	}
	return "0x" + strconv.FormatInt(v, 16)
}

func octOf(v int64) string {
	if v < 0 {
		return "-0" + strconv.FormatInt(-v, 8)
	}
	return "0" + strconv.FormatInt(v, 8)
}
