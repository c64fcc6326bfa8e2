package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// metricsAddress is where each vrrpd serves /metrics and /status inside its own
// namespace: keepalived_exporter's port, which is also the one `vrrpd status` asks by
// default.
const metricsAddress = ":9650"

// router is one vrrpd running in a lab host, with its files under dir.
type router struct {
	host     *netlab.Host
	bin      string
	priority uint8
	dir      string // config, state directory and log live here
	conf     string
	stateDir string
	logPath  string

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, valid after done
	// stopping marks a deliberate stop, so that the exit is not reported as a crash.
	stopping bool
}

func newRouter(h *netlab.Host, bin, dir string, priority uint8) *router {
	return &router{
		host:     h,
		bin:      bin,
		priority: priority,
		dir:      dir,
		conf:     filepath.Join(dir, "keepalived.conf"),
		stateDir: filepath.Join(dir, "state"),
		logPath:  filepath.Join(dir, "vrrpd.log"),
	}
}

// args are vrrpd's command line, without the binary.
func (r *router) args() []string {
	return []string{"--config", r.conf, "--state-dir", r.stateDir, "--metrics-address", metricsAddress}
}

// start runs vrrpd in the host's namespace, its output appended to the log. The process
// gets a process group of its own: a Ctrl-C at the terminal goes to the demo alone, which
// then stops the routers itself; and with --keep the routers outlive the demo.
func (r *router) start() error {
	if err := os.MkdirAll(r.stateDir, 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own copy
	cmd := r.host.Command(context.Background(), r.bin, r.args()...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start vrrpd in %s: %w", r.host.Name, err)
	}
	r.cmd, r.done, r.err, r.stopping = cmd, make(chan struct{}), nil, false
	go func(done chan struct{}) {
		r.err = cmd.Wait()
		close(done)
	}(r.done)
	return nil
}

// running reports whether the process started last is still there.
func (r *router) running() bool {
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// crashed returns an error, with the end of the log, if vrrpd exited without being asked.
func (r *router) crashed() error {
	if r.cmd == nil || r.stopping || r.running() {
		return nil
	}
	return fmt.Errorf("vrrpd in %s exited unexpectedly (%v); end of %s:\n%s", r.host.Name, r.err, r.logPath, r.logTail(15))
}

// terminate sends SIGTERM: vrrpd resigns its masterships (priority-0 advertisements)
// and exits.
func (r *router) terminate() error {
	if !r.running() {
		return fmt.Errorf("vrrpd in %s is not running", r.host.Name)
	}
	r.stopping = true
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM to vrrpd in %s: %w", r.host.Name, err)
	}
	return nil
}

// wait waits up to timeout for the process to exit and returns its exit status (nil for
// exit 0). After the timeout the process is killed.
func (r *router) wait(timeout time.Duration) error {
	if r.cmd == nil {
		return nil
	}
	select {
	case <-r.done:
		return r.err
	case <-time.After(timeout):
		r.kill()
		return fmt.Errorf("vrrpd in %s did not exit within %v of SIGTERM; killed", r.host.Name, timeout)
	}
}

// stop is terminate and wait; stopping a router that is not running is not an error.
func (r *router) stop(timeout time.Duration) error {
	if !r.running() {
		return nil
	}
	if err := r.terminate(); err != nil {
		return err
	}
	return r.wait(timeout)
}

func (r *router) kill() {
	if !r.running() {
		return
	}
	r.stopping = true
	_ = r.cmd.Process.Kill()
	<-r.done
}

// httpClient makes its connections from inside the host's namespace, where vrrpd's
// metrics listener is.
func (r *router) httpClient() *http.Client { return r.host.HTTPClient(3 * time.Second) }

const localEndpoint = "http://127.0.0.1:9650"

func (r *router) status(ctx context.Context) (metrics.Status, error) {
	return metrics.GetStatus(ctx, r.httpClient(), localEndpoint)
}

// instanceStates maps instance name to state ("MASTER", ...).
func (r *router) instanceStates(ctx context.Context) (map[string]string, error) {
	st, err := r.status(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(st.Instances))
	for _, in := range st.Instances {
		out[in.Name] = in.State
	}
	return out, nil
}

// metricLines scrapes /metrics and returns the sample lines of the named metrics, in
// the order served.
func (r *router) metricLines(ctx context.Context, names ...string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, localEndpoint+metrics.MetricsPath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", r.host.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", r.host.Name, resp.Status)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		for _, n := range names {
			if name == n {
				out = append(out, line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", r.host.Name, err)
	}
	return out, nil
}

// logTail returns the last n lines of the log, for error messages.
func (r *router) logTail(n int) string {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
