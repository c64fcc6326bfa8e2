// Package buildinfo is the <program>_build_info metric as a client_golang collector, for
// the operator's controller-runtime registry and vrrpd's (internal/metrics). It lives apart
// from internal/version, which the programs' --version needs without any metrics library.
package buildinfo

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vrrp-operator/vrrp-operator/internal/version"
)

// NewCollector returns the gauge <prefix>_build_info{version, goversion}, always 1, as
// Prometheus' own exporters publish theirs: a query joins on it to show what runs where.
func NewCollector(prefix string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        prefix + "_build_info",
		Help:        version.BuildInfoHelp(prefix),
		ConstLabels: prometheus.Labels{"version": version.Version, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
