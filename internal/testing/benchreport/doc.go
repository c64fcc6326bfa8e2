// Package benchreport holds the naming convention of the benchmark figures behind
// `make bench` (issue 12) and what reads them back.
//
// A benchmark reports each figure with b.ReportMetric(value, unit), where unit is
// "<measure>-<who>-<unit>": who is "vrrpd" or "keepalived", the last part one of Units,
// and <measure> lowercase letters, digits and '-' (never a daemon's name), so that the
// report pairs vrrpd's and keepalived's figures of the same measure:
//
//	b.ReportMetric(p99, "failover-v3-100ms-p99-vrrpd-ms")
//	b.ReportMetric(kp99, "failover-v3-100ms-p99-keepalived-ms")
//
// A distribution is also written sample by sample with WriteSamples, when the
// environment variable VRRPD_BENCH_SAMPLES names a directory, for the report's plots.
//
// Parse reads `go test -bench` output back into Figures, Pair puts each measure's two
// sides in one Row, Goals is issue 12's list of what must hold, and Render writes the
// Markdown report. The command hack/benchreport ties them together (and draws the plots,
// so that the plotting library stays out of the test binaries that import this package).
package benchreport
