package daemon

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// healthRule is what Health checks besides the heartbeat, computed by the loop with each
// snapshot so that a health check reads one pointer and never touches the loop.
type healthRule struct {
	// stallLimit is how long the loop may go without a turn before it counts as stalled.
	stallLimit time.Duration
	// unstarted names the instances that should run but could not start, with why.
	unstarted []string
}

// minStallLimit is the floor of the stall limit: three idle turns of the loop (it turns
// at least every pollInterval), so that a slow netlink call or a long GC pause is not
// taken for a stall.
func (d *Daemon) minStallLimit() time.Duration { return 3 * d.opts.pollInterval }

// stallLimit is the longest the loop may be silent before vrrpd is unhealthy:
// max(3 × the smallest advertisement interval, minStallLimit). Past three intervals a
// master whose loop hangs has stopped advertising long enough for its backups to take over,
// so the daemon is no longer doing its job; below the floor a pause is normal.
func (d *Daemon) stallLimit(smallestInterval time.Duration) time.Duration {
	return max(3*smallestInterval, d.minStallLimit())
}

// computeHealth is the health rule of the running instances; the loop calls it from
// publish.
func (d *Daemon) computeHealth() *healthRule {
	var smallest time.Duration
	r := &healthRule{}
	for _, in := range d.instances {
		if iv := in.cfg.AdvertInterval; iv > 0 && (smallest == 0 || iv < smallest) {
			smallest = iv
		}
		if why := in.startFailure(); why != nil {
			r.unstarted = append(r.unstarted, fmt.Sprintf("%s: %v", in.cfg.Name, why))
		}
	}
	r.stallLimit = d.stallLimit(smallest)
	return r
}

// startFailure is why the instance could not start, or nil when it runs or only waits
// for its interface. An interface that is missing, down or without an address is the
// host's state, which VRRP reports as FAULT and vrrpd recovers from by itself when the
// interface comes back; anything else (a socket refused for lack of CAP_NET_RAW, a
// macvlan that cannot be made, a configuration the state machine refuses) needs a person.
func (in *instance) startFailure() error {
	if in.vmacErr != nil {
		return fmt.Errorf("cannot create VMAC interface: %w", in.vmacErr)
	}
	if in.sm != nil || in.faultErr == nil {
		return nil
	}
	for _, env := range []error{transport.ErrNoInterface, transport.ErrInterfaceDown, transport.ErrNoAddress} {
		if errors.Is(in.faultErr, env) {
			return nil
		}
	}
	return in.faultErr
}

// Health returns the health function of /healthz and keepalived_up: it fails when the
// loop has made no turn for longer than the stall limit (see stallLimit), or when an
// instance the configuration holds could not start (see startFailure).
func (d *Daemon) Health() func() error {
	return func() error {
		if err := d.timerErr.Load(); err != nil {
			return *err
		}
		r := d.health.Load()
		if err := d.heartbeat.Check(r.stallLimit)(); err != nil {
			return err
		}
		if len(r.unstarted) > 0 {
			return fmt.Errorf("%d instance(s) could not start: %s", len(r.unstarted), strings.Join(r.unstarted, "; "))
		}
		return nil
	}
}

// Live returns the health function of /livez, the liveness probe's: the loop's
// heartbeat and the timer thread. Restarting vrrpd cures a stalled loop, but not an instance that cannot
// start, and a restart makes every master of the node resign.
func (d *Daemon) Live() func() error {
	return func() error {
		if err := d.timerErr.Load(); err != nil {
			return *err // a restart is the cure
		}
		return d.heartbeat.Check(d.health.Load().stallLimit)()
	}
}

// Ready returns the health function of /readyz, the readiness probe's: vrrpd has joined
// its virtual routers. It fails while the configuration is not loaded (Kubernetes mode
// before its group or the group's cache is read, Options.AwaitConfig), while an instance
// could not open its socket or start (startFailure), while any instance is still in INIT
// (it has not yet heard its peers or waited its Master_Down_Interval), and whenever Live
// fails. An instance in FAULT because its interface is missing, down or has no address has
// left INIT and does not hold readiness back: that is the node's state, which no wait or
// restart of vrrpd cures, and keepalived_vrrp_state reports it; holding a rolling update
// on it would stop the update on every such node.
func (d *Daemon) Ready() func() error {
	live := d.Live()
	return func() error {
		if err := live(); err != nil {
			return err
		}
		if !d.configured.Load() {
			return errors.New("configuration not loaded yet")
		}
		if r := d.health.Load(); len(r.unstarted) > 0 {
			return fmt.Errorf("%d instance(s) could not start: %s", len(r.unstarted), strings.Join(r.unstarted, "; "))
		}
		var initial []string
		for _, in := range d.snap.Load().Instances {
			if in.State == vrrp.StateInit {
				initial = append(initial, in.Name)
			}
		}
		if len(initial) > 0 {
			return fmt.Errorf("%d instance(s) still in INIT: %s", len(initial), strings.Join(initial, ", "))
		}
		return nil
	}
}
