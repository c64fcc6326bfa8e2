// Command vrrpd is a VRRP daemon: it runs the virtual routers of a YAML file or of a
// keepalived.conf, adds and removes their virtual addresses, and serves keepalived-compatible
// metrics.
//
//	vrrpd --config PATH [--config-id ID] [--state-dir /run/vrrpd] [--metrics-address :9650] [--metrics-host IP]
//	vrrpd --group NS/NAME --node NODE [--password-file PATH] ...   Kubernetes mode
//	vrrpd check --config PATH [--config-id ID]   validate and exit (0 ok, 2 on error)
//	vrrpd status [--address URL]   show the running daemon's instances
//	vrrpd probe live|ready [--state-dir DIR]   the liveness or readiness probe, on the probe socket
//	vrrpd version                  print the version (also --version)
//
// SIGHUP reloads the configuration; SIGTERM and SIGINT resign every master and exit 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/conflict"
	"github.com/vrrp-operator/vrrp-operator/internal/daemon"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/proc"
	"github.com/vrrp-operator/vrrp-operator/internal/version"
	"github.com/vrrp-operator/vrrp-operator/vip"
)

// gcPercent is vrrpd's GOGC when the environment sets none.
const gcPercent = 25

// Exit codes.
const (
	exitOK     = 0
	exitFail   = 1 // the daemon could not run
	exitConfig = 2 // bad command line or configuration
)

func main() {
	if os.Getenv("GOMAXPROCS") == "" {
		// vrrpd's work happens in one loop; the socket readers only hand batches to it.
		// With more than one P, every hand-over wakes a second OS thread, which measured
		// here costs about half of vrrpd's CPU at 50 instances; one P keeps the hand-over
		// on one thread. GOMAXPROCS in the environment still wins.
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		// The heap vrrpd keeps is small (about 2 MiB at 50 instances) and its garbage
		// mostly netlink replies; at the default GOGC=100 the heap grows to the runtime's
		// 4 MiB floor between collections. Collecting at half the live heap instead
		// lowered the peak resident set by 1.5 MiB at 50 instances, for CPU time within
		// the run-to-run noise (0.40-0.47 s against 0.39-0.45 s over 20 s; issue 12).
		// GOGC=25 (a 1 MiB floor) took another 0.3 MiB off the peak, with CPU again
		// within the noise (169-189 ms against 186-191 ms for both hosts over 20 s, three
		// runs each); below 25 the peak did not move. GOGC in the environment still wins.
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return check(args[1:], stdout, stderr)
		case "status":
			return status(args[1:], stdout, stderr)
		case "probe":
			return probe(args[1:], stdout, stderr)
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, version.String("vrrpd"))
			return exitOK
		case "help":
			args = []string{"--help"}
		}
	}
	return serve(args, stdout, stderr)
}

// usage is the top of `vrrpd --help`: the commands, before the daemon's flags.
const usage = `vrrpd: a VRRP daemon (RFC 3768 and 5798) that reads keepalived.conf or YAML.

Usage:
  vrrpd --config PATH [flags]            run the virtual routers of a file
  vrrpd --group NS/NAME --node NODE      Kubernetes mode: this node's share of a KeepalivedGroup
  vrrpd check --config PATH              validate a configuration and exit (0 ok, 2 on error)
  vrrpd status [--address URL]           show the running daemon's instances (GET /status)
  vrrpd probe live|ready [--state-dir D] ask the daemon's probe socket (exit 0 when it passes)
  vrrpd version                          print the version and exit (also --version)
  vrrpd COMMAND --help                   a command's flags

SIGHUP reloads the configuration; SIGTERM and SIGINT resign every master and exit 0.

Flags of the daemon:
`

