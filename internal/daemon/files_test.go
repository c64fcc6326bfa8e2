package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/privtest"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// checkWithin runs the loop's interface check (which reads the track files under the
// loop's lock) and fails the test if it does not return within a few seconds.
func checkWithin(t *testing.T, d *Daemon, now time.Time) {
	t.Helper()
	done := make(chan struct{})
	go func() { d.checkInterfaces(now); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the interface check blocked on a track file")
	}
}

// Whatever is swapped in at a track_file path, the loop never blocks and only a regular
// file at the path itself is read: a FIFO (with a writer that never writes, so a
// blocking read would wait for ever) and a symbolic link to a file holding a value count
// as a missing file, 0.
func TestTrackFileSwapsNeverBlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prio")
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		_ = os.Remove(path)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("3\n")
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.TrackFiles = []config.TrackFile{{File: "f", Weight: -10}}
	cfg := &config.Config{Instances: []config.Instance{ic},
		TrackFiles: []config.TrackFileSpec{{Name: "f", Path: path, Weight: 1}}}
	_, d, _ := startWith(t, cfg)
	now := takeover(150)
	advance(d, now)
	prio := func(want uint8, what string) {
		t.Helper()
		checkWithin(t, d, now)
		if s := snapOf(t, d, "VI_1"); s.Priority != want {
			t.Fatalf("%s: priority %d, want %d", what, s.Priority, want)
		}
	}
	prio(120, "a regular file holding 3")

	// A FIFO, held open by a writer that writes nothing.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_RDWR, 0) // read-write: never blocks, keeps a writer
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	prio(150, "a FIFO")
	if s := snapOf(t, d, "VI_1"); s.State == vrrp.StateFault {
		t.Fatal("a FIFO put the instance in FAULT")
	}

	// A symbolic link to a file holding 5: refused, not followed.
	w.Close()
	write("3\n")
	prio(120, "a regular file again")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	prio(150, "a symbolic link to a file holding 5")
	write("2\n")
	prio(130, "a regular file holding 2")
}

// init_file, written as root, never writes through a symbolic link or into a FIFO at
// the path, even with overwrite; a missing file is created (0644), and an existing
// regular one replaced with overwrite.
func TestInitFileNeverFollows(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var specs []config.TrackFileSpec
	for i, p := range []string{link, fifo, missing, regular} {
		specs = append(specs, config.TrackFileSpec{Name: string(rune('a' + i)), Path: p, Weight: 1, Init: true, InitValue: 7, Overwrite: true})
	}
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	for _, s := range specs {
		ic.TrackFiles = append(ic.TrackFiles, config.TrackFile{File: s.Name, Weight: 1})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		startWith(t, &config.Config{Instances: []config.Instance{ic}, TrackFiles: specs})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("start blocked on an init_file")
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", err)
	}
	for _, p := range []string{missing, regular} {
		fi, err := os.Lstat(p)
		b, _ := os.ReadFile(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 || string(b) != "7\n" {
			t.Errorf("%s: %v %v %q, want a 0644 file holding 7", p, fi, err, b)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*vrrpd-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// The daemon resolves each hook as its own user, and a script path with a writable
// directory on it (the symlink-swap attack) is refused under enable_script_security,
// run as it resolves without it.
func TestHooksAndScriptsResolved(t *testing.T) {
	privtest.RequireRoot(t)
	users := privtest.Users(t, 2)
	open := privtest.SharedDir(t) // 0777: anyone may swap what is in it
	link := filepath.Join(open, "check")
	if err := os.Symlink("/bin/true", link); err != nil {
		t.Fatal(err)
	}
	h := newFakeHost()
	d := newTestDaemon(t, h)
	t.Cleanup(d.trk.runner.Stop)
	ic := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	ic.Notify = config.Notify{
		Master:  config.Command{Args: []string{"/bin/true", "m"}, User: users[0].Name},
		Generic: config.Command{Args: []string{"/bin/true", "g"}, User: users[1].Name},
		Backup:  config.Command{Args: []string{link}, User: users[0].Name},
	}
	ic.TrackScripts = []config.TrackScript{{Script: "chk", Weight: 0}}
	cfg := &config.Config{Instances: []config.Instance{ic},
		Scripts:        []config.Script{{Name: "chk", Command: []string{link}, Interval: time.Hour, Rise: 1, Fall: 1}},
		ScriptSettings: config.ScriptSettings{User: users[0].Name, Security: true}}
	d.recoverVIPs()
	d.start(cfg, t0)
	in := d.byName["VI_1"]
	if c := in.hooks.Master.Cred; c == nil || c.Uid != users[0].UID {
		t.Errorf("notify_master runs as %+v, want %s", c, users[0].Name)
	}
	if c := in.hooks.Generic.Cred; c == nil || c.Uid != users[1].UID {
		t.Errorf("notify runs as %+v, want %s", c, users[1].Name)
	}
	if p := in.hooks.Master.Path; p == "" || !filepath.IsAbs(p) {
		t.Errorf("notify_master path %q, want the resolved file", p)
	}
	if !in.hooks.Backup.Empty() {
		t.Errorf("notify_backup through %s kept: %+v", open, in.hooks.Backup)
	}
	if st := d.trk.scripts["chk"]; st == nil || st.disabled == nil || !strings.Contains(st.disabled.Error(), open) {
		t.Errorf("the script through %s: %+v, want it disabled naming the directory", open, st)
	}
}

// Without script_user, the default is keepalived_script if it exists, else root with a
// warning; with enable_script_security and neither, the scripts that name no user do not
// run at all (keepalived 2.2.7 refuses them too), and never as root.
func TestDefaultScriptUser(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	cfg := &config.Config{Scripts: []config.Script{{Name: "chk", Command: []string{"/bin/true"}}}}
	if ks, err := track.LookupCredential(track.DefaultScriptUser, ""); err == nil {
		// This host has the user: it is the default, with or without security.
		for _, sec := range []bool{false, true} {
			cfg.ScriptSettings.Security = sec
			if cred, err := d.defaultScriptCred(cfg); err != nil || cred == nil || cred.Uid != ks.Uid {
				t.Errorf("security %v: %+v %v, want %s", sec, cred, err, track.DefaultScriptUser)
			}
		}
		return
	}
	if cred, err := d.defaultScriptCred(cfg); cred != nil || err != nil {
		t.Errorf("no script_user, no %s: %+v %v, want root", track.DefaultScriptUser, cred, err)
	}
	cfg.ScriptSettings.Security = true
	if cred, err := d.defaultScriptCred(cfg); cred != nil || err == nil {
		t.Errorf("with enable_script_security: %+v %v, want no user at all", cred, err)
	}
	cfg.ScriptSettings.User = "vrrpd-no-such-user"
	cfg.ScriptSettings.Security = false
	if _, err := d.defaultScriptCred(cfg); err == nil {
		t.Error("an unknown script_user (vanished after the load) gave a user")
	}
	d.trk.defaultCred, d.trk.defaultErr = d.defaultScriptCred(cfg)
	if _, err := d.runnable(cfg.Scripts[0]); err == nil {
		t.Error("a script of an unknown default user is runnable")
	}
}
