package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
)

// `vrrpd probe` asks the probe socket of --state-dir: exit 0 when the check passes, 1
// with the reason when it fails or nobody answers; a stale socket of a previous run is
// replaced, a regular file in its place is refused.
func TestProbeSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, probeSocketName)
	var notReady atomic.Pointer[error]
	ready := func() error {
		if e := notReady.Load(); e != nil {
			return *e
		}
		return nil
	}
	probeRun := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"probe"}, args...), &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, msg := probeRun("live", "--state-dir", dir); code != exitFail || !strings.Contains(msg, "probe.sock") {
		t.Errorf("no daemon: exit %d %q, want 1 naming the socket", code, msg)
	}
	// A socket left by a previous run is replaced.
	old, err := serveProbes(sock, metrics.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	srv, err := serveProbes(sock, metrics.Options{Ready: ready}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	defer srv.Close()
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v (%v), want 0600", fi.Mode(), err)
	}
	for _, what := range []string{"live", "ready", "health"} {
		if code, msg := probeRun(what, "--state-dir", dir); code != exitOK {
			t.Errorf("probe %s: exit %d %q", what, code, msg)
		}
	}
	e := errors.New("2 instance(s) still in INIT: VI_1, VI_2")
	notReady.Store(&e)
	if code, msg := probeRun("--state-dir", dir, "ready"); code != exitFail || !strings.Contains(msg, "503") || !strings.Contains(msg, "still in INIT") {
		t.Errorf("probe ready while not ready: exit %d %q", code, msg)
	}
	if code, _ := probeRun("live", "--state-dir", dir); code != exitOK {
		t.Errorf("probe live while not ready: exit %d, want 0 (liveness has its own check)", code)
	}
	if code, _ := probeRun("dead", "--state-dir", dir); code != exitConfig {
		t.Errorf("probe dead: exit %d, want %d", code, exitConfig)
	}
	// A regular file where the socket goes is somebody else's: refused, left alone.
	file := filepath.Join(t.TempDir(), probeSocketName)
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := serveProbes(file, metrics.Options{}, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("over a regular file: %v", err)
	}
}
