package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v1.2.3-4-gabcdef"
	s := String("vrrpd")
	if !strings.HasPrefix(s, "vrrpd v1.2.3-4-gabcdef (") || !strings.Contains(s, runtime.Version()) {
		t.Errorf("String = %q", s)
	}
}

func TestImageTag(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	for _, tc := range []struct{ version, tag string }{
		{"v1.2.3", "v1.2.3"},
		{"v1.2.3-4-gabcdef0-dirty", "v1.2.3-4-gabcdef0-dirty"},
		{"986db8a", "986db8a"},
		{"dev", "dev"},
		{"v1.2.3+build.7", "v1.2.3-build.7"},
		{"-x", "v-x"},
		{"", "dev"},
		{strings.Repeat("a", 200), strings.Repeat("a", 128)},
	} {
		Version = tc.version
		if got := ImageTag(); got != tc.tag {
			t.Errorf("Version %q: ImageTag() = %q, want %q", tc.version, got, tc.tag)
		}
	}
}
