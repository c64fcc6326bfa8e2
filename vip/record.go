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
	return parseRecord(path, b)
}

// parseRecord reads the content b of the record at path.
func parseRecord(path string, b []byte) ([]VIP, error) {
	if len(b) == 0 {
		// Only a machine crash can leave an empty file (atomicfile.Write does not sync),
		// and it took every address with it: nothing is left to remove.
		return nil, nil
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

// writeRecord replaces the record atomically: a crash of vrrpd leaves either the old or the
// new file, never half of one.
//
// It does not fsync. The record answers one question, which addresses a vrrpd that died
// left on the interfaces, and only a crash of the process needs it: the kernel keeps the
// renamed file in its page cache, where the next vrrpd reads it whether or not it reached
// the disk. A crash of the machine needs no record, since the reboot drops every address
// too; at worst it leaves an empty file (a rename whose data was not written yet), which
// readRecord takes for an empty record. A sync would only make a takeover wait: the record
// is written before its VIP is added, and on a state directory on disk the two syncs cost
// milliseconds (none on the default tmpfs /run).
func writeRecord(dir string, vips []VIP) error {
	b, err := encodeRecord(vips)
	if err != nil {
		return err
	}
	return atomicfile.Write(dir, recordFile, b)
}

// encodeRecord is the record's content for vips: sorted, so that one set of VIPs is
// always one file.
func encodeRecord(vips []VIP) ([]byte, error) {
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
		return nil, err
	}
	return append(b, '\n'), nil
}
