package route

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/vrrp-operator/vrrp-operator/internal/holdings"
)

const (
	// recordFile holds the routes and rules this daemon added and has not removed yet.
	recordFile    = "routes.json"
	recordVersion = 1
)

type recordDoc struct {
	Version int     `json:"version"`
	Routes  []Route `json:"routes"`
	Rules   []Rule  `json:"rules"`
}

// record is the crash record in dir (internal/holdings: written atomically, not fsynced).
func record(dir string) holdings.Record {
	return holdings.Record{Dir: dir, File: recordFile, Version: recordVersion, What: "record"}
}

// parseRecord reads the content b of the record at path.
func parseRecord(path string, b []byte) (recordDoc, error) {
	// An empty file is left by a machine crash, which took the routes too
	// (atomicfile.Write).
	var doc recordDoc
	if err := record(filepath.Dir(path)).Parse(b, &doc); err != nil {
		return recordDoc{}, fmt.Errorf("route: %w", err)
	}
	if err := validRecord(path, doc); err != nil {
		return recordDoc{}, err
	}
	return doc, nil
}

// validRecord checks the entries of doc, read from path. Only valid entries are ever
// recorded (Hold validates first): anything else is a damaged or foreign file, and
// Recover would hand the kernel what it cannot mean.
func validRecord(path string, doc recordDoc) error {
	for _, r := range doc.Routes {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("route: record %s: route %s: %w", path, r, err)
		}
	}
	for _, r := range doc.Rules {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("route: record %s: rule %s: %w", path, r, err)
		}
	}
	return nil
}

// write saves the record (under m.mu).
func (m *Manager) write() error {
	if err := os.MkdirAll(m.record.Dir, 0o700); err != nil {
		return fmt.Errorf("route: state directory: %w", err)
	}
	return m.record.Write(sortedDoc(m.routes.Keys(), m.rules.Keys()))
}

// encodeRecord is the record's content for routes and rules.
func encodeRecord(routes []Route, rules []Rule) ([]byte, error) {
	return holdings.Encode(sortedDoc(routes, rules))
}

// sortedDoc is the record of routes and rules, sorted, so that one set of entries is
// always one file: as ip prints them, then by every field (table 0 and table main print
// alike).
func sortedDoc(routes []Route, rules []Rule) recordDoc {
	doc := recordDoc{Version: recordVersion, Routes: append([]Route{}, routes...), Rules: append([]Rule{}, rules...)}
	slices.SortFunc(doc.Routes, func(a, b Route) int { return cmpEntries(a, b, a.String(), b.String()) })
	slices.SortFunc(doc.Rules, func(a, b Rule) int { return cmpEntries(a, b, a.String(), b.String()) })
	return doc
}

// cmpEntries orders two entries by their text as ip prints them (sa, sb), then by their
// JSON, which holds every field.
func cmpEntries(a, b any, sa, sb string) int {
	if c := cmpString(sa, sb); c != 0 {
		return c
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Compare(ja, jb)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
