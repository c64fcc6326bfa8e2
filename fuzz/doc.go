// Package fuzz holds the project's go test -fuzz targets: the VRRP codec (codec_test.go)
// and the VRRP state machine (instance*_test.go). It has no code of its own; the targets
// live here, apart from the packages they exercise, so that `make fuzz` finds them all in
// one place and their corpora (testdata/fuzz/) stay out of the product's packages.
//
// Seed corpora come from the real keepalived 2.2.7 captures in vrrp/testdata, read at the
// start of each target.
package fuzz
