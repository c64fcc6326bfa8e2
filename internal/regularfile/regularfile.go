// Package regularfile reads files that a user or the kubelet puts in vrrpd's way (a
// configuration, a mounted password) without the two ways such a read can go wrong: a
// FIFO or device that blocks the open forever, and a file larger than anything sane.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is returned, wrapped, when the file holds more than the limit.
var ErrTooLarge = errors.New("file too large")

// Read returns the content of path, which must be a regular file (after symlinks) of at
// most limit bytes.
func Read(path string, limit int64) ([]byte, error) {
	// Stat before opening: opening a FIFO blocks until someone writes to it.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max(limit, 0)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes: %w", path, limit, ErrTooLarge)
	}
	return data, nil
}
