package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Options are the demo's settings; main fills them from the flags.
type Options struct {
	// Vrrpd is the vrrpd binary; empty builds cmd/vrrpd into the work directory.
	Vrrpd string
	// Adverts is the routers' advertisement interval.
	Adverts time.Duration
	// Pause is the breath taken after each step so that a person can read it.
	Pause time.Duration
	// Keep leaves the lab up at the end (and after a failed step, for a look), but not
	// after an interrupt.
	Keep bool
}

// The routers' priorities: h1 is meant to win.
const (
	priorityH1 = 150
	priorityH2 = 100
)

// Report is what the steps observed. The test checks it; the person at the terminal
// reads the same facts in the output.
type Report struct {
	Lab      LabReport
	Election Election
	Reach    Reach
	Failover Failover
	Preempt  Preempt
	Handover Handover
	// TornDown is set once every namespace is gone and no router runs.
	TornDown bool
}

// LabReport names what step 1 built.
type LabReport struct {
	Suffix     string
	WorkDir    string // configs, state directories and logs
	Namespaces []string
	MAC        map[string]net.HardwareAddr // by host name
}

// Election is step 2's outcome.
type Election struct {
	// Checks holds `vrrpd check`'s output for each host's config.
	Checks map[string]string
	// Took runs from h1's start to its last instance becoming MASTER (by h1's clock,
	// which is this machine's).
	Took time.Duration
	// States is each host's instance states (host -> instance -> state).
	States map[string]map[string]string
}

// Reach is step 3's outcome: the client's neighbour entries for the VIPs after pinging
// them.
type Reach struct {
	Neighbors map[netip.Addr]net.HardwareAddr
}

// Failover is step 4's outcome.
type Failover struct {
	// Took4 and Took6 run from the cut to h2 holding each VIP.
	Took4, Took6 time.Duration
	// MasterDown is h2's Master_Down_Interval, counted by h2 from h1's last
	// advertisement, which left up to one interval before the cut.
	MasterDown time.Duration
	// States is each host's instance states once h2 took over.
	States map[string]map[string]string
	// Announced is the client's neighbour entries after the takeover, read before the
	// client sent anything: moved by gratuitous ARP and unsolicited NA.
	Announced map[netip.Addr]net.HardwareAddr
	// AfterPing is the same entries after the client pinged the VIPs through h2.
	AfterPing map[netip.Addr]net.HardwareAddr
}

// Preempt is the outcome of restoring h1's link.
type Preempt struct {
	// Took runs from the restore to h1 holding both VIPs and h2 none.
	Took   time.Duration
	States map[string]map[string]string
	// Neighbors is the client's entries once they point back at h1.
	Neighbors map[netip.Addr]net.HardwareAddr
}

// Handover is step 5's outcome: SIGTERM to the master.
type Handover struct {
	// Took runs from the SIGTERM to h2 holding both VIPs.
	Took time.Duration
	// SkewTime is h2's Skew_Time: how long a backup waits after a priority-0
	// advertisement.
	SkewTime time.Duration
	// Exit is h1's exit status (nil: exit 0).
	Exit error
	// H1HoldsVIP tells whether h1 kept a VIP after exiting (it must not).
	H1HoldsVIP bool
	States     map[string]map[string]string
	Neighbors  map[netip.Addr]net.HardwareAddr
	// Metrics is the sample lines of keepalived_vrrp_state and
	// keepalived_vrrp_become_master that h2 serves.
	Metrics []string
}

// Demo holds the lab and the routers while the steps run.
type Demo struct {
	opts Options
	out  io.Writer
	dir  string // work directory: configs, state directories, logs, maybe the binary
	bin  string

	lab            *netlab.Lab
	client, h1, h2 *netlab.Host
	r1, r2         *router
	report         Report
	where          string // the step running, or the pause after it, for messages
	pings          int    // echo requests sent, their sequence numbers
}

