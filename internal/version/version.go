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

// ImageTag is Version as an OCI image tag, the tag make release gives the images of this
// version: git describe's output (v1.2.3, v1.2.3-4-gabcdef0, abcdef0-dirty) is one already;
// a character a tag may not hold (the + of SemVer build metadata) becomes "-", as
// docker/metadata-action spells such versions, and a tag is at most 128 characters and
// never starts with "." or "-". The operator's default vrrpd image is vrrpd:ImageTag().
func ImageTag() string {
	tag := []byte(Version)
	for i, c := range tag {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			tag[i] = '-'
		}
	}
	if len(tag) > 0 && (tag[0] == '.' || tag[0] == '-') {
		tag = append([]byte("v"), tag...)
	}
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if len(tag) == 0 {
		return "dev"
	}
	return string(tag)
}

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
