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
