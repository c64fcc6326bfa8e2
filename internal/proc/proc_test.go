package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/privtest"
)

func sh(script string) Command { return Command{Args: []string{"/bin/sh", "-c", script}} }

// The exit status decides: 0 is ok; any other is a failure whose error carries the code.
func TestRunExitCodes(t *testing.T) {
	for _, code := range []int{0, 1, 2, 127} {
		ok, timedOut, err := Run(context.Background(), sh("exit "+strconv.Itoa(code)), 10*time.Second)
		if ok != (code == 0) || timedOut {
			t.Errorf("exit %d: ok %v timedOut %v", code, ok, timedOut)
		}
		var ee *exec.ExitError
		switch {
		case code == 0 && err != nil:
			t.Errorf("exit 0: err %v", err)
		case code != 0 && (!errors.As(err, &ee) || ee.ExitCode() != code):
			t.Errorf("exit %d: err %v, want an exit status %d", code, err, code)
		}
	}
	if ok, _, err := Run(context.Background(), Command{Args: []string{"/nonexistent/prog"}}, time.Second); ok || err == nil {
		t.Errorf("a missing program: ok %v err %v, want a start error", ok, err)
	}
	if ok, _, err := Run(context.Background(), Command{}, time.Second); ok || err == nil {
		t.Error("no command ran")
	}
}

