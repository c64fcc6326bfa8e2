package holdings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vrrp-operator/vrrp-operator/internal/atomicfile"
)

// Record is a crash record: a JSON document in the state directory, {"version": N, ...}
// and the entries, indented, which a daemon replaces before each entry it adds and after
// each it removes.
//
// It is written atomically (internal/atomicfile: a crash of vrrpd leaves the old file or
// the new one, never half of one) and not fsynced. A record answers one question, which
// entries a vrrpd that died left in the kernel, and only a crash of the process needs it:
// the kernel keeps the renamed file in its page cache, where the next vrrpd reads it
// whether or not it reached the disk. A crash of the machine needs no record, since the
// reboot drops every address, route and rule too; at worst it leaves an empty file (a
// rename whose data was not written yet), which Read takes for an empty record. A sync
// would only make a takeover wait: the record is written before its VIP is added, and on
// a state directory on disk the two syncs cost milliseconds (none on the default tmpfs
// /run).
type Record struct {
	// Dir is the state directory and File the record's name in it.
	Dir, File string
	// Version is the format this vrrpd writes and the only one it reads.
	Version int
	// What names the record in errors ("VIP record").
	What string
}

// Path is the record's file.
func (r Record) Path() string { return filepath.Join(r.Dir, r.File) }

// Read fills doc (a pointer to a struct with a "version" field) from the record. A
// missing or empty file leaves doc as it is: nothing is recorded.
func (r Record) Read(doc any) error {
	b, err := os.ReadFile(r.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", r.What, err)
	}
	return r.Parse(b, doc)
}

// Parse fills doc from b, the record's content: corrupt JSON and another version are
// errors that name the file; an empty b leaves doc as it is.
func (r Record) Parse(b []byte, doc any) error {
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return fmt.Errorf("%s %s is corrupt: %w", r.What, r.Path(), err)
	}
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Version != r.Version {
		return fmt.Errorf("%s %s has version %d, this vrrpd understands %d", r.What, r.Path(), v.Version, r.Version)
	}
	return nil
}

// Encode is the record's content for doc, whose version field the caller sets; a doc
// that lists its entries in one order for one set of them is always one file.
func Encode(doc any) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Write replaces the record with doc.
func (r Record) Write(doc any) error {
	b, err := Encode(doc)
	if err != nil {
		return err
	}
	return atomicfile.Write(r.Dir, r.File, b)
}