func check(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vrrpd check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file (YAML or keepalived.conf)")
	opts := configIDFlag(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *path == "" {
		fmt.Fprintln(stderr, "vrrpd check: --config is required")
		return exitConfig
	}
	cfg, ws, err := config.LoadWith(*path, *opts)
	if err == nil {
		ws = append(ws, scriptWarnings(cfg)...)
	}
	fmt.Fprint(stderr, config.FormatWarnings(prefixWarnings(ws)))
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return exitConfig
	}
	fmt.Fprintf(stdout, "%s: %d instance(s), %d warning(s): OK\n", *path, len(cfg.Instances), len(ws))
	return exitOK
}

// parse parses a command's flags. When it reports !ok the command exits with code: 0
// after --help, exitConfig after a bad flag (the flag package has printed why).
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitConfig, false
	}
	return 0, true
}

// configIDFlag adds keepalived's -i / --config-id: the id that selects keepalived.conf's
// "@ID" lines (default: the host name up to its first dot, as keepalived's).
func configIDFlag(fs *flag.FlagSet) *config.LoadOptions {
	o := &config.LoadOptions{}
	usage := "keepalived.conf: the config id that selects \"@ID\" lines, as keepalived's -i (default: the host name up to its first dot)"
	fs.StringVar(&o.ConfigID, "config-id", "", usage)
	fs.StringVar(&o.ConfigID, "i", "", "short for --config-id")
	return o
}

func prefixWarnings(ws []config.Warning) []config.Warning {
	out := make([]config.Warning, len(ws))
	for i, w := range ws {
		w.Message = "warning: " + w.Message
		out[i] = w
	}
	return out
}

func status(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vrrpd status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("address", "", "the daemon's HTTP endpoint (default: http://127.0.0.1, or --metrics-host, and the port of --metrics-address)")
	metricsAddr := fs.String("metrics-address", metrics.DefaultAddress, "the daemon's --metrics-address")
	// In vrrpd's pod `kubectl exec ... vrrpd status` finds the daemon on the node address the
	// pod's HOST_IP holds, without a shell to expand it.
	metricsHost := fs.String("metrics-host", os.Getenv(hostIPEnv), "the daemon's --metrics-host (default $"+hostIPEnv+")")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	base := *addr
	if base == "" {
		listen, err := listenAddress(*metricsAddr, *metricsHost)
		if err != nil {
			fmt.Fprintf(stderr, "vrrpd status: %v\n", err)
			return exitConfig
		}
		base = localURL(listen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := metrics.GetStatus(ctx, nil, base)
	if err != nil {
		fmt.Fprintf(stderr, "vrrpd status: %v\n", err)
		return exitFail
	}
	if err := st.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "vrrpd status: %v\n", err)
		return exitFail
	}
	return exitOK
}

