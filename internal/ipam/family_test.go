package ipam

import (
	"fmt"
	"strings"
	"testing"
)

func TestFamilies(t *testing.T) {
	pools := map[string]*Pool{
		"v4":   mustParse(t, []string{"10.99.0.200/29"}, nil),
		"v6":   mustParse(t, []string{"fd00:99::200/125"}, nil),
		"dual": mustParse(t, []string{"10.99.0.200/29", "fd00:99::200/125"}, nil),
		"none": mustParse(t, nil, nil),
	}
	type fams []string
	tests := []struct {
		pool     string
		families fams
		policy   string
		want     string // fmt of []Family, or "error: <substring>"
	}{
		// Empty policy and SingleStack: the first family, IPv4 by default.
		{"v4", nil, "", "[IPv4]"},
		{"dual", nil, "", "[IPv4]"},
		{"v6", nil, "", "error: no IPv4 addresses"},
		{"v6", fams{"IPv6"}, "", "[IPv6]"},
		{"dual", fams{"IPv6", "IPv4"}, SingleStack, "[IPv6]"},
		{"dual", fams{"IPv4"}, SingleStack, "[IPv4]"},
		{"v4", fams{"IPv6"}, SingleStack, "error: no IPv6 addresses"},
		{"none", nil, SingleStack, "error: no IPv4 addresses"},
		// PreferDualStack: both when the pool has both, primary first.
		{"dual", nil, PreferDualStack, "[IPv4 IPv6]"},
		{"dual", fams{"IPv6"}, PreferDualStack, "[IPv6 IPv4]"},
		{"dual", fams{"IPv6", "IPv4"}, PreferDualStack, "[IPv6 IPv4]"},
		{"dual", fams{"IPv4", "IPv6"}, PreferDualStack, "[IPv4 IPv6]"},
		{"v4", fams{"IPv6", "IPv4"}, PreferDualStack, "[IPv4]"},
		{"v6", fams{"IPv4"}, PreferDualStack, "[IPv6]"},
		{"none", nil, PreferDualStack, "error: pool is empty"},
		// RequireDualStack: both or an error.
		{"dual", nil, RequireDualStack, "[IPv4 IPv6]"},
		{"dual", fams{"IPv6", "IPv4"}, RequireDualStack, "[IPv6 IPv4]"},
		{"v4", fams{"IPv4", "IPv6"}, RequireDualStack, "error: no IPv6 addresses"},
		{"v6", nil, RequireDualStack, "error: no IPv4 addresses"},
		// Bad input.
		{"dual", fams{"IPv5"}, "", `error: ipFamilies[0]: unknown IP family "IPv5"`},
		{"dual", fams{"IPv4", "IPv4"}, PreferDualStack, "error: ipFamilies[1]: IPv4 listed twice"},
		{"dual", nil, "DualStackPlease", `error: unknown ipFamilyPolicy "DualStackPlease"`},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s/%v/%s", tc.pool, []string(tc.families), tc.policy)
		got, err := pools[tc.pool].Families(tc.families, tc.policy)
		if msg, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: got %v, %v; want error with %q", name, got, err, msg)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%s: got %v, %v; want %s", name, got, err, tc.want)
		}
	}
}