// Run runs the whole demo, printing to out, and always tears the lab down (unless
// opts.Keep and not interrupted). The error says which step failed.
func Run(ctx context.Context, opts Options, out io.Writer) (Report, error) {
	if err := checkAdverts(opts.Adverts); err != nil {
		return Report{}, err
	}
	d := &Demo{opts: opts, out: out}
	if err := prerequisites(opts, exec.LookPath, os.Geteuid()); err != nil {
		d.say("%v", err)
		return Report{}, err
	}
	err := d.run(ctx)
	if err != nil {
		if ctx.Err() != nil {
			d.say("\ninterrupted %s", d.where)
		} else {
			d.say("\nFAILED: %v", err)
		}
	}
	if opts.Keep && ctx.Err() == nil && d.lab != nil {
		d.leaveUp()
		return d.report, err
	}
	d.title(6, "Teardown")
	if cerr := d.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("teardown: %w", cerr))
	} else {
		d.say("   stopped vrrpd, deleted the namespaces (veths and bridge with them), removed %s", d.dir)
	}
	return d.report, err
}

func (d *Demo) run(ctx context.Context) error {
	steps := []struct {
		title string
		fn    func(context.Context) error
	}{
		{"The lab: a bridge and three hosts in network namespaces", d.BuildLab},
		{fmt.Sprintf("Two vrrpd: h1 (priority %d) and h2 (priority %d) elect a master", priorityH1, priorityH2), d.StartRouters},
		{"The client reaches the VIPs through the master", d.ReachVIPs},
		{"h1's cable is cut: h2 takes over, the client follows; h1 comes back", d.CutAndRestore},
		{"Graceful stop: SIGTERM to the master", d.StopMaster},
	}
	for i, s := range steps {
		if i > 0 {
			d.where = fmt.Sprintf("after step %d", i)
			if err := sleep(ctx, d.opts.Pause); err != nil {
				return err
			}
		}
		d.where = fmt.Sprintf("in step %d", i+1)
		d.title(i+1, s.title)
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.title, err)
		}
	}
	return nil
}

// BuildLab is step 1: the lab and a work directory.
func (d *Demo) BuildLab(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// On tmpfs when there is one, as /run/vrrpd is on a real host: vrrpd syncs its record
	// of added VIPs before adding them, and a slow disk would show up as failover time.
	base := "/dev/shm"
	if _, err := os.Stat(base); err != nil {
		base = ""
	}
	dir, err := os.MkdirTemp(base, "vrrpd-demo-")
	if err != nil {
		return err
	}
	d.dir = dir
	lab, err := netlab.Create("client", "h1", "h2")
	if err != nil {
		return err
	}
	d.lab = lab
	d.client, d.h1, d.h2 = lab.Host("client"), lab.Host("h1"), lab.Host("h2")
	d.report.Lab = LabReport{Suffix: lab.Suffix, WorkDir: dir, MAC: map[string]net.HardwareAddr{}}
	d.report.Lab.Namespaces = append(d.report.Lab.Namespaces, lab.SwitchNetns)
	d.say("   bridge %s in namespace %s; each host's eth0 is plugged into it", lab.Bridge, lab.SwitchNetns)
	for _, h := range lab.Hosts() {
		d.report.Lab.Namespaces = append(d.report.Lab.Namespaces, h.Netns)
		d.report.Lab.MAC[h.Name] = h.MAC
		d.say("   %-6s  netns %-20s  eth0 %s  %s/24  %s/64", h.Name, h.Netns, h.MAC, h.Addr4, h.Addr6)
	}
	d.say("   VIPs: %s and %s", vip4, vip6)
	return nil
}