// localURL turns a listen address (":9650", "0.0.0.0:9650", "[::1]:9650") into a URL on
// the local host.
func localURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vrrpd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	path := fs.String("config", "", "configuration file (YAML or keepalived.conf)")
	stateDir := fs.String("state-dir", vip.DefaultStateDir, "directory for the record of added VIPs (one per daemon)")
	metricsAddr := fs.String("metrics-address", metrics.DefaultAddress, "listen address of /metrics, /healthz, /livez, /readyz and /status; empty to disable (the probes stay on the probe socket, STATE-DIR/probe.sock)")
	metricsHost := fs.String("metrics-host", "", "listen on this IP address only, with the port of --metrics-address (vrrpd's pod passes the node's status.hostIP)")
	passwordFile := fs.String("password-file", "", "Kubernetes mode: the group's password, the Secret key the kubelet mounts (re-read while running)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	group := fs.String("group", "", "Kubernetes mode: serve this node's share of the KeepalivedGroup namespace/name (instead of --config)")
	node := fs.String("node", "", "Kubernetes mode: this node's name, as in the group's status")
	showVersion := fs.Bool("version", false, "print the version and exit")
	rtPrio := fs.Int("realtime-priority", 0, "run vrrpd's threads in SCHED_RR at this priority, 1 to 99 (keepalived's vrrp_rt_priority); 0 leaves the scheduling alone")
	lockMem := fs.Bool("lock-memory", false, "lock vrrpd's memory in RAM with mlockall (keepalived's vrrp_no_swap)")
	packetSocket := fs.Bool("send-on-packet-socket", false, "send multicast advertisements on Ethernet interfaces as frames on a packet socket instead of through the kernel's IP stack: less CPU, but they bypass netfilter's OUTPUT and POSTROUTING hooks (firewall rules, egress host policies, DSCP marking) and the IP output counters; by default they go through the IP stack, as keepalived's do")
	ipStack := fs.Bool("send-through-ip-stack", false, "deprecated, no effect: adverts go through the IP stack by default (see --send-on-packet-socket)")
	pprofAddr := fs.String("pprof-address", "", "serve CPU and heap profiles (/debug/pprof/profile?seconds=N, /debug/pprof/heap) and execution traces (/debug/pprof/trace?seconds=N) on this address; empty (the default) to disable")
	conflictEvery := fs.Duration("vip-conflict-probe-interval", conflict.DefaultInterval, "while MASTER, ask this often (1s at least) whether another host answers for each VIP (an ARP probe, an IPv6 neighbour solicitation; at most 50 probes a second in all) and listen for other hosts' announcements of them: metric vrrpd_vip_conflict; 0 turns the check off")
	opts := configIDFlag(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("vrrpd"))
		return exitOK
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vrrpd: unexpected argument %q (commands: check, status, probe, version; see vrrpd --help)\n", fs.Arg(0))
		return exitConfig
	}
	if *conflictEvery < 0 || (*conflictEvery > 0 && *conflictEvery < time.Second) {
		fmt.Fprintln(stderr, "vrrpd: --vip-conflict-probe-interval must be 0 (off) or at least 1s, the time a probe's answer is waited for")
		return exitConfig
	}
	if *pprofAddr != "" && !pprofBuilt {
		fmt.Fprintln(stderr, "vrrpd: --pprof-address: this vrrpd was built without the profiling endpoint (tag vrrpd_nopprof, the host build); the image's vrrpd serves it")
		return exitConfig
	}
	if code, ok := setUpProcess(*rtPrio, *lockMem, stderr); !ok {
		return code
	}
	log := newLogger(*logLevel, stderr)
	if log == nil {
		return exitConfig
	}

	listen, err := listenAddress(*metricsAddr, *metricsHost)
	if err != nil {
		fmt.Fprintln(stderr, "vrrpd:", err)
		return exitConfig
	}
	if *passwordFile != "" && *group == "" {
		fmt.Fprintln(stderr, "vrrpd: --password-file is for Kubernetes mode (--group); a file's instances carry auth_pass")
		return exitConfig
	}
	cfg, kube, code := loadConfig(*path, *group, *node, *opts, log, stderr)
	if cfg == nil {
		return code
	}
	d := newDaemon(*stateDir, *packetSocket, *ipStack, *conflictEvery, kube, log)
	if d == nil {
		return exitFail
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()

	servers, ok := serveEndpoints(d, *stateDir, listen, *pprofAddr, log)
	defer closeAll(servers)
	if !ok {
		return exitFail
	}

	if kube != nil {
		kube.start(ctx, d, *stateDir, *passwordFile, log)
		log.Info("starting", "group", *group, "node", *node, "state_dir", *stateDir)
	} else {
		reloadOnHUP(ctx, d, *path, *opts, log)
		log.Info("starting", "config", *path, "instances", len(cfg.Instances), "state_dir", *stateDir)
	}
	if err := d.Run(ctx, cfg); err != nil {
		log.Error("stopped", "err", err)
		return exitFail
	}
	return exitOK
}

// newLogger is vrrpd's logger at level (--log-level); nil, said on stderr, when level is
// not a level. Its first
// line says what runs, so that a bug report's log answers "which version".
func newLogger(level string, stderr io.Writer) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		fmt.Fprintf(stderr, "vrrpd: --log-level: %v\n", err)
		return nil
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l}))
	log.Info("vrrpd", "version", version.Version, "go", runtime.Version())
	return log
}

