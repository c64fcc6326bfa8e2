package groupsource

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// CacheFile is the name of the cache in the state directory.
const CacheFile = "keepalivedgroup.json"

// maxCacheSize bounds what a damaged or foreign cache file can make vrrpd
// read: a group's status stays well under 1 MiB (etcd's object limit is
// 1.5 MiB).
const maxCacheSize = 4 << 20

// cacheEntry is what the cache file holds: the last group the API server
// returned, so that a restart while the API server is away brings back the
// configuration that ran.
//
// It holds no password. The password file is the kubelet's Secret volume,
// there whenever vrrpd's container runs (a restarted container keeps its
// pod's volumes; a new pod needs the API server anyway), so a copy adds
// nothing; and the state directory is a hostPath that outlives the pod,
// where a copy of the Secret would stay behind on the node.
type cacheEntry struct {
	Group *v1alpha1.KeepalivedGroup `json:"group"`
}

// readCache returns the cached entry for group, or nil when there is none.
// A cache of another group (the DaemonSet's --group changed) is not used.
func readCache(dir string, group types.NamespacedName) (*cacheEntry, error) {
	path := filepath.Join(dir, CacheFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxCacheSize {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, maxCacheSize)
	}
	e, err := decodeCache(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if got := (types.NamespacedName{Namespace: e.Group.Namespace, Name: e.Group.Name}); got != group {
		return nil, fmt.Errorf("%s: holds group %s, not %s", path, got, group)
	}
	return e, nil
}

// decodeCache reads the content of a cache file.
func decodeCache(r io.Reader) (*cacheEntry, error) {
	var e cacheEntry
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, err
	}
	if e.Group == nil {
		return nil, errors.New("no group")
	}
	return &e, nil
}

// encodeCache is the file content for e.
func encodeCache(e *cacheEntry) ([]byte, error) {
	return json.Marshal(e)
}

// writeCache replaces the cache with data atomically: a crash leaves the
// old file or the new one, never a torn one.
func writeCache(dir string, data []byte) error {
	// The daemon creates the state directory too, but the watcher may get
	// there first.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+CacheFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, CacheFile))
}

// removeCache deletes the cache: the group is gone, and a restart must not
// bring back its VIPs.
func removeCache(dir string) error {
	err := os.Remove(filepath.Join(dir, CacheFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
