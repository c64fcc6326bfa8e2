package ipam

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseRequested(t *testing.T) {
	ok := []struct{ in, want string }{
		{"", "[]"},
		{"   ", "[]"},
		{"10.99.0.201", "[10.99.0.201]"},
		{" 10.99.0.201 ", "[10.99.0.201]"},
		{"10.99.0.201,fd00:99::201", "[10.99.0.201 fd00:99::201]"},
		{"fd00:99::201 , 10.99.0.201", "[fd00:99::201 10.99.0.201]"},
	}
	for _, tc := range ok {
		got, err := ParseRequested(tc.in)
		if err != nil {
			t.Errorf("ParseRequested(%q): %v", tc.in, err)
			continue
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("ParseRequested(%q) = %s, want %s", tc.in, s, tc.want)
		}
	}
	bad := []struct{ in, msg string }{
		{"10.99.0.201,10.99.0.201", `item 1 "10.99.0.201": listed twice`},
		{"10.99.0.201, 10.99.0.202", `item 1 "10.99.0.202": a second IPv4 address`},
		{"fd00:99::1,fd00:99::2", "a second IPv6 address"},
		{"10.99.0.201,", "item 1 is empty"},
		{",10.99.0.201", "item 0 is empty"},
		{"10.99.0.201 10.99.0.202", `item 0 "10.99.0.201 10.99.0.202"`},
		{"10.99.0.0/24", `item 0 "10.99.0.0/24"`},
		{"fe80::1%eth0", "zone"},
		{"::ffff:10.99.0.1", "IPv4-mapped"},
		{"10.99.0.1;10.99.0.2", "item 0"},
	}
	for _, tc := range bad {
		got, err := ParseRequested(tc.in)
		if err == nil {
			t.Errorf("ParseRequested(%q) = %v, want an error", tc.in, got)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseRequested(%q) error %q does not say %q", tc.in, err, tc.msg)
		}
	}
}
