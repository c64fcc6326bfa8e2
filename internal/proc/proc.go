// Package proc runs the scripts keepalived configurations name (checks, notify hooks) the
// way keepalived does: in a process group of their own, as a given user, with a timeout
// after which the whole group is killed; and, stricter than keepalived, with a minimal
// environment of their own rather than the daemon's.
package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// KillGrace is how long a script that timed out has between SIGTERM and SIGKILL, as in
// keepalived (2 s). Tests shorten it.
var KillGrace = 2 * time.Second

// errNoCommand is the failure of a script with no command.
var errNoCommand = errors.New("no command")

// Command is one script to run.
type Command struct {
	// Args is the command line as configured: Args[0] is the program as written (the
	// script sees it as its name), the rest its arguments.
	Args []string
	// Path is the file to execute: the one the security check resolved and checked
	// (package track). Empty runs Args[0], a bare name looked up in SearchPath.
	Path string
	// Cred is the user the script runs as; nil runs it as the daemon's own user.
	Cred *syscall.Credential
}

// Empty reports whether there is no command.
func (c Command) Empty() bool { return len(c.Args) == 0 }

// SearchPath is the PATH of every script, and where a bare program name is looked up:
// systemd's default PATH for services, so a script finds what it would under
// keepalived.service whatever vrrpd's own environment holds.
const SearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// passEnv are the variables copied from vrrpd's environment when set: the locale and
// the time zone, which change a script's output but carry nothing secret. systemd gives
// keepalived's scripts these (from locale.conf) and PATH.
var passEnv = []string{"LANG", "LC_ALL", "TZ"}

// Env returns the environment every script gets: PATH=SearchPath and passEnv from
// vrrpd's environment, nothing else. vrrpd's environment may hold what a script user
// must not see (a token, a proxy's password); keepalived passes its own whole.
func Env() []string {
	env := []string{"PATH=" + SearchPath}
	for _, k := range passEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// LookPath finds a bare program name in SearchPath (a name with a slash is returned as
// it is): scripts are found where their own PATH would find them, not through vrrpd's.
func LookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(SearchPath) {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// Run runs c in a process group of its own as c.Cred, with Env, and waits for it, at
// most timeout: then the group gets SIGTERM and, KillGrace later or as soon as the
// script itself exits, SIGKILL, so no child it left behind outlives it. The script's
// output goes to /dev/null, so a child holding it open cannot make the wait hang. A
// failed run's err is its *exec.ExitError (the exit status), or why it could not start.
func Run(ctx context.Context, c Command, timeout time.Duration) (ok, timedOut bool, err error) {
	if c.Empty() {
		return false, false, errNoCommand
	}
	path := c.Path
	if path == "" {
		if path, err = LookPath(c.Args[0]); err != nil {
			return false, false, err
		}
	}
	cmd := &exec.Cmd{Path: path, Args: c.Args, Env: Env()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.Cred}
	if err := start(cmd); err != nil {
		return false, false, err
	}
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-waited:
		// What it started in the background and left running stays, as in keepalived.
		return err == nil, false, err // the exit status, for the log
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		g := time.NewTimer(KillGrace)
		exited := false
		select {
		case <-waited:
			exited = true
		case <-g.C:
		case <-ctx.Done():
		}
		g.Stop()
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if !exited {
			<-waited
		}
		return false, true, nil
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		return false, false, ctx.Err()
	}
}