// StartRouters is step 2: configs, `vrrpd check`, both daemons, and the election.
func (d *Demo) StartRouters(ctx context.Context) error {
	if err := d.findVrrpd(ctx); err != nil {
		return err
	}
	d.r1 = newRouter(d.h1, d.bin, filepath.Join(d.dir, "h1"), priorityH1)
	d.r2 = newRouter(d.h2, d.bin, filepath.Join(d.dir, "h2"), priorityH2)
	d.report.Election.Checks = map[string]string{}
	for _, r := range d.routers() {
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(r.conf, []byte(routerConfig(r.host.Name, r.priority, d.opts.Adverts)), 0o644); err != nil {
			return err
		}
	}
	d.say("   %s:", d.r1.conf)
	for _, line := range strings.Split(strings.TrimRight(routerConfig("h1", priorityH1, d.opts.Adverts), "\n"), "\n") {
		d.say("   | %s", line)
	}
	d.say("   h2's is the same with router_id h2 and priority %d.", priorityH2)
	for _, r := range d.routers() {
		out, err := d.shell(ctx, nil, d.bin, "check", "--config", r.conf)
		d.report.Election.Checks[r.host.Name] = out
		if err != nil {
			return fmt.Errorf("vrrpd check of %s's config: %w", r.host.Name, err)
		}
		if strings.Contains(out, "warning:") {
			return fmt.Errorf("vrrpd check warns about %s's config", r.host.Name)
		}
	}

	// h1 first, so that its Master_Down timer (the shorter one) surely runs out first and
	// the election has one outcome to show.
	start := time.Now()
	for _, r := range d.routers() {
		if err := r.start(); err != nil {
			return err
		}
		d.say("   %s# vrrpd %s &   (log: %s)", r.host.Name, strings.Join(r.args(), " "), r.logPath)
		if err := d.waitFor(ctx, 5*time.Second, "vrrpd in "+r.host.Name+" serving "+localEndpoint, func() (bool, error) {
			_, err := r.status(ctx)
			return err == nil, nil
		}); err != nil {
			return err
		}
	}
	timeout := 3*vrrp.MasterDownInterval(priorityH2, d.opts.Adverts) + 5*time.Second
	if err := d.waitFor(ctx, timeout, "h1 MASTER with both VIPs, h2 BACKUP without", func() (bool, error) {
		return d.settled(ctx, d.h1)
	}); err != nil {
		return err
	}
	st, err := d.r1.status(ctx)
	if err != nil {
		return err
	}
	var last time.Time
	for _, in := range st.Instances {
		if in.LastTransition.After(last) {
			last = in.LastTransition
		}
	}
	d.report.Election.Took = last.Sub(start)
	states, err := d.states(ctx)
	if err != nil {
		return err
	}
	d.report.Election.States = states
	d.say("   elected: h1 is MASTER of %s and %s and holds both VIPs, h2 is BACKUP following it",
		instance4, instance6)
	d.say("   (h1 became MASTER %s after it started:", ms(d.report.Election.Took))
	d.say("   a new router waits Master_Down_Interval = 3 x %v + Skew_Time = %s before claiming mastership)",
		d.opts.Adverts, ms(vrrp.MasterDownInterval(priorityH1, d.opts.Adverts)))
	return nil
}

// ReachVIPs is step 3: both daemons' status, the client pinging the VIPs, and its
// neighbour entries pointing at h1.
func (d *Demo) ReachVIPs(ctx context.Context) error {
	for _, r := range d.routers() {
		if _, err := d.shell(ctx, r.host, d.bin, "status"); err != nil {
			return err
		}
	}
	if err := d.ping(ctx); err != nil {
		return err
	}
	n, err := d.neighbors(ctx, d.h1, time.Second)
	if err != nil {
		return err
	}
	d.report.Reach.Neighbors = n
	return nil
}

