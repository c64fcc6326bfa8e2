package netlab

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Proc is a program running inside a lab host, with its output kept (for a test log, or to
// look for a log line).
type Proc struct {
	Name string
	Host *Host
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error
}

// Start runs bin with args inside h. `ip netns exec` execs the program itself, so signals
// sent to the Proc reach it directly. env, when not nil, adds to the environment.
func (h *Host) Start(name string, env []string, bin string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, Host: h, done: make(chan struct{})}
	p.cmd = h.Command(context.Background(), bin, args...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
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

// Output is everything the program wrote so far (stdout and stderr).
func (p *Proc) Output() string { return p.out.String() }

// Signal sends sig.
func (p *Proc) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM and waits up to timeout; it fails unless the program exits cleanly.
func (p *Proc) Stop(timeout time.Duration) error {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		return fmt.Errorf("%s did not stop within %v of SIGTERM", p.Name, timeout)
	}
	if p.err != nil {
		return fmt.Errorf("%s exited with %v", p.Name, p.err)
	}
	return nil
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

// HTTPClient is an HTTP client whose connections are made inside h (to reach a listener
// on the host's own loopback, such as vrrpd's metrics endpoint).
func (h *Host) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var c net.Conn
				err := h.Do(func() error {
					var err error
					c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
					return err
				})
				return c, err
			},
		},
	}
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
