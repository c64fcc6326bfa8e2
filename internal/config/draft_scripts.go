package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// Scripts and native checks as written: the table of vrrp_script and check blocks by name,
// an instance's track_script entries, and the checks every format applies to them.

// scriptDefaults are keepalived's vrrp_script defaults.
func newScript(name string, pos Position) *Script {
	return &Script{Name: name, Interval: time.Second, Rise: 1, Fall: 1, Source: pos}
}

// maxScriptSeconds bounds interval and timeout (keepalived: UINT_MAX / TIMER_HZ).
const maxScriptSeconds = 4294

// scriptTable holds the vrrp_script blocks by name.
type scriptTable struct{ byName map[string]*Script }

// addScript puts a complete script or native check in g's table, made on first use.
func (g *Globals) addScript(sc *Script) {
	if g.scripts == nil {
		g.scripts = &scriptTable{byName: map[string]*Script{}}
	}
	g.scripts.byName[sc.Name] = sc
}

func (t *scriptTable) get(name string) (*Script, bool) {
	if t == nil {
		return nil, false
	}
	sc, ok := t.byName[name]
	return sc, ok
}

// trackRef is a track_script (or track_check, with check set) entry as written.
type trackRef struct {
	name    string
	weight  *int
	reverse bool
	check   bool
	pos     Position
}

// knownUser checks that a script's user and group exist on this host. keepalived logs
// an unknown one and then runs the scripts of an unknown script_user as root, or drops
// the hook; vrrpd refuses the whole configuration instead: a script meant to run
// unprivileged never runs as root, and nothing is silently left out.
func knownUser(what, user, group string) error {
	if user == "" {
		return nil
	}
	if _, err := track.LookupCredential(user, group); err != nil {
		return fmt.Errorf("%s %s: %v (a script is never run as root in its place)", what, strings.TrimSpace(user+" "+group), err)
	}
	return nil
}

// checkDraft is a check block's own keywords until they are complete.
type checkDraft struct {
	kind        track.CheckKind
	url         string
	status      int
	connectIP   netip.Addr
	connectPort int
	skipVerify  bool
	caFile      string
}

// check validates the block and returns its Check.
func (c *checkDraft) check() (track.Check, error) {
	out := track.Check{Kind: c.kind, StatusCode: c.status, TLSSkipVerify: c.skipVerify, CAFile: c.caFile}
	port := c.connectPort
	if c.kind == track.CheckHTTP {
		if c.url == "" {
			return out, fmt.Errorf("needs a url")
		}
		u, err := checkURL(c.url)
		if err != nil {
			return out, err
		}
		switch {
		case c.caFile != "" && u.Scheme != "https":
			return out, fmt.Errorf("ca_file is for an https url")
		case c.caFile != "" && c.skipVerify:
			return out, fmt.Errorf("ca_file and tls_skip_verify: verify with the CA file, or skip verifying, not both")
		}
		out.URL = c.url
		if port == 0 {
			port = urlPort(u)
		}
	}
	switch {
	case c.connectIP.IsValid():
		out.Connect = netip.AddrPortFrom(c.connectIP.Unmap(), uint16(port))
	case c.kind == track.CheckTCP:
		return out, fmt.Errorf("needs connect_ip and connect_port")
	case c.connectPort != 0:
		return out, fmt.Errorf("connect_port needs connect_ip")
	}
	if c.kind == track.CheckTCP && port == 0 {
		return out, fmt.Errorf("needs connect_port")
	}
	return out, nil
}

// checkURL parses an HTTP check's URL: http or https, with a host.
func checkURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("url %q: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want http:// or https:// and a host", s)
	}
	return u, nil
}

// checkCAFile checks a check's CA file as the check will load it: an absolute path (vrrpd
// runs from /, and a path relative to whatever directory would surprise), readable, with
// at least one PEM certificate (track.LoadCAFile).
func checkCAFile(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("ca_file %q: want an absolute path", path)
	}
	_, err := track.LoadCAFile(path)
	return err
}

// urlPort is the URL's port, or its scheme's.
func urlPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// resolve is the entry's tracking of script sc: the entry's weight and reverse, else
// the script's (a reverse without a weight turns the script's around).
func (t trackRef) resolve(sc *Script) TrackScript {
	ts := TrackScript{Script: t.name, Weight: sc.Weight, Reverse: sc.Reverse}
	if t.weight != nil {
		ts.Weight, ts.Reverse = *t.weight, t.reverse
	} else if t.reverse {
		ts.Reverse = true
	}
	return ts
}
