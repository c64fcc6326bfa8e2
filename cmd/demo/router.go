package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
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

	proc *netlab.Proc // the process started last, nil before the first start
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
// then stops the routers itself; and with --keep the routers outlive the demo, logging
// to their files.
func (r *router) start() error {
	if err := os.MkdirAll(r.stateDir, 0o755); err != nil {
		return err
	}
	p, err := r.host.StartWith("vrrpd in "+r.host.Name, netlab.ProcOptions{LogFile: r.logPath, OwnGroup: true}, r.bin, r.args()...)
	if err != nil {
		return err
	}
	r.proc, r.stopping = p, false
	return nil
}

// running reports whether the process started last is still there.
func (r *router) running() bool { return r.proc != nil && r.proc.Running() }

// crashed returns an error, with the end of the log, if vrrpd exited without being asked.
func (r *router) crashed() error {
	if r.proc == nil || r.stopping || r.proc.Running() {
		return nil
	}
	return fmt.Errorf("vrrpd in %s exited unexpectedly (%v); end of %s:\n%s", r.host.Name, r.proc.Err(), r.logPath, r.logTail(15))
}

// terminate sends SIGTERM: vrrpd resigns its masterships (priority-0 advertisements)
// and exits.
func (r *router) terminate() error {
	if !r.running() {
		return fmt.Errorf("vrrpd in %s is not running", r.host.Name)
	}
	r.stopping = true
	if err := r.proc.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM to vrrpd in %s: %w", r.host.Name, err)
	}
	return nil
}

// wait waits up to timeout for the process to exit and returns its exit status (nil for
// exit 0). After the timeout the process is killed.
func (r *router) wait(timeout time.Duration) error {
	if r.proc == nil {
		return nil
	}
	return r.proc.Wait(timeout)
}

// stop is terminate and wait; stopping a router that is not running is not an error.
func (r *router) stop(timeout time.Duration) error {
	if !r.running() {
		return nil
	}
	r.stopping = true
	return r.proc.Stop(timeout)
}

// httpClient makes its connections from inside the host's namespace, where vrrpd's
// metrics listener is.
func (r *router) httpClient() *http.Client { return r.host.HTTPClient(3 * time.Second) }

const localEndpoint = "http://127.0.0.1:9650"

func (r *router) status(ctx context.Context) (metrics.Status, error) {
	return metrics.GetStatus(ctx, r.host.DialContext, localEndpoint)
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
	lines := strings.Split(strings.TrimRight(r.proc.Output(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
