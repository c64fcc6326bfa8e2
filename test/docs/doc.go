// Package docs tests that ARCHITECTURE.md stays true to the tree it describes: it names
// every package of the module, and every path it names in backquotes exists. The other
// documents have their checks beside what they describe: README.md's metric tables in
// internal/metrics (TestMetricsMatchREADME, and doc.go's list in TestMetricsMatchDocGo),
// its measured table in hack/benchreport (TestREADMEMeasured), its install commands in
// test/install.
package docs
