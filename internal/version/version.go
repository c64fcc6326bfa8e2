// Package version is the build's version, for both binaries' --version flag, the first
// line of their logs and their <program>_build_info metric. The Makefile sets Version
// with -ldflags "-X github.com/vrrp-operator/vrrp-operator/internal/version.Version=$(git describe)";
// a plain go build leaves "dev".
package version

import (
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is the release this binary was built from (git describe), "dev" when unset.
var Version = "dev"

// String is the one line --version prints: program, version and Go version.
func String(program string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", program, Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// NewCollector returns the gauge <prefix>_build_info{version, goversion}, always 1, as
// Prometheus' own exporters publish theirs: a query joins on it to show what runs where.
func NewCollector(prefix string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        prefix + "_build_info",
		Help:        "A metric with a constant '1' value labelled by the version and Go version " + prefix + " was built from",
		ConstLabels: prometheus.Labels{"version": Version, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
