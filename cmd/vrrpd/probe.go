package main

// The probe socket and `vrrpd probe`: liveness and readiness where no remote host can
// reach them.
//
// :9650 listens on the node's address, which every host that routes to the node reaches;
// a flood of connections there, however well evicted, must never decide whether the
// kubelet restarts vrrpd (every master of the node would resign) or takes it out of a
// rollout. A Unix socket in the state directory is reachable only from the node, by
// whoever may open the directory, and each daemon has its own (two groups' vrrpd on one
// node share the host's network namespace, so a fixed loopback port would collide; their
// state directories do not). The kubelet runs `vrrpd probe live` and `vrrpd probe ready`
// in the container (exec probes), which ask the socket.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// probeSocketName is the probe socket's name in the state directory.
const probeSocketName = "probe.sock"

// serveProbes serves /livez, /readyz and /healthz on the Unix socket path, replacing a
// socket a previous run left (the state directory is locked by this daemon: no other
// vrrpd uses it). Only the owner may connect (mode 0600).
func serveProbes(path string, opt metrics.Options, log *slog.Logger) (io.Closer, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("probe socket %s: exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("probe socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("probe socket: %w", err)
	}
	// Left in place at exit, as after a crash: the next start replaces it. Unlinking on
	// close could remove the socket of the daemon that started next.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("probe socket: %w", err)
	}
	srv := metrics.NewProbeServer(opt)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("probe socket server stopped", "err", err)
		}
	}()
	return srv, nil
}

// probe is `vrrpd probe live|ready|health`: exit 0 when the daemon of --state-dir answers
// the check with 200, 1 (with the reason) when it answers otherwise or not at all.
func probe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vrrpd probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: vrrpd probe live|ready|health [--state-dir DIR] [--timeout D]")
		fs.PrintDefaults()
	}
	stateDir := fs.String("state-dir", vip.DefaultStateDir, "the daemon's --state-dir, which holds its probe socket")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	// The check's name may come before or after the flags.
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitConfig
	}
	what := fs.Arg(0)
	if code, ok := parse(fs, fs.Args()[1:]); !ok {
		return code
	}
	paths := map[string]string{"live": metrics.LivePath, "ready": metrics.ReadyPath, "health": metrics.HealthPath}
	path, ok := paths[what]
	if !ok || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vrrpd probe: want live, ready or health, got %q\n", args)
		return exitConfig
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := metrics.Probe(ctx, filepath.Join(*stateDir, probeSocketName), path); err != nil {
		fmt.Fprintf(stderr, "vrrpd probe %s: %v\n", what, err)
		return exitFail
	}
	fmt.Fprintln(stdout, "ok")
	return exitOK
}
