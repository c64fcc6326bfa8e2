package track

import "testing"

// FileValue follows strtol(buf, NULL, 0): bases, signs, junk after the number, nothing at
// all, and the 32-bit range keepalived accepts.
func TestFileValue(t *testing.T) {
	for _, tc := range []struct {
		in string
		v  int64
		ok bool
	}{
		{"", 0, true}, {"12\n", 12, true}, {"  -7 apples", -7, true}, {"+3", 3, true},
		{"0x1f", 31, true}, {"0X10", 16, true}, {"010", 8, true}, {"09", 0, true}, {"0", 0, true},
		{"abc", 0, true}, {"0x", 0, true}, {"2147483648", 2147483648, true},
		{"2147483649", 0, false}, {"-2147483648", -2147483648, true}, {"-2147483649", 0, false},
		{"99999999999999999999999", 0, false},
	} {
		v, ok := FileValue([]byte(tc.in))
		if v != tc.v || ok != tc.ok {
			t.Errorf("FileValue(%q) = %d, %v; want %d, %v", tc.in, v, ok, tc.v, tc.ok)
		}
	}
}

func TestFileEffect(t *testing.T) {
	for _, tc := range []struct {
		value   int64
		weight  int
		reverse bool
		off     int
		fault   bool
	}{
		{0, 0, false, 0, false}, {5, 0, false, 0, true}, {0, 0, true, 0, true}, {5, 0, true, 0, false},
		{3, -10, false, -30, false}, {3, -10, true, 30, false}, {30, 10, false, 253, false},
		{-25, 10, false, -250, false}, {-26, 10, false, 0, true}, {-253, 1, false, -253, false}, {-254, 1, false, 0, true},
	} {
		off, fault := FileEffect(tc.value, tc.weight, tc.reverse)
		if off != tc.off || fault != tc.fault {
			t.Errorf("FileEffect(%d, %d, %v) = %d, %v; want %d, %v", tc.value, tc.weight, tc.reverse, off, fault, tc.off, tc.fault)
		}
	}
}

func TestInterfaceEffect(t *testing.T) {
	for _, tc := range []struct {
		up      bool
		weight  int
		reverse bool
		off     int
		fault   bool
	}{
		{true, 0, false, 0, false}, {false, 0, false, 0, true}, {true, 0, true, 0, true}, {false, 0, true, 0, false},
		{true, 20, false, 20, false}, {false, 20, false, 0, false}, {false, -20, false, -20, false}, {true, -20, false, 0, false},
		{true, 20, true, -20, false}, {false, -20, true, 20, false},
	} {
		off, fault := InterfaceEffect(tc.up, tc.weight, tc.reverse)
		if off != tc.off || fault != tc.fault {
			t.Errorf("InterfaceEffect(%v, %d, %v) = %d, %v; want %d, %v", tc.up, tc.weight, tc.reverse, off, fault, tc.off, tc.fault)
		}
	}
}