// On timeout the whole process group dies, a child that ignores SIGTERM included
// (SIGKILL after KillGrace), and the run reports timedOut.
func TestRunTimeoutKillsGroup(t *testing.T) {
	defer func(g time.Duration) { KillGrace = g }(KillGrace)
	KillGrace = 200 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "child")
	script := "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > " + pidFile + "; exec sleep 60' & wait"
	start := time.Now()
	ok, timedOut, err := Run(context.Background(), sh(script), 300*time.Millisecond)
	if ok || !timedOut || err != nil {
		t.Fatalf("ok %v timedOut %v err %v, want a timeout", ok, timedOut, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v, want about timeout + KillGrace", took)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for pid > 0 && alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the timed-out script still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A cancelled context kills the run at once.
func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	ok, _, err := Run(ctx, sh("sleep 60"), time.Minute)
	if ok || !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("ok %v err %v after %v, want cancelled soon", ok, err, time.Since(start))
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// A script sees PATH and the locale, never the rest of vrrpd's environment (a secret in
// it, or vrrpd's own PATH).
func TestRunMinimalEnvironment(t *testing.T) {
	t.Setenv("VRRPD_SECRET", "x")
	t.Setenv("PATH", "/opt/vrrpd-test/bin:"+os.Getenv("PATH"))
	t.Setenv("TZ", "UTC")
	out := filepath.Join(t.TempDir(), "env")
	ok, _, err := Run(context.Background(), sh("env > "+out), 10*time.Second)
	if !ok {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	if _, ok := env["VRRPD_SECRET"]; ok {
		t.Error("the script saw VRRPD_SECRET")
	}
	if env["PATH"] != SearchPath {
		t.Errorf("PATH=%q, want %q", env["PATH"], SearchPath)
	}
	if env["TZ"] != "UTC" {
		t.Errorf("TZ=%q, want it passed on", env["TZ"])
	}
	for k := range env {
		switch k {
		case "PATH", "TZ", "LANG", "LC_ALL", "PWD", "SHLVL", "_": // the last three are sh's own
		default:
			t.Errorf("the script saw %s", k)
		}
	}
}

// Path is what runs; Args[0] is only the name the program sees.
func TestRunPathWins(t *testing.T) {
	out := filepath.Join(t.TempDir(), "name")
	c := Command{Args: []string{"/nonexistent/as-written", "-c", `echo "$0" > ` + out}, Path: "/bin/sh"}
	if ok, _, err := Run(context.Background(), c, 10*time.Second); !ok {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "/nonexistent/as-written" {
		t.Errorf("$0 = %q, want the name as written", b)
	}
}

// A bare name is found in SearchPath, whatever vrrpd's own PATH says.
func TestLookPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p, err := LookPath("sh")
	if err != nil || !filepath.IsAbs(p) {
		t.Fatalf("LookPath(sh) = %q, %v", p, err)
	}
	if _, err := LookPath("vrrpd-no-such-program"); err == nil {
		t.Error("found a program that does not exist")
	}
	if p, _ := LookPath("./x"); p != "./x" {
		t.Errorf("a path with a slash became %q", p)
	}
}

// Cred runs the script as that user, with that group only.
func TestRunAsUser(t *testing.T) {
	privtest.RequireRoot(t)
	u := privtest.Users(t, 1)[0]
	out := filepath.Join(privtest.SharedDir(t), "id")
	c := sh("echo $(id -u) $(id -g) $(id -G) > " + out)
	c.Cred = u.Cred()
	if ok, _, err := Run(context.Background(), c, 10*time.Second); !ok {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	g := strconv.Itoa(int(u.GID))
	if got, want := strings.TrimSpace(string(b)), strconv.Itoa(int(u.UID))+" "+g+" "+g; got != want {
		t.Errorf("uid gid groups = %q, want %q", got, want)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(out, &st); err != nil || st.Uid != u.UID {
		t.Errorf("the output file is owned by %d (%v), want %d", st.Uid, err, u.UID)
	}
}

// readPids reads the pids the script wrote to files, one a file, waiting for each file:
// the script writes them from background processes.
func readPids(t *testing.T, files ...string) []int {
	t.Helper()
	var pids []int
	for _, f := range files {
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := os.ReadFile(f)
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
				pids = append(pids, pid)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pid in %s", f)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return pids
}

// waitGone fails unless every pid is gone (or a zombie) within a generous deadline.
func waitGone(t *testing.T, what string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: process %d still runs", what, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// result is what Run returned.
type result struct {
	ok, timedOut bool
	err          error
}

// runAsync runs c in the background, so that the test can look at its processes while
// it runs.
func runAsync(ctx context.Context, c Command, timeout time.Duration) <-chan result {
	ch := make(chan result, 1)
	go func() {
		ok, timedOut, err := Run(ctx, c, timeout)
		ch <- result{ok, timedOut, err}
	}()
	return ch
}

// A timeout kills the whole process group: the script's child and that child's own
// child (a grandchild of the script), both sleeping well past the timeout, are gone.
func TestRunTimeoutKillsChildAndGrandchild(t *testing.T) {
	dir := t.TempDir()
	child, grandchild := filepath.Join(dir, "child"), filepath.Join(dir, "grandchild")
	// The child is a shell that starts a sleeping grandchild and waits for it.
	script := "sh -c 'sleep 60 & echo $! > " + grandchild + "; echo $$ > " + child + "; wait' & wait"
	res := runAsync(context.Background(), sh(script), 3*time.Second)
	pids := readPids(t, child, grandchild)
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d gone before the timeout", pid)
		}
	}
	if r := <-res; r.ok || !r.timedOut || r.err != nil {
		t.Fatalf("ok %v timedOut %v err %v, want a timeout", r.ok, r.timedOut, r.err)
	}
	waitGone(t, "after the timeout", pids...)
}

// A script that dies at SIGTERM leaves its group no grace: a grandchild that ignores
// SIGTERM gets SIGKILL as soon as the script is gone, not KillGrace later.
func TestRunTimeoutKillsAtOnceWhenScriptExits(t *testing.T) {
	defer func(g time.Duration) { KillGrace = g }(KillGrace)
	KillGrace = time.Minute
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	// The script's own shell takes SIGTERM's default (it exits); its background child
	// ignores SIGTERM and sleeps.
	script := "sh -c 'trap \"\" TERM; echo $$ > " + pidFile + "; exec sleep 60' & wait"
	start := time.Now()
	res := runAsync(context.Background(), sh(script), 3*time.Second)
	pids := readPids(t, pidFile)
	if r := <-res; r.ok || !r.timedOut || r.err != nil {
		t.Fatalf("ok %v timedOut %v err %v, want a timeout", r.ok, r.timedOut, r.err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v: waited out KillGrace (%v) although the script had exited", took, KillGrace)
	}
	waitGone(t, "after the timeout", pids...)
}

// A cancelled context kills the whole group too, not only the script.
func TestRunCancelKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := runAsync(ctx, sh("sh -c 'echo $$ > "+pidFile+"; exec sleep 60' & wait"), time.Minute)
	pids := readPids(t, pidFile)
	cancel()
	if r := <-res; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", r.err)
	}
	waitGone(t, "after the cancel", pids...)
}

// A script killed by a signal (not by the timeout) is a failure that says so, not a
// timeout.
func TestRunKilledBySignal(t *testing.T) {
	ok, timedOut, err := Run(context.Background(), sh("kill -KILL $$"), 10*time.Second)
	var ee *exec.ExitError
	if ok || timedOut || !errors.As(err, &ee) {
		t.Fatalf("ok %v timedOut %v err %v, want an exit status", ok, timedOut, err)
	}
	ws, isWS := ee.Sys().(syscall.WaitStatus)
	if !isWS || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("status %v, want killed by SIGKILL", ee)
	}
}

// A script run as another user is still timed out and its whole group killed (vrrpd,
// root, may signal it), and its exit status is reported like any other.
func TestRunAsUserTimeoutAndExitCode(t *testing.T) {
	privtest.RequireRoot(t)
	u := privtest.Users(t, 1)[0]
	child := filepath.Join(privtest.SharedDir(t), "child")
	c := sh("sh -c 'echo $$ > " + child + "; exec sleep 60' & wait")
	c.Cred = u.Cred()
	res := runAsync(context.Background(), c, 3*time.Second)
	pids := readPids(t, child)
	var st syscall.Stat_t
	if err := syscall.Stat(child, &st); err != nil || st.Uid != u.UID {
		t.Errorf("the child ran as %d (%v), want %d", st.Uid, err, u.UID)
	}
	if r := <-res; r.ok || !r.timedOut || r.err != nil {
		t.Fatalf("ok %v timedOut %v err %v, want a timeout", r.ok, r.timedOut, r.err)
	}
	waitGone(t, "the other user's group after the timeout", pids...)

	c = sh("exit 3")
	c.Cred = u.Cred()
	ok, _, err := Run(context.Background(), c, 10*time.Second)
	var ee *exec.ExitError
	if ok || !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("exit 3 as %s: ok %v err %v", u.Name, ok, err)
	}
}
