// Package fuzz holds the go test -fuzz targets of the VRRP codec (codec_test.go) and of the
// VRRP state machine (instance*_test.go). It has no code of its own; these targets live
// here, apart from the vrrp package, so that their corpora (testdata/fuzz/) stay out of
// that package.
//
// It is not the only home of fuzz targets: most sit in the package they exercise, where
// they reach unexported code. `make fuzz` finds them all by looking for func Fuzz in every
// test file of the module.
//
// Seed corpora come from the real keepalived 2.2.7 captures in the module's
// testdata/keepalived (internal/testing/fixture), read at the start of each target.
package fuzz
