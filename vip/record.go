package vip

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/holdings"
)

// recordFile holds the VIPs this daemon added and has not removed yet.
const recordFile = "vips.json"

// recordVersion guards the file format.
const recordVersion = 1

type recordDoc struct {
	Version int   `json:"version"`
	VIPs    []VIP `json:"vips"`
}

// record is the VIPs' crash record in dir (internal/holdings: written atomically, not
// fsynced).
func record(dir string) holdings.Record {
	return holdings.Record{Dir: dir, File: recordFile, Version: recordVersion, What: "VIP record"}
}

// readRecord loads the record; a missing file is an empty record.
func readRecord(dir string) ([]VIP, error) {
	var doc recordDoc
	if err := record(dir).Read(&doc); err != nil {
		return nil, err
	}
	return validRecord(record(dir).Path(), doc)
}

// parseRecord reads the content b of the record at path.
func parseRecord(path string, b []byte) ([]VIP, error) {
	// Only a machine crash can leave an empty file (atomicfile.Write does not sync),
	// and it took every address with it: nothing is left to remove.
	var doc recordDoc
	if err := record(filepath.Dir(path)).Parse(b, &doc); err != nil {
		return nil, err
	}
	return validRecord(path, doc)
}

// validRecord is the VIPs of doc, read from path, if each is valid.
func validRecord(path string, doc recordDoc) ([]VIP, error) {
	for _, v := range doc.VIPs {
		if err := v.validate(); err != nil {
			return nil, fmt.Errorf("VIP record %s: %w", path, err)
		}
	}
	return doc.VIPs, nil
}

// writeRecord replaces the record atomically: a crash of vrrpd leaves either the old or
// the new file, never half of one (holdings.Record says why it does not fsync).
func writeRecord(dir string, vips []VIP) error {
	return record(dir).Write(sortedDoc(vips))
}

// encodeRecord is the record's content for vips.
func encodeRecord(vips []VIP) ([]byte, error) { return holdings.Encode(sortedDoc(vips)) }

// sortedDoc is the record of vips, sorted, so that one set of VIPs is always one file.
func sortedDoc(vips []VIP) recordDoc {
	vips = slices.Clone(vips)
	sortVIPs(vips)
	return recordDoc{Version: recordVersion, VIPs: vips}
}

// sortVIPs sorts by interface, address and prefix length.
func sortVIPs(vips []VIP) {
	slices.SortFunc(vips, func(a, b VIP) int {
		if c := strings.Compare(a.Dev, b.Dev); c != 0 {
			return c
		}
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
}
