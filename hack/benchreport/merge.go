package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/benchreport"
)

// merge appends the run in addPath to the raw output in rawPath (benchreport.Merge) and
// its samples in addSamples to samplesDir, after taking out of samplesDir the samples of
// the benchmarks that run replaces, so that no plot shows an older run's distribution
// beside the newer figures. Everything is read and checked before anything is written.
func merge(rawPath, samplesDir, addPath, addSamples string) ([]string, error) {
	old, err := os.ReadFile(rawPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	add, err := os.ReadFile(addPath)
	if err != nil {
		return nil, err
	}
	merged, replaced, err := benchreport.Merge(string(old), string(add))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", addPath, err)
	}
	var newFiles []string
	if addSamples != "" {
		if _, err := benchreport.ReadSamples(addSamples); err != nil { // each file checked
			return nil, err
		}
		if newFiles, err = filepath.Glob(filepath.Join(addSamples, "*.json")); err != nil {
			return nil, err
		}
	}
	oldFiles, err := filepath.Glob(filepath.Join(samplesDir, "*.json"))
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, f := range oldFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s benchreport.Samples
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		if top, _, _ := strings.Cut(s.Benchmark, "/"); slices.Contains(replaced, top) {
			stale = append(stale, f)
		}
	}

	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return nil, err
		}
	}
	if len(newFiles) > 0 {
		if err := os.MkdirAll(samplesDir, 0o755); err != nil {
			return nil, err
		}
	}
	for _, f := range newFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(samplesDir, filepath.Base(f)), b, 0o644); err != nil {
			return nil, err
		}
	}
	// Written aside and renamed: an interrupted merge leaves the old raw output whole.
	tmp := rawPath + ".merge"
	if err := os.WriteFile(tmp, []byte(merged), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, rawPath); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return replaced, nil
}
