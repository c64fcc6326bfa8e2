// Package atomicfile replaces a small file so that a crash of the process at any moment
// leaves either the old content or the new, never half of one: the crash records of
// package vip and internal/route depend on it.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces dir/name with data: a temporary file in dir renamed over the name.
//
// Nothing is fsynced. The records are written on the takeover path, after the
// advertisement and before the VIP add, where two fsyncs cost milliseconds; and they
// only need to outlive vrrpd, which the page cache does. A machine crash takes the
// kernel's addresses, routes and rules with it, so a record lost or left empty by one
// has nothing left to describe: readers take an empty file for an empty record.
func Write(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
