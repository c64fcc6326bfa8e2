package track

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/privtest"
)

// secureBase returns a new root-owned directory, mode 0755, under t.TempDir (under
// /tmp, whose sticky bit keepalived's rules and Resolve accept).
func secureBase(t *testing.T) string {
	t.Helper()
	privtest.RequireRoot(t)
	base := filepath.Join(t.TempDir(), "base")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// t.TempDir's own directories are root's and 0700: secure.
	return base
}

func mkdir(t *testing.T, p string, mode os.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
	return p
}

func script(t *testing.T, p string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, p string, uid int) string {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveSystemShell(t *testing.T) {
	privtest.RequireRoot(t)
	for _, p := range []string{"/bin/sh", "sh"} {
		r, err := Resolve(p, nil)
		if err != nil || r.Insecure != nil {
			t.Fatalf("%s: %+v %v", p, r, err)
		}
		real, err := filepath.EvalSymlinks(r.Path)
		if err != nil || real != r.Path || !filepath.IsAbs(r.Path) {
			t.Errorf("%s resolved to %q, want a path with no link left (%q, %v)", p, r.Path, real, err)
		}
	}
}

// The symlink-swap attack: a directory someone else may write, on the path as written,
// holding a link to a harmless root-owned program. Checking only where the link leads
// (which is all secure) passed it, and the unprivileged user could then point the link
// at anything and have it run as root. Resolve refuses it, and names the directory.
func TestResolveRefusesWritableDirectoryOnThePath(t *testing.T) {
	base := secureBase(t)
	nobody := privtest.Users(t, 1)[0]
	target := script(t, filepath.Join(base, "check"))
	for _, c := range []struct {
		name string
		mode os.FileMode
		uid  int
	}{
		{"world-writable", 0o777, 0},
		{"group-writable", 0o775, 0},
		{"owned-by-user", 0o755, int(nobody.UID)},
	} {
		dir := mkdir(t, filepath.Join(base, c.name), c.mode, c.uid)
		if c.name == "group-writable" {
			if err := os.Lchown(dir, 0, int(nobody.GID)); err != nil {
				t.Fatal(err)
			}
		}
		link := symlink(t, target, filepath.Join(dir, "check"), 0)
		r, err := Resolve(link, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Insecure == nil || !strings.Contains(r.Insecure.Error(), dir) {
			t.Errorf("%s: insecure = %v, want %s named", c.name, r.Insecure, dir)
		}
		if r.Path != target {
			t.Errorf("%s: resolved to %s, want %s", c.name, r.Path, target)
		}
	}
}

// A link that someone else owns is refused, even in a secure directory; so is a target
// in a directory someone else may write, even through a root-owned link in a secure one.
func TestResolveChecksLinksAndTargets(t *testing.T) {
	base := secureBase(t)
	nobody := privtest.Users(t, 1)[0]
	good := mkdir(t, filepath.Join(base, "good"), 0o755, 0)
	evil := mkdir(t, filepath.Join(base, "evil"), 0o777, 0)
	goodScript := script(t, filepath.Join(good, "s"))
	evilScript := script(t, filepath.Join(evil, "s"))

	userLink := symlink(t, goodScript, filepath.Join(good, "user-link"), int(nobody.UID))
	if r, err := Resolve(userLink, nil); err != nil || r.Insecure == nil {
		t.Errorf("a link owned by %s: %+v %v, want insecure", nobody.Name, r, err)
	}
	toEvil := symlink(t, evilScript, filepath.Join(good, "to-evil"), 0)
	if r, err := Resolve(toEvil, nil); err != nil || r.Insecure == nil || !strings.Contains(r.Insecure.Error(), evil) {
		t.Errorf("a link into a writable directory: %+v %v, want %s named", r, err, evil)
	}
	// A directory on the way that is a link (as /bin on a merged-/usr host): followed,
	// both checked, the real path run.
	dirLink := symlink(t, "good", filepath.Join(base, "dirlink"), 0)
	r, err := Resolve(filepath.Join(dirLink, "s"), nil)
	if err != nil || r.Insecure != nil || r.Path != goodScript {
		t.Errorf("through a secure directory link: %+v %v, want %s", r, err, goodScript)
	}
	// ".." after a link is the link target's parent, as the kernel resolves it.
	r, err = Resolve(filepath.Join(dirLink, "..", "good", "s"), nil)
	if err != nil || r.Path != goodScript {
		t.Errorf("with ..: %+v %v", r, err)
	}
	dirToEvil := symlink(t, evil, filepath.Join(base, "dir-to-evil"), 0)
	if r, err := Resolve(filepath.Join(dirToEvil, "s"), nil); err != nil || r.Insecure == nil {
		t.Errorf("through a link to a writable directory: %+v %v, want insecure", r, err)
	}
}

// The file itself: writable by others, or owned by someone else, is insecure.
func TestResolveFile(t *testing.T) {
	base := secureBase(t)
	nobody := privtest.Users(t, 1)[0]
	s := script(t, filepath.Join(base, "s"))
	if r, err := Resolve(s, nil); err != nil || r.Insecure != nil || r.Path != s {
		t.Fatalf("a root-owned 0755 script: %+v %v", r, err)
	}
	if err := os.Chmod(s, 0o757); err != nil {
		t.Fatal(err)
	}
	if r, _ := Resolve(s, nil); r.Insecure == nil {
		t.Error("a world-writable script passed")
	}
	if err := os.Chmod(s, 0o775); err != nil {
		t.Fatal(err)
	}
	if r, _ := Resolve(s, nil); r.Insecure != nil {
		t.Errorf("group-writable by gid 0 is root's: %v", r.Insecure)
	}
	if err := os.Chown(s, 0, int(nobody.GID)); err != nil {
		t.Fatal(err)
	}
	if r, _ := Resolve(s, nil); r.Insecure == nil {
		t.Error("a script writable by another group passed")
	}
	if err := os.Chmod(s, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(s, int(nobody.UID), 0); err != nil {
		t.Fatal(err)
	}
	if r, _ := Resolve(s, nil); r.Insecure == nil {
		t.Errorf("a script owned by %s passed for root", nobody.Name)
	}
	// Run as its owner, it is fine: that user gains nothing. Run as another, it is not.
	users := privtest.Users(t, 2)
	if r, _ := Resolve(s, users[0].Cred()); r.Insecure != nil {
		t.Errorf("run as its owner %s: %v", users[0].Name, r.Insecure)
	}
	if r, _ := Resolve(s, users[1].Cred()); r.Insecure == nil {
		t.Errorf("run as %s, a script %s owns passed", users[1].Name, users[0].Name)
	}
}

// A sticky world-writable directory (as /tmp) may hold the script's root-owned entry, as
// in keepalived: no one else may rename or remove it.
func TestResolveStickyDirectory(t *testing.T) {
	base := secureBase(t)
	sticky := mkdir(t, filepath.Join(base, "sticky"), 0o777|os.ModeSticky, 0)
	s := script(t, filepath.Join(sticky, "s"))
	if r, err := Resolve(s, nil); err != nil || r.Insecure != nil {
		t.Errorf("a root script in a sticky directory: %+v %v", r, err)
	}
}

// What cannot be walked is an error: missing, a loop, a directory, a FIFO.
func TestResolveErrors(t *testing.T) {
	base := secureBase(t)
	a := filepath.Join(base, "a")
	symlink(t, "b", a, 0)
	symlink(t, "a", filepath.Join(base, "b"), 0)
	if _, err := Resolve(a, nil); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a loop: %v, want ELOOP", err)
	}
	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(base, "missing"), base, fifo, "/", "vrrpd-no-such-program", filepath.Join(fifo, "x")} {
		if r, err := Resolve(p, nil); err == nil {
			t.Errorf("%s: resolved to %+v", p, r)
		}
	}
}

// A relative path is walked from the working directory, which is checked too.
func TestResolveRelative(t *testing.T) {
	base := secureBase(t)
	s := script(t, filepath.Join(base, "s"))
	t.Chdir(base)
	r, err := Resolve("./s", nil)
	if err != nil || r.Insecure != nil || r.Path != s {
		t.Errorf("./s: %+v %v, want %s", r, err, s)
	}
	open := mkdir(t, filepath.Join(base, "open"), 0o777, 0)
	script(t, filepath.Join(open, "s"))
	t.Chdir(open)
	if r, err := Resolve("s", nil); err == nil {
		t.Errorf("a bare name was taken from the working directory: %+v", r)
	}
	if r, err := Resolve("./s", nil); err != nil || r.Insecure == nil {
		t.Errorf("./s in a world-writable working directory: %+v %v, want insecure", r, err)
	}
}

// The runner runs Path, the file Resolve checked, not Args[0] as written: a link swapped
// after the check does not change what runs.
func TestRunnerRunsResolvedPath(t *testing.T) {
	base := secureBase(t)
	ok := script(t, filepath.Join(base, "ok"))
	link := symlink(t, ok, filepath.Join(base, "link"), 0)
	r, err := Resolve(link, nil)
	if err != nil || r.Path != ok {
		t.Fatalf("%+v %v", r, err)
	}
	// The attacker's swap, after the check: the link now leads to a failing program.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	symlink(t, "/bin/false", link, 0)
	ch := make(chan Event, 1)
	rn := NewRunner(ch)
	defer rn.Stop()
	rn.Set([]Script{{Name: "s", Args: []string{link}, Path: r.Path, Interval: time.Hour, Rise: 1, Fall: 1}})
	if ev := next(t, ch); !ev.OK {
		t.Fatalf("event %+v: the swapped link ran, not the checked file", ev)
	}
}