// CutAndRestore is step 4: h1 loses its link, h2 takes over and announces the VIPs,
// then h1 comes back and preempts.
func (d *Demo) CutAndRestore(ctx context.Context) error {
	f := &d.report.Failover
	f.MasterDown = vrrp.MasterDownInterval(priorityH2, d.opts.Adverts)
	d.say("   cutting h1's cable (its switch port goes down; h1's eth0 loses carrier)")
	cutAt := time.Now()
	if err := d.h1.Cut(); err != nil {
		return err
	}
	var has4, has6 bool
	if err := d.waitFor(ctx, 3*f.MasterDown+3*time.Second, "h2 holding both VIPs", func() (bool, error) {
		v4, v6, err := d.holds(d.h2)
		if v4 && !has4 {
			has4, f.Took4 = true, time.Since(cutAt)
		}
		if v6 && !has6 {
			has6, f.Took6 = true, time.Since(cutAt)
		}
		return has4 && has6, err
	}); err != nil {
		return err
	}
	d.say("   h2 holds %s %s and %s %s after the cut", vip4.Addr(), ms(f.Took4), vip6.Addr(), ms(f.Took6))
	d.say("   (h2's Master_Down_Interval is %s, counted from h1's last advertisement, sent up to %v before the cut)",
		ms(f.MasterDown), d.opts.Adverts)
	if err := d.waitFor(ctx, 3*time.Second, "h1 in FAULT without VIPs", func() (bool, error) {
		st, err := d.r1.instanceStates(ctx)
		if err != nil {
			return false, err
		}
		v4, v6, err := d.holds(d.h1)
		return st[instance4] == "FAULT" && st[instance6] == "FAULT" && !v4 && !v6, err
	}); err != nil {
		return err
	}
	states, err := d.states(ctx)
	if err != nil {
		return err
	}
	f.States = states
	d.say("   h1 saw its carrier go: both instances FAULT, VIPs removed")
	d.say("   before the client sends anything, its neighbour entries already point at h2 (gratuitous ARP, unsolicited NA):")
	if f.Announced, err = d.neighbors(ctx, d.h2, 3*time.Second); err != nil {
		return err
	}
	if err := d.ping(ctx); err != nil {
		return err
	}
	if f.AfterPing, err = d.neighbors(ctx, d.h2, time.Second); err != nil {
		return err
	}
	if _, err := d.shell(ctx, d.h2, d.bin, "status"); err != nil {
		return err
	}

	if err := sleep(ctx, d.opts.Pause); err != nil {
		return err
	}
	p := &d.report.Preempt
	d.say("\n   plugging h1 back in; its priority %d beats h2's %d, so it preempts", priorityH1, priorityH2)
	restoreAt := time.Now()
	if err := d.h1.Restore(); err != nil {
		return err
	}
	if err := d.waitFor(ctx, 3*vrrp.MasterDownInterval(priorityH1, d.opts.Adverts)+5*time.Second,
		"h1 MASTER with both VIPs again, h2 BACKUP without", func() (bool, error) {
			return d.settled(ctx, d.h1)
		}); err != nil {
		return err
	}
	p.Took = time.Since(restoreAt)
	if p.States, err = d.states(ctx); err != nil {
		return err
	}
	d.say("   h1 is MASTER with both VIPs again, h2 BACKUP, %s after the link came back", ms(p.Took))
	if p.Neighbors, err = d.neighbors(ctx, d.h1, 3*time.Second); err != nil {
		return err
	}
	return nil
}

// StopMaster is step 5: SIGTERM makes h1 resign with a priority-0 advertisement, so h2
// takes over after Skew_Time instead of Master_Down_Interval.
func (d *Demo) StopMaster(ctx context.Context) error {
	h := &d.report.Handover
	h.SkewTime = vrrp.SkewTime(priorityH2, d.opts.Adverts)
	d.say("   # kill -TERM %d   (vrrpd in h1)", d.r1.proc.Pid())
	stopAt := time.Now()
	if err := d.r1.terminate(); err != nil {
		return err
	}
	var has4, has6 bool
	if err := d.waitFor(ctx, 3*vrrp.MasterDownInterval(priorityH2, d.opts.Adverts)+3*time.Second, "h2 holding both VIPs", func() (bool, error) {
		v4, v6, err := d.holds(d.h2)
		has4, has6 = has4 || v4, has6 || v6
		return has4 && has6, err
	}); err != nil {
		return err
	}
	h.Took = time.Since(stopAt)
	h.Exit = d.r1.wait(5 * time.Second)
	if h.Exit != nil {
		return fmt.Errorf("vrrpd in h1 did not exit cleanly: %v; end of %s:\n%s", h.Exit, d.r1.logPath, d.r1.logTail(15))
	}
	v4, v6, err := d.holds(d.h1)
	if err != nil {
		return err
	}
	h.H1HoldsVIP = v4 || v6
	if h.H1HoldsVIP {
		return errors.New("h1 still holds a VIP after vrrpd exited")
	}
	d.say("   h1 resigned and exited 0, its VIPs removed; h2 holds both VIPs %s after the SIGTERM", ms(h.Took))
	d.say("   (after a priority-0 advertisement a backup waits only Skew_Time = %s, not Master_Down_Interval = %s)",
		ms(h.SkewTime), ms(vrrp.MasterDownInterval(priorityH2, d.opts.Adverts)))
	if h.States, err = d.states(ctx); err != nil {
		return err
	}
	if h.Neighbors, err = d.neighbors(ctx, d.h2, 3*time.Second); err != nil {
		return err
	}
	lines, err := d.r2.metricLines(ctx, "keepalived_vrrp_state", "keepalived_vrrp_become_master")
	if err != nil {
		return err
	}
	h.Metrics = lines
	d.say("   h2's %s%s, keepalived_vrrp_state (2 is MASTER) and keepalived_vrrp_become_master:", localEndpoint, metrics.MetricsPath)
	for _, l := range lines {
		d.say("     %s", l)
	}
	return nil
}

