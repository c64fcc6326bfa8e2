package notify

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/privtest"
)

// A regular file at the notify_fifo path is never opened, so never written into, and is
// left where it is.
func TestFIFORefusesRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	const content = "precious\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenFIFO(path); err == nil {
		f.Write("VI_1", Master, 100)
		f.Close()
		t.Fatal("a regular file was opened as the FIFO")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != content {
		t.Fatalf("the file now holds %q (%v), want %q untouched", b, err, content)
	}
}

// A symbolic link at the path, to a FIFO or to a regular file, is refused: neither the
// link nor its target is touched.
func TestFIFORefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "real-fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{fifo, file} {
		link := filepath.Join(dir, "link-to-"+filepath.Base(target))
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if f, err := OpenFIFO(link); err == nil {
			f.Close()
			t.Errorf("a symbolic link to %s was opened", target)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link %s was removed or replaced: %v", link, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "x\n" {
		t.Errorf("the link's target now holds %q", b)
	}
}

// Each hook runs as its own user: notify_master as one, the generic notify as another,
// as keepalived's "notify_master SCRIPT USER" gives each hook its user.
func TestHooksRunAsTheirOwnUsers(t *testing.T) {
	privtest.RequireRoot(t)
	users := privtest.Users(t, 2)
	dir := privtest.SharedDir(t)
	idTo := func(file string, u privtest.User) Hook {
		return Hook{Args: []string{"/bin/sh", "-c", "id -u > " + file}, Cred: u.Cred()}
	}
	s := Scripts{
		Master:  idTo(filepath.Join(dir, "master"), users[0]),
		Generic: idTo(filepath.Join(dir, "generic"), users[1]),
	}
	n := New(10*time.Second, nil)
	n.Notify("VI_1", s, Master, 100)
	n.Close(context.Background())
	for file, u := range map[string]privtest.User{"master": users[0], "generic": users[1]} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("%s hook: %v (failed %d)", file, err, n.Failed())
		}
		if got := strings.TrimSpace(string(b)); got != strconv.Itoa(int(u.UID)) {
			t.Errorf("%s hook ran as uid %s, want %d (%s)", file, got, u.UID, u.Name)
		}
	}
}

// Close removes the FIFO it made, and not a file that took its name meanwhile.
func TestFIFOCloseRemovesOnlyItsOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	f, err := OpenFIFO(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := os.ReadFile(path); err != nil || string(b) != "other\n" {
		t.Errorf("the file in the FIFO's place: %q %v, want it kept", b, err)
	}
}