// newDaemon makes the daemon (nil, logged, when it cannot): in Kubernetes mode (kube)
// entering and leaving MASTER become Events on the Services.
func newDaemon(stateDir string, packetSocket, ipStack bool, conflictEvery time.Duration, kube *kubeMode, log *slog.Logger) *daemon.Daemon {
	if ipStack {
		// Kept so that units and manifests written for the old default still start.
		log.Warn("--send-through-ip-stack is deprecated and has no effect: advertisements go through the IP stack by default")
	}
	if ipStack && packetSocket {
		log.Warn("--send-through-ip-stack and --send-on-packet-socket both given: the packet socket is used")
	}
	dopts := daemon.Options{StateDir: stateDir, Logger: log, PacketSocket: packetSocket, AwaitConfig: kube != nil,
		ConflictProbes: conflict.Settings{Interval: conflictEvery}, NoConflictProbes: conflictEvery == 0}
	if kube != nil {
		// Kubernetes mode: entering and leaving MASTER, and second holders of a VIP, become
		// Events on the Services.
		if err := kube.recordEvents(&dopts, log); err != nil {
			log.Error("cannot start", "err", err)
			return nil
		}
	}
	d, err := daemon.New(dopts)
	if err != nil {
		log.Error("cannot start", "err", err)
		return nil
	}
	return d
}

// reloadOnHUP reloads the configuration file on each SIGHUP.
func reloadOnHUP(ctx context.Context, d *daemon.Daemon, path string, opts config.LoadOptions, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			reload(ctx, d, path, opts, log)
		}
	}()
}

// setUpProcess readies the process before anything starts: real-time scheduling
// (--realtime-priority), which its scripts must not inherit, nor the capabilities a
// unit gave vrrpd as ambient ones; and the memory lock (--lock-memory). Not ok: exit
// with code.
func setUpProcess(rtPrio int, lockMem bool, stderr io.Writer) (code int, ok bool) {
	if rtPrio != 0 {
		if err := setRealtime(rtPrio); err != nil {
			fmt.Fprintln(stderr, "vrrpd:", err)
			return exitConfig, false
		}
		// Scripts and notify hooks must not inherit the real-time policy.
		if err := proc.SpawnWithDefaultScheduling(); err != nil {
			fmt.Fprintln(stderr, "vrrpd:", err)
			return exitFail, false
		}
	} else if err := proc.SpawnWithoutAmbientCapabilities(); err != nil {
		// Nor the capabilities a unit gave vrrpd as ambient ones.
		fmt.Fprintln(stderr, "vrrpd:", err)
		return exitFail, false
	}
	if lockMem {
		if err := lockMemory(); err != nil {
			fmt.Fprintln(stderr, "vrrpd:", err)
			return exitFail, false
		}
	}
	return exitOK, true
}

// loadConfig returns the configuration to start with: from a file, or in Kubernetes
// mode (kube not nil) an empty one until the node's group says what to serve. A nil
// cfg: exit with code.
func loadConfig(path, group, node string, opts config.LoadOptions, log *slog.Logger, stderr io.Writer) (cfg *config.Config, kube *kubeMode, code int) {
	switch {
	case group != "" || node != "":
		if group == "" || node == "" || path != "" {
			fmt.Fprintln(stderr, "vrrpd: Kubernetes mode needs both --group and --node, and no --config")
			return nil, nil, exitConfig
		}
		var err error
		if kube, err = newKubeMode(group, node); err != nil {
			fmt.Fprintln(stderr, "vrrpd:", err)
			return nil, nil, exitConfig
		}
		// Nothing to serve until the group (or its cache) says what.
		return &config.Config{RouterID: node}, kube, exitOK
	case path == "":
		fmt.Fprintln(stderr, "vrrpd: --config (or --group and --node) is required")
		return nil, nil, exitConfig
	}
	cfg, ws, err := config.LoadWith(path, opts)
	for _, w := range ws {
		log.Warn(w.Message, "at", w.Pos.String())
	}
	if err != nil {
		log.Error("configuration rejected", "err", err)
		return nil, nil, exitConfig
	}
	if cfg.NetNamespace != "" {
		// Returns only when vrrpd is in the namespace (after the re-execution).
		if err := enterNetns(cfg.NetNamespace); err != nil {
			log.Error("cannot start", "err", err)
			return nil, nil, exitFail
		}
		log.Info("running in network namespace", "net_namespace", cfg.NetNamespace)
	}
	return cfg, nil, exitOK
}

