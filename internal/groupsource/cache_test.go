package groupsource

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestCacheRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state") // created by the first write
	key := types.NamespacedName{Namespace: "lb", Name: "edge"}
	if e, err := readCache(dir, key); e != nil || err != nil {
		t.Fatalf("no cache yet: %v, %v", e, err)
	}
	in := &cacheEntry{Group: testGroup()}
	data, err := encodeCache(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCache(dir, data); err != nil {
		t.Fatal(err)
	}
	out, err := readCache(dir, key)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("read back %+v, %v", out, err)
	}
	// Only the owner may read it.
	st, err := os.Stat(filepath.Join(dir, CacheFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	// The translation of the cached group is the original's.
	a, _, _ := Translate(in.Group, "a", nil, nil)
	b, _, _ := Translate(out.Group, "a", nil, nil)
	if !configEqual(a, b) {
		t.Fatal("cached group translates differently")
	}
	// Nothing but the cache is left in the directory (no temporary files).
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries", len(ents))
	}
	if err := removeCache(dir); err != nil {
		t.Fatal(err)
	}
	if err := removeCache(dir); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if e, err := readCache(dir, key); e != nil || err != nil {
		t.Fatalf("after remove: %v, %v", e, err)
	}
}

func TestCacheRejects(t *testing.T) {
	key := types.NamespacedName{Namespace: "lb", Name: "edge"}
	good, _ := encodeCache(&cacheEntry{Group: testGroup()})
	for _, tc := range []struct {
		name  string
		setup func(path string)
		want  string
	}{
		{"torn", func(p string) { os.WriteFile(p, good[:len(good)/2], 0o600) }, "unexpected EOF"},
		{"not JSON", func(p string) { os.WriteFile(p, []byte("global_defs {"), 0o600) }, "invalid character"},
		{"unknown field", func(p string) { os.WriteFile(p, []byte(`{"group":{},"extra":1}`), 0o600) }, "unknown field"},
		// Caches of older vrrpds held the password; they lived in the pod's
		// emptyDir, which a new pod (on the hostPath) never sees.
		{"password", func(p string) { os.WriteFile(p, []byte(`{"group":{},"password":"czNjcmV0"}`), 0o600) }, "unknown field"},
		{"no group", func(p string) { os.WriteFile(p, []byte(`{}`), 0o600) }, "no group"},
		{"other group", func(p string) { os.WriteFile(p, good, 0o600) }, "holds group lb/edge, not lb/other"},
		{"directory", func(p string) { os.Mkdir(p, 0o700) }, "not a regular file"},
		{"huge", func(p string) { os.WriteFile(p, make([]byte, maxCacheSize+1), 0o600) }, "not a regular file of at most"},
	} {
		dir := t.TempDir()
		tc.setup(filepath.Join(dir, CacheFile))
		want := key
		if tc.name == "other group" {
			want.Name = "other"
		}
		e, err := readCache(dir, want)
		if e != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want error with %q", tc.name, e, err, tc.want)
		}
	}
}
