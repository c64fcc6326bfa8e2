package track

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/proc"
)

func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10 s")
	}
	return Event{}
}

func TestRunnerResultsAndReload(t *testing.T) {
	dir := t.TempDir()
	flag := filepath.Join(dir, "ok")
	ch := make(chan Event, 4)
	r := NewRunner(ch)
	defer r.Stop()
	s := Script{Name: "chk", Args: []string{"/bin/test", "-e", flag}, Interval: 50 * time.Millisecond, Rise: 1, Fall: 1}
	r.Set([]Script{s})
	ev := next(t, ch)
	if ev.OK || ev.Status != StatusFailed || !ev.Changed || ev.Gen != r.Gen("chk") {
		t.Fatalf("first event %+v, want a failure that changed the status", ev)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for ev = next(t, ch); !ev.OK; ev = next(t, ch) {
	}
	if ev.Status != StatusGood || !ev.Changed {
		t.Fatalf("event %+v, want GOOD after the file appeared", ev)
	}
	// The same settings again keep the running copy; a change restarts it.
	g := r.Gen("chk")
	r.Set([]Script{s})
	if r.Gen("chk") != g {
		t.Fatal("an unchanged script was restarted")
	}
	s.Fall = 2
	r.Set([]Script{s})
	if r.Gen("chk") == g {
		t.Fatal("a changed script kept its old copy")
	}
	r.Set(nil)
	if r.Gen("chk") != 0 {
		t.Fatal("a removed script still runs")
	}
}

// A script that hangs is killed at its timeout with the children it started, and the run
// counts as failed.
func TestRunnerTimeoutKillsGroup(t *testing.T) {
	defer func(g time.Duration) { proc.KillGrace = g }(proc.KillGrace)
	proc.KillGrace = 200 * time.Millisecond
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	// The child ignores SIGTERM, so only the group's SIGKILL ends it.
	script := "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > " + pidFile + "; exec sleep 60' & wait"
	ch := make(chan Event, 1)
	r := NewRunner(ch)
	defer r.Stop()
	start := time.Now()
	r.Set([]Script{{Name: "hang", Args: []string{"/bin/sh", "-c", script}, Interval: time.Hour, Timeout: 300 * time.Millisecond, Rise: 1, Fall: 1}})
	ev := next(t, ch)
	took := time.Since(start)
	if ev.OK || !ev.TimedOut || ev.Status != StatusFailed {
		t.Fatalf("event %+v, want a timed-out failure", ev)
	}
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("the run took %v, want about timeout + grace (500 ms)", took)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still alive after the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunnerStartFailure(t *testing.T) {
	ch := make(chan Event, 1)
	r := NewRunner(ch)
	defer r.Stop()
	r.Set([]Script{{Name: "missing", Args: []string{"/nonexistent/check"}, Interval: time.Hour, Rise: 1, Fall: 1}})
	if ev := next(t, ch); ev.OK || ev.Err == nil || ev.Status != StatusFailed {
		t.Fatalf("event %+v, want a failure with an error", ev)
	}
}

// A script that dies of the SIGTERM (the usual case) is reported at once, and the
// children it leaves in its group are killed too.
func TestRunnerTimeoutTermExits(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	ch := make(chan Event, 1)
	r := NewRunner(ch)
	defer r.Stop()
	start := time.Now()
	r.Set([]Script{{Name: "hang", Args: []string{"/bin/sh", "-c", "sleep 60 & echo $! > " + pidFile + "; wait"}, Interval: time.Hour, Timeout: 300 * time.Millisecond, Rise: 1, Fall: 1}})
	ev := next(t, ch)
	if ev.OK || !ev.TimedOut || time.Since(start) > time.Second {
		t.Fatalf("event %+v after %v, want a timed-out failure soon after 300 ms", ev, time.Since(start))
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	time.Sleep(50 * time.Millisecond)
	if pid <= 0 || alive(pid) {
		t.Fatalf("child %d still alive", pid)
	}
}

// alive reports whether pid runs: exists and is not a zombie (a killed child whose
// parent died waits for init, which in a container may be slow to reap it).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestPhaseSpreadsTrackers: 255 trackers named as a large keepalived.conf names them get
// offsets inside their interval, the same each time, and spread over it: no tenth of the
// interval holds more than twice its share.
func TestPhaseSpreadsTrackers(t *testing.T) {
	const n, iv = 255, time.Second
	var buckets [10]int
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("chk_%d", i)
		p := phase(name, iv)
		if p < 0 || p >= iv {
			t.Fatalf("phase(%s) = %v, outside [0, %v)", name, p, iv)
		}
		if p != phase(name, iv) {
			t.Fatalf("phase(%s) not stable", name)
		}
		buckets[p*10/iv]++
	}
	for i, c := range buckets {
		if c > 2*n/10 {
			t.Errorf("tenth %d of the interval holds %d of %d trackers: %v", i, c, n, buckets)
		}
	}
	if phase("x", 0) != 0 {
		t.Error("phase with no interval")
	}
}
