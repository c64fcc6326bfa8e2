package holdings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An entry two holders share leaves when the last lets go, and stays recorded until it
// is dropped (its removal from the kernel may fail); one not recorded is never ours.
func TestBookHolders(t *testing.T) {
	var b Book[string, int]
	if b.Let("a", "r1") {
		t.Error("letting go of an entry that is not recorded reported the last holder")
	}
	b.Put("a", 1)
	b.Hold("a", "r1")
	b.Hold("a", "r2")
	b.Hold("a", "r2") // twice is once
	if b.Let("a", "r1") {
		t.Error("r2 still holds a")
	}
	if !b.Let("a", "r2") {
		t.Error("r2 was the last holder")
	}
	if v, ok := b.Get("a"); !ok || v != 1 {
		t.Errorf("a after its last holder: %d, %v; want still recorded until Drop", v, ok)
	}
	b.Hold("a", "r3")
	b.Put("a", 2) // new attributes keep the holders
	if v, _ := b.Get("a"); v != 2 || b.Let("a", "r1") {
		t.Errorf("a = %d after Put, or r1 was taken for its holder", v)
	}
	b.Orphan("a")
	if !b.Has("a") || !b.Let("a", "nobody") {
		t.Error("an orphaned entry should stay recorded with no holder")
	}
	b.Put("b", 3)
	got := b.Keys()
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) || b.Len() != 2 {
		t.Errorf("keys %v, len %d", got, b.Len())
	}
	b.Drop("a")
	if b.Has("a") || !slices.Equal(b.Entries(), []int{3}) {
		t.Errorf("after Drop: has a %v, entries %v", b.Has("a"), b.Entries())
	}
}

type doc struct {
	Version int      `json:"version"`
	Items   []string `json:"items"`
}

// The record round-trips; a missing or empty file is an empty record; a corrupt one or
// one of another version is an error that names the file.
func TestRecord(t *testing.T) {
	r := Record{Dir: t.TempDir(), File: "things.json", Version: 1, What: "thing record"}
	var d doc
	if err := r.Read(&d); err != nil || d.Items != nil {
		t.Fatalf("missing file: %+v, %v", d, err)
	}
	if err := r.Write(doc{Version: 1, Items: []string{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.Dir, "things.json"))
	if err != nil || !strings.HasSuffix(string(b), "}\n") || !strings.Contains(string(b), "\n  \"items\"") {
		t.Errorf("file %q (%v): want indented JSON ending in a newline", b, err)
	}
	if err := r.Read(&d); err != nil || !slices.Equal(d.Items, []string{"x", "y"}) {
		t.Fatalf("read back %+v, %v", d, err)
	}
	for _, tc := range []struct{ content, want string }{
		{"", ""},
		{"{", "thing record " + r.Path() + " is corrupt"},
		{`{"version":2,"items":[]}`, "thing record " + r.Path() + " has version 2, this vrrpd understands 1"},
		{`{"items":["z"]}`, "has version 0"},
	} {
		if err := os.WriteFile(r.Path(), []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		d := doc{Items: []string{"before"}}
		err := r.Read(&d)
		switch {
		case tc.want == "" && (err != nil || !slices.Equal(d.Items, []string{"before"})):
			t.Errorf("%q: %+v, %v; want nothing read", tc.content, d, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v; want an error with %q", tc.content, err, tc.want)
		}
	}
}
