package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Proc is a program running inside a lab host, with its output kept (for a test log, to
// look for a log line, or in a log file the program may outlive this process with).
type Proc struct {
	Name    string
	Host    *Host
	cmd     *exec.Cmd
	out     syncBuffer
	logFile string // when set, the output is there instead of in out
	done    chan struct{}
	err     error
}

// ProcOptions are the less common ways to start a program, for [Host.StartWith].
type ProcOptions struct {
	// Env, when not nil, adds to the environment.
	Env []string
	// LogFile, when set, takes the output instead of memory: the file is opened for
	// appending (created if need be) and handed to the program, which writes to it
	// directly. No pipe ties the program to this process, so it may keep running, and
	// logging, after this process exits. Output reads the file back.
	LogFile string
	// OwnGroup starts the program in a process group of its own, so that a Ctrl-C at the
	// terminal reaches this process alone, which can then stop the program itself (or
	// leave it running).
	OwnGroup bool
}

// Start runs bin with args inside h. `ip netns exec` execs the program itself, so signals
// sent to the Proc reach it directly. env, when not nil, adds to the environment.
func (h *Host) Start(name string, env []string, bin string, args ...string) (*Proc, error) {
	return h.StartWith(name, ProcOptions{Env: env}, bin, args...)
}

// StartWith is [Host.Start] with options.
func (h *Host) StartWith(name string, opts ProcOptions, bin string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, Host: h, logFile: opts.LogFile, done: make(chan struct{})}
	p.cmd = h.Command(context.Background(), bin, args...)
	if opts.Env != nil {
		p.cmd.Env = append(os.Environ(), opts.Env...)
	}
	if opts.OwnGroup {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if opts.LogFile != "" {
		log, err := os.OpenFile(opts.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("netlab: start %s: %w", name, err)
		}
		defer log.Close() // the program has its own copy
		p.cmd.Stdout, p.cmd.Stderr = log, log
	} else {
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	}
	// A child the program leaves behind would hold the output pipe open and keep Wait
	// from returning after the program itself exited.
	p.cmd.WaitDelay = time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("netlab: start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output is everything the program wrote so far (stdout and stderr): with a LogFile, that
// file's content, earlier runs appended to it included.
func (p *Proc) Output() string {
	if p.logFile == "" {
		return p.out.String()
	}
	b, err := os.ReadFile(p.logFile)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logFile, err)
	}
	return string(b)
}

// Signal sends sig.
func (p *Proc) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM and waits up to timeout; it fails unless the program exits cleanly.
// A program still running after timeout is killed.
func (p *Proc) Stop(timeout time.Duration) error {
	_ = p.Signal(syscall.SIGTERM)
	err := p.Wait(timeout)
	switch {
	case err == nil:
		return nil
	case isTimeout(err):
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.Name, timeout)
	}
	return fmt.Errorf("%s exited with %v", p.Name, err)
}

// Wait waits up to timeout for the program to exit and returns its exit status as
// exec.Cmd.Wait does (nil for exit 0). A program still running after timeout is killed,
// and Wait says so.
func (p *Proc) Wait(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		p.Kill()
		return &waitTimeout{name: p.Name, after: timeout}
	}
}

// waitTimeout is Wait's error when the program outlasted the timeout.
type waitTimeout struct {
	name  string
	after time.Duration
}

func (e *waitTimeout) Error() string {
	return fmt.Sprintf("%s did not exit within %v; killed", e.name, e.after)
}

func isTimeout(err error) bool {
	var wt *waitTimeout
	return errors.As(err, &wt)
}

// Kill is kill -9, and waits for the exit.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Running reports whether the program has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Err is the program's exit status once it has exited, as exec.Cmd.Wait returns it (nil
// for exit 0); nil while it runs.
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Pids lists the processes running in the host's namespace: those started with
// [Host.Start] or [Host.Command], and whatever they started.
func (h *Host) Pids() ([]int, error) { return nsPids(h.Netns) }

// HTTPClient is an HTTP client whose connections are made inside h (to reach a listener
// on the host's own loopback, such as vrrpd's metrics endpoint).
func (h *Host) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DisableKeepAlives: true, DialContext: h.DialContext},
	}
}

// DialContext makes a connection from inside the host's namespace.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.Do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
