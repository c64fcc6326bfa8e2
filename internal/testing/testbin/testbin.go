// Package testbin builds the project's commands for tests that run them as real processes
// (in network namespaces, against an API server), once per test binary.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type build struct {
	once sync.Once
	path string
	err  error
}

var (
	mu     sync.Mutex
	builds = map[string]*build{}
	dir    string
)

// VrrpdTags are the build tags vrrpd ships with: the Makefile's VRRPD_TAGS and the
// Dockerfile's (cmd's TestVrrpdShipTags holds the three together). Path adds them to
// every build of cmd/vrrpd, so that the tests run the binary users run.
const VrrpdTags = "nethttpomithttp2"

// HostTags are the tags the host build of vrrpd adds to VrrpdTags (the Makefile's
// HOST_TAGS): standalone only, without Kubernetes mode and the profiling endpoint, the
// vrrpd installed on hosts in place of keepalived.
const HostTags = "vrrpd_nokube,vrrpd_nopprof"

const vrrpdPkg = "github.com/vrrp-operator/vrrp-operator/cmd/vrrpd"

// Path builds the command pkg (an import path such as
// "github.com/vrrp-operator/vrrp-operator/cmd/vrrpd") the first time it is asked for and
// returns the binary's path; a build failure fails t.
func Path(t testing.TB, pkg string) string {
	t.Helper()
	return PathTags(t, pkg, "")
}

// PathTags is Path for a build with the given build tags (comma-separated, "" for none),
// kept apart from the build without them.
func PathTags(t testing.TB, pkg, tags string) string {
	t.Helper()
	name := strings.ReplaceAll(tags, ",", "-")
	if pkg == vrrpdPkg {
		tags = strings.Trim(tags+","+VrrpdTags, ",")
	}
	key := pkg + " " + tags
	mu.Lock()
	b := builds[key]
	if b == nil {
		b = &build{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		mu.Lock()
		if dir == "" {
			dir, b.err = os.MkdirTemp("", "testbin-")
		}
		d := dir
		mu.Unlock()
		if b.err != nil {
			return
		}
		b.path = filepath.Join(d, path.Base(pkg))
		if name != "" {
			b.path += "-" + name
		}
		// Static, as the Dockerfile and `make cross` build the binaries that ship: a cgo
		// build maps libc and its neighbours, which adds 2.5 MiB to vrrpd's resident set
		// and would make the memory benchmarks measure a binary nobody runs.
		cmd := exec.Command("go", "build", "-tags", tags, "-o", b.path, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Vrrpd is Path of cmd/vrrpd.
func Vrrpd(t testing.TB) string {
	t.Helper()
	return Path(t, vrrpdPkg)
}

// Cleanup removes the built binaries; call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}
