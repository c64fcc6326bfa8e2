package notify

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/proc"
)

// logScript returns a command that appends its tag and arguments to file, one line a run.
func logScript(file, tag string) Hook {
	return Hook{Args: []string{"/bin/sh", "-c", `echo "` + tag + ` $*" >> ` + file, "sh"}}
}

func TestHooksRunInOrder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log")
	n := New(5*time.Second, nil)
	s := Scripts{
		Master:  logScript(file, "master"),
		Fault:   logScript(file, "fault"),
		Generic: logScript(file, "notify"),
	}
	n.Notify("VI_1", s, Backup, 100)
	n.Notify("VI_1", s, Master, 100)
	n.Notify("VI_1", s, Fault, 80)
	n.Notify("VI_1", s, Stop, 80)
	n.Close(context.Background())
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"notify INSTANCE VI_1 BACKUP 100",
		"master ",
		"notify INSTANCE VI_1 MASTER 100",
		"fault ",
		"notify INSTANCE VI_1 FAULT 80",
		"notify INSTANCE VI_1 STOP 80",
	}, "\n") + "\n"
	if string(b) != want {
		t.Errorf("hooks ran as\n%s\nwant\n%s", b, want)
	}
	if n.Failed() != 0 || n.Dropped() != 0 {
		t.Errorf("failed %d dropped %d, want none", n.Failed(), n.Dropped())
	}
}

// A hook that hangs delays only its own instance's later hooks, never the caller, and is
// killed at the timeout; a full queue drops transitions and counts them.
func TestHangingHook(t *testing.T) {
	defer func(g time.Duration) { proc.KillGrace = g }(proc.KillGrace)
	proc.KillGrace = 100 * time.Millisecond
	file := filepath.Join(t.TempDir(), "log")
	n := New(300*time.Millisecond, nil)
	hang := Scripts{Master: Hook{Args: []string{"/bin/sleep", "60"}}}
	other := Scripts{Generic: logScript(file, "other")}
	start := time.Now()
	for range QueueLen + 5 {
		n.Notify("hang", hang, Master, 100)
	}
	n.Notify("other", other, Master, 100)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Notify blocked for %v", took)
	}
	if n.Dropped() == 0 {
		t.Error("no transition dropped from a full queue")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, _ := os.ReadFile(file); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other instance's hook did not run while one hung")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	n.Close(ctx)
	if n.Failed() == 0 {
		t.Error("no hook counted failed after timing out")
	}
}

func TestFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	f, err := OpenFIFO(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f.Write("VI_1", Master, 150)
	f.Write("VI_1", Fault, 90)
	buf := make([]byte, 256)
	n, err := r.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(buf[:n]), "INSTANCE \"VI_1\" MASTER 150\nINSTANCE \"VI_1\" FAULT 90\n"; got != want {
		t.Errorf("fifo read %q, want %q", got, want)
	}
	// Nobody reading and the pipe full: writes are dropped, never blocking.
	r.Close()
	done := make(chan struct{})
	go func() {
		for range 20000 {
			f.Write("VI_1", Backup, 100)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("writing to a full FIFO blocked")
	}
	f.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the FIFO it created is still there: %v", err)
	}
}

// Forget lets the forgotten instance's queued hooks run, ends its queue, and a later
// Notify for the name starts a new one.
func TestForget(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log")
	n := New(5*time.Second, nil)
	s := Scripts{Generic: logScript(file, "notify")}
	n.Notify("VI_1", s, Stop, 100)
	n.Forget("VI_1")
	n.mu.Lock()
	queues := len(n.queues)
	n.mu.Unlock()
	if queues != 0 {
		t.Errorf("%d queues after Forget, want 0", queues)
	}
	n.Notify("VI_1", s, Backup, 100)
	n.Close(context.Background())
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The old queue's STOP and the new queue's BACKUP run on two goroutines: any order.
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	if got, want := strings.Join(lines, "|"), "notify INSTANCE VI_1 BACKUP 100|notify INSTANCE VI_1 STOP 100"; got != want {
		t.Errorf("hooks ran as %q, want %q", got, want)
	}
}
