// Package version is the build's version, for both binaries' --version flag, the first
// line of their logs and their <program>_build_info metric. The Makefile sets Version
// with -ldflags "-X github.com/vrrp-operator/vrrp-operator/internal/version.Version=$(git describe)";
// a plain go build leaves "dev". The metric itself is internal/buildinfo's collector.
package version

import (
	"fmt"
	"runtime"
)

// Version is the release this binary was built from (git describe), "dev" when unset.
var Version = "dev"

// String is the one line --version prints: program, version and Go version.
func String(program string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", program, Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// BuildInfoHelp is the help text of <prefix>_build_info{version, goversion}, always 1, as
// Prometheus' own exporters publish theirs: a query joins on it to show what runs where.
// Both programs register it through buildinfo.NewCollector.
func BuildInfoHelp(prefix string) string {
	return "A metric with a constant '1' value labelled by the version and Go version " + prefix + " was built from"
}
