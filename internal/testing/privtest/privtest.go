// Package privtest carries the project's rule for tests that need root (to run a script
// as another user, or to own files as root): they skip when not root, except under
// CI=true, where they fail, since CI runs as root and a skip there would hide a lost test.
package privtest

import (
	"os"
	"os/user"
	"strconv"
	"syscall"
	"testing"
)

// RequireRoot skips (fails under CI=true) unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root, and CI runs as root")
	}
	t.Skip("needs root")
}

// User is an unprivileged system user that exists on this host.
type User struct {
	Name     string
	UID, GID uint32
}

// Cred is the credential that runs a process as u with its primary group only.
func (u User) Cred() *syscall.Credential {
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
}

// Users returns n distinct unprivileged users (different uids, none 0) among the system
// users every Debian-like host has (nobody, daemon, bin, sys), or skips (fails under
// CI=true) when fewer exist.
func Users(t testing.TB, n int) []User {
	t.Helper()
	var out []User
	seen := map[uint32]bool{}
	for _, name := range []string{"nobody", "daemon", "bin", "sys"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 || gid == 0 || seen[uint32(uid)] {
			continue
		}
		seen[uint32(uid)] = true
		out = append(out, User{Name: name, UID: uint32(uid), GID: uint32(gid)})
		if len(out) == n {
			return out
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("found %d of the %d unprivileged users this test needs", len(out), n)
	}
	t.Skipf("found %d of the %d unprivileged users this test needs", len(out), n)
	return nil
}

// SharedDir returns a new directory every user may write and traverse (mode 0777, no
// sticky bit), removed after the test: t.TempDir's parent is root's alone.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vrrpd-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