// Close stops the routers and deletes the lab and the work directory. It is safe to call
// more than once, and after any step failed.
func (d *Demo) Close() error {
	var errs []error
	for _, r := range d.routers() {
		if r != nil {
			if err := r.stop(3 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if d.lab != nil {
		if err := d.lab.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.dir != "" {
		if err := os.RemoveAll(d.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && d.lab != nil {
		d.report.TornDown = true
		for _, ns := range d.report.Lab.Namespaces {
			if _, err := os.Stat("/run/netns/" + ns); err == nil {
				d.report.TornDown = false
				errs = append(errs, fmt.Errorf("namespace %s still exists", ns))
			}
		}
	}
	return errors.Join(errs...)
}

// leaveUp is --keep: h1 runs again and the person gets the commands to look around and
// to clean up.
func (d *Demo) leaveUp() {
	d.title(6, "The lab stays up (--keep)")
	if d.r1 != nil && !d.r1.running() {
		if err := d.r1.start(); err != nil {
			d.say("   could not restart vrrpd in h1: %v", err)
		} else {
			d.say("   vrrpd runs again in h1 (it will preempt); logs: %s, %s", d.r1.logPath, d.r2.logPath)
		}
	}
	d.say("   enter a host:    ip netns exec %s bash", d.client.Netns)
	if d.bin != "" {
		d.say("   router status:   ip netns exec %s %s status", d.h1.Netns, d.bin)
	}
	d.say("   cut h1's cable:  ip -n %s link set %s down   (up to plug it back)", d.lab.SwitchNetns, d.h1.SwitchEnd)
	d.say(`   tear down:       for ns in %s; do ip netns pids $ns | xargs -r kill; while [ -n "$(ip netns pids $ns)" ]; do sleep 0.1; done; ip netns del $ns; done; rm -rf %s`,
		strings.Join(d.report.Lab.Namespaces, " "), d.dir)
}

// findVrrpd settles which binary runs: --vrrpd, or a fresh build of cmd/vrrpd.
func (d *Demo) findVrrpd(ctx context.Context) error {
	if d.opts.Vrrpd != "" {
		abs, err := filepath.Abs(d.opts.Vrrpd)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("--vrrpd: %w", err)
		}
		d.bin = abs
		return nil
	}
	d.bin = filepath.Join(d.dir, "vrrpd")
	d.say("   building vrrpd (pass --vrrpd PATH to skip)")
	if _, err := d.shell(ctx, nil, "go", "build", "-o", d.bin, "github.com/vrrp-operator/vrrp-operator/cmd/vrrpd"); err != nil {
		return fmt.Errorf("build vrrpd (run the demo from the repository, or pass --vrrpd): %w", err)
	}
	return nil
}

func (d *Demo) routers() []*router {
	if d.r1 == nil {
		return nil
	}
	return []*router{d.r1, d.r2}
}

// settled reports whether master holds both VIPs as MASTER of both instances while the
// other router holds none and is BACKUP of both, following master's advertisements.
func (d *Demo) settled(ctx context.Context, master *netlab.Host) (bool, error) {
	mr, br := d.r1, d.r2
	if master != d.h1 {
		mr, br = d.r2, d.r1
	}
	m4, m6, err := d.holds(mr.host)
	if err != nil || !m4 || !m6 {
		return false, err
	}
	b4, b6, err := d.holds(br.host)
	if err != nil || b4 || b6 {
		return false, err
	}
	mst, err := mr.instanceStates(ctx)
	if err != nil {
		return false, err
	}
	if mst[instance4] != "MASTER" || mst[instance6] != "MASTER" {
		return false, nil
	}
	bst, err := br.status(ctx)
	if err != nil {
		return false, err
	}
	// The master as the backup saw it: the source of its advertisements, the IPv4
	// address for VI_4 and the link-local one for VI_6.
	follows := map[string]string{instance4: master.Addr4.String(), instance6: master.LinkLocal.String()}
	n := 0
	for _, in := range bst.Instances {
		if want, ok := follows[in.Name]; ok && in.State == "BACKUP" && in.Master == want {
			n++
		}
	}
	return n == len(follows), nil
}

// states reads every running router's instance states.
func (d *Demo) states(ctx context.Context) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, r := range d.routers() {
		if !r.running() {
			continue
		}
		st, err := r.instanceStates(ctx)
		if err != nil {
			return nil, err
		}
		out[r.host.Name] = st
	}
	return out, nil
}

// holds reports which VIPs h's eth0 carries.
func (d *Demo) holds(h *netlab.Host) (v4, v6 bool, err error) {
	addrs, err := h.AddrsOn(h.Link)
	if err != nil {
		return false, false, err
	}
	for _, a := range addrs {
		v4 = v4 || a.Addr() == vip4.Addr()
		v6 = v6 || a.Addr() == vip6.Addr()
	}
	return v4, v6, nil
}

// ping has the client ping each VIP once, with an ICMP echo sent from Go (icmp.go).
func (d *Demo) ping(ctx context.Context) error {
	for _, ip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
		if err := ctx.Err(); err != nil {
			return err
		}
		d.pings++
		d.say("   %s# ping %s", d.client.Name, ip)
		rtt, err := echo(d.client, ip, d.pings, 2*time.Second)
		if err != nil {
			return fmt.Errorf("ping %s: %w", ip, err)
		}
		d.say("     echo reply from %s: time=%.2f ms", ip, float64(rtt.Microseconds())/1000)
	}
	return nil
}

// neighbors waits up to timeout for the client's neighbour entries of both VIPs to
// point at owner's MAC, without the client sending anything, then shows them.
func (d *Demo) neighbors(ctx context.Context, owner *netlab.Host, timeout time.Duration) (map[netip.Addr]net.HardwareAddr, error) {
	got := map[netip.Addr]net.HardwareAddr{}
	err := d.waitFor(ctx, timeout, fmt.Sprintf("the client's neighbour entries for the VIPs to point at %s (%s)", owner.Name, owner.MAC), func() (bool, error) {
		for _, ip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
			mac, _, err := d.client.Neighbor(ip)
			if err != nil {
				return false, err
			}
			got[ip] = mac
		}
		return macEqual(got[vip4.Addr()], owner.MAC) && macEqual(got[vip6.Addr()], owner.MAC), nil
	})
	for _, ip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
		if _, serr := d.shell(ctx, d.client, "ip", "neigh", "show", "to", ip.String(), "dev", d.client.Link); serr != nil && err == nil {
			err = serr
		}
	}
	if err == nil {
		d.say("     = %s's MAC", owner.Name)
	}
	return got, err
}

func macEqual(a, b net.HardwareAddr) bool {
	return len(a) > 0 && a.String() == b.String()
}

// waitFor polls cond every 5 ms until it holds, the timeout passes, ctx ends or a router
// dies. A cond error is remembered and reported only if the wait times out, since a
// daemon may briefly be unreachable while it starts.
func (d *Demo) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		for _, r := range d.routers() {
			if err := r.crashed(); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("timed out after %v waiting for %s (last error: %w)", timeout, what, last)
			}
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// shell runs a command in host h (nil: this machine), prints it after a prompt and its
// output indented, and returns the output. A failure's error carries the output.
func (d *Demo) shell(ctx context.Context, h *netlab.Host, name string, args ...string) (string, error) {
	var cmd *exec.Cmd
	prompt := "   # "
	if h == nil {
		cmd = exec.CommandContext(ctx, name, args...)
	} else {
		cmd = h.Command(ctx, name, args...)
		prompt = "   " + h.Name + "# "
	}
	shown := name
	if name == d.bin {
		shown = "vrrpd"
	}
	d.say("%s%s %s", prompt, shown, strings.Join(args, " "))
	b, err := cmd.CombinedOutput()
	out := strings.TrimRight(string(b), "\n")
	for _, line := range strings.Split(out, "\n") {
		if line != "" {
			d.say("     %s", line)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, fmt.Errorf("%s %s: %w", shown, strings.Join(args, " "), err)
	}
	return out, nil
}

func (d *Demo) title(n int, s string) {
	d.say("\n== %d/6  %s", n, s)
}

func (d *Demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

// sleep waits for dur or until ctx ends.
func sleep(ctx context.Context, dur time.Duration) error {
	if dur <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ms shows a duration in whole milliseconds, the precision the demo measures to.
func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}
