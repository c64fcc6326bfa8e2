package netlab_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// A program started in a host runs in its namespace, its output is kept, SIGTERM stops it
// cleanly, and a program that fails its exit is reported.
func TestProc(t *testing.T) {
	netlabtest.Require(t)
	h := netlabtest.New(t, "a").Host("a")

	p, err := h.Start("sh@a", []string{"GREETING=hello"}, "sh", "-c",
		`trap 'kill $!; exit 0' TERM; echo "$GREETING from $(ip -br link show eth0 | cut -d@ -f1)"; sleep 30 & wait`)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Output(), "hello from eth0") {
		if time.Now().After(deadline) {
			t.Fatalf("output %q, want the greeting from the host's eth0", p.Output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Running() {
		t.Fatal("not running")
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p.Running() {
		t.Fatal("still running after Stop")
	}

	failing, err := h.Start("false@a", nil, "sh", "-c", "trap 'kill $!; exit 3' TERM; sleep 30 & wait")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the shell set its trap
	if err := failing.Stop(5 * time.Second); err == nil {
		t.Fatal("Stop of a program exiting 3 returned no error")
	}
}

// A program started with a log file writes to it directly (its runs appended), in a
// process group of its own; Wait returns its exit status, and kills it past the timeout.
func TestProcLogFileAndWait(t *testing.T) {
	netlabtest.Require(t)
	h := netlabtest.New(t, "a").Host("a")
	log := t.TempDir() + "/prog.log"
	opts := netlab.ProcOptions{LogFile: log, OwnGroup: true}

	p, err := h.StartWith("first@a", opts, "sh", "-c", "echo first run; exit 4")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(5 * time.Second); err == nil || err.Error() != "exit status 4" {
		t.Fatalf("Wait = %v, want exit status 4", err)
	}
	if err := p.Err(); err == nil || err.Error() != "exit status 4" {
		t.Errorf("Err = %v after the exit, want exit status 4", err)
	}

	p, err = h.StartWith("second@a", opts, "sh", "-c", "echo second run; sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if pgid, err := unix.Getpgid(p.Pid()); err != nil || pgid != p.Pid() {
		t.Errorf("process group %d (%v), want its own (%d)", pgid, err, p.Pid())
	}
	if p.Err() != nil {
		t.Errorf("Err = %v while running", p.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Output(), "second run") {
		if time.Now().After(deadline) {
			t.Fatalf("output %q, want the second run's line", p.Output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// It wrote, so `ip netns exec` has entered the namespace and exec'd it.
	if pids, err := h.Pids(); err != nil || !slices.Contains(pids, p.Pid()) {
		t.Errorf("Pids() = %v, %v; want it to list %d", pids, err, p.Pid())
	}
	if b, err := os.ReadFile(log); err != nil || string(b) != "first run\nsecond run\n" || p.Output() != string(b) {
		t.Errorf("log file %q (%v), Output %q: want both runs, appended", b, err, p.Output())
	}
	if err := p.Wait(100 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not exit within") {
		t.Errorf("Wait on a program that keeps running = %v, want a timeout", err)
	}
	if p.Running() {
		t.Error("still running after Wait timed out")
	}
}