// serveEndpoints starts what serves d besides VRRP: the probe socket, the metrics
// server (unless listen is empty) and the profiling endpoint (when asked for). It
// returns the servers to close at exit; not ok, one could not start (logged).
func serveEndpoints(d *daemon.Daemon, stateDir, listen, pprofAddr string, log *slog.Logger) (servers []io.Closer, ok bool) {
	mopts := metrics.Options{Health: d.Health(), Live: d.Live(), Ready: d.Ready(), Program: "vrrpd", Logger: log}
	// The probes, on a socket no remote host reaches (probe.go).
	// A socket that cannot be made (a state directory path too long for one) is a
	// warning, not a reason to leave the VIPs unserved: in Kubernetes mode the exec
	// probes then fail and say why, and a host without probes loses nothing else.
	if probes, err := serveProbes(filepath.Join(stateDir, probeSocketName), mopts, log); err != nil {
		log.Warn("no probe socket: vrrpd probe will not reach this daemon", "err", err)
	} else {
		servers = append(servers, probes)
	}
	if listen != "" {
		srv, err := metrics.NewServer(listen, d, mopts)
		if err != nil {
			log.Error("metrics", "err", err)
			return servers, false
		}
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			log.Error("metrics listener", "address", listen, "err", err)
			return servers, false
		}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server stopped", "err", err)
			}
		}()
		servers = append(servers, srv)
	}

	if pprofAddr != "" {
		srv, err := servePprof(pprofAddr, log)
		if err != nil {
			log.Error("cannot start", "err", err)
			return servers, false
		}
		servers = append(servers, srv)
	}
	return servers, true
}

// closeAll closes the servers, the last started first.
func closeAll(servers []io.Closer) {
	for i := len(servers) - 1; i >= 0; i-- {
		servers[i].Close()
	}
}

// hostIPEnv is the environment variable vrrpd's pod sets to the node's address
// (status.hostIP, through the downward API).
const hostIPEnv = "HOST_IP"

// listenAddress is where the metrics server listens: addr, or with host the port of addr on
// that one address. host is an IP address, IPv6 with or without brackets (status.hostIP
// has none); a name is refused, as it may stand for several addresses, or none of the
// node's.
func listenAddress(addr, host string) (string, error) {
	if host == "" || addr == "" {
		return addr, nil
	}
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("--metrics-host %q: want an IP address", host)
	}
	if ip.IsUnspecified() {
		return "", fmt.Errorf("--metrics-host %q: want one address, not every address", host)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics-address %q: %v", addr, err)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// reload re-reads the configuration; a broken file is reported and nothing changes.
func reload(ctx context.Context, d *daemon.Daemon, path string, opts config.LoadOptions, log *slog.Logger) {
	cfg, ws, err := config.LoadWith(path, opts)
	for _, w := range ws {
		log.Warn(w.Message, "at", w.Pos.String())
	}
	if err != nil {
		log.Error("reload refused, keeping the running configuration", "err", strings.TrimSpace(err.Error()))
		return
	}
	if err := d.Reload(ctx, cfg); err != nil {
		log.Error("reload refused, keeping the running configuration", "err", err)
	}
}
