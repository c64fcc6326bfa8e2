// Package proc runs the scripts keepalived configurations name (checks, notify hooks) the
// way keepalived does: in a process group of their own, as a given user, with a timeout
// after which the whole group is killed.
package proc

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// KillGrace is how long a script that timed out has between SIGTERM and SIGKILL, as in
// keepalived (2 s). Tests shorten it.
var KillGrace = 2 * time.Second

// errNoCommand is the failure of a script with no command.
var errNoCommand = errors.New("no command")

// Run runs args in a process group of its own as cred and waits for it, at most
// timeout: then the group gets SIGTERM and, KillGrace later or as soon as the script
// itself exits, SIGKILL, so no child it left behind outlives it. The script's output
// goes to /dev/null, so a child holding it open cannot make the wait hang.
func Run(ctx context.Context, args []string, cred *syscall.Credential, timeout time.Duration) (ok, timedOut bool, err error) {
	if len(args) == 0 {
		return false, false, errNoCommand
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
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
