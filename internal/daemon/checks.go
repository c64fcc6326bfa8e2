package daemon

import (
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// runnable is sc as the runner runs it. A process script gets its user and passes the
// script security check; a native check (an HTTP GET or a TCP connect) runs in the
// daemon itself, so neither applies, and it is tracked exactly as a script is.
func (d *Daemon) runnable(sc config.Script) (track.Script, error) {
	ts := track.Script{
		Name: sc.Name, Args: sc.Command, Interval: sc.Interval, Timeout: sc.Timeout,
		Rise: sc.Rise, Fall: sc.Fall, InitFail: sc.InitFail, Check: sc.Check,
	}
	if sc.IsCheck() {
		return ts, nil
	}
	c, err := d.command(sc.Command, sc.User, sc.Group)
	ts.Path, ts.Cred = c.Path, c.Cred
	return ts, err
}
