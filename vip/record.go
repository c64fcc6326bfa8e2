package vip

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/atomicfile"
)

// recordFile holds the VIPs this daemon added and has not removed yet.
const recordFile = "vips.json"

// recordVersion guards the file format.
const recordVersion = 1

type recordDoc struct {
	Version int   `json:"version"`
	VIPs    []VIP `json:"vips"`
}

// readRecord loads the record; a missing file is an empty record.
func readRecord(dir string) ([]VIP, error) {
	path := filepath.Join(dir, recordFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read VIP record: %w", err)
	}
	var doc recordDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("VIP record %s is corrupt: %w", path, err)
	}
	if doc.Version != recordVersion {
		return nil, fmt.Errorf("VIP record %s has version %d, this vrrpd understands %d", path, doc.Version, recordVersion)
	}
	for _, v := range doc.VIPs {
		if err := v.validate(); err != nil {
			return nil, fmt.Errorf("VIP record %s: %w", path, err)
		}
	}
	return doc.VIPs, nil
}

// writeRecord replaces the record atomically: a crash leaves either the old
// or the new file, never half of one.
func writeRecord(dir string, vips []VIP) error {
	vips = slices.Clone(vips)
	slices.SortFunc(vips, func(a, b VIP) int {
		if c := strings.Compare(a.Dev, b.Dev); c != 0 {
			return c
		}
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
	b, err := json.MarshalIndent(recordDoc{Version: recordVersion, VIPs: vips}, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return atomicfile.Write(dir, recordFile, b)
}
