package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// This file is vrrpd's native health checks in keepalived.conf: blocks keepalived does
// not have, named so that keepalived will never take them for its own (it ignores them
// with a warning), and tracked by their own keyword so a keepalived reading the same
// file does not find a track_script without its vrrp_script:
//
//	vrrpd_http_check NAME {
//	    url http://10.0.0.1:8080/healthz   # http or https
//	    status_code 200                    # default: any 2xx
//	    connect_ip 10.0.0.2                # optional: connect here instead of the URL's host
//	    connect_port 8080                  # optional, with connect_ip: default the URL's port
//	    tls_skip_verify                    # optional: accept any certificate
//	    ca_file /etc/vrrpd/ca.pem          # optional: trust these CAs (PEM) instead of the system's
//	    interval 1  timeout 1  rise 1  fall 1  weight -20 [reverse]  init_fail
//	}
//	vrrpd_tcp_check NAME { connect_ip 10.0.0.1  connect_port 6443  interval ... }
//	vrrp_instance VI { track_check { NAME [weight W] [reverse] } }
//
// A check is a Script with its Check set: interval, timeout, rise, fall, weight and
// init_fail mean what they mean for a vrrp_script, and the daemon tracks both alike.
// Checks and scripts share one namespace of names.

// Native check block and tracking keywords.
const (
	KeywordHTTPCheck  = "vrrpd_http_check"
	KeywordTCPCheck   = "vrrpd_tcp_check"
	KeywordTrackCheck = "track_check"
)

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

// set applies one keyword of a check block: its own, else the schedule and weight a
// vrrp_script has (not script and user: a check runs no process).
func (c *checkDraft) set(sc *Script, s *statement) error {
	var err error
	switch s.key {
	case "url":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		c.url, err = s.one()
	case "status_code":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		var v uint64
		v, err = s.uint(100, 599)
		c.status = int(v)
	case "tls_skip_verify":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		s.noValue()
		c.skipVerify = true
	case "ca_file":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		if c.caFile, err = s.one(); err == nil {
			err = checkCAFile(c.caFile)
		}
	case "connect_ip":
		c.connectIP, err = s.addr()
	case "connect_port":
		var v uint64
		v, err = s.uint(1, 65535)
		c.connectPort = int(v)
	case "script", "user":
		return ErrUnknownKeyword
	default:
		return sc.set(s)
	}
	return err
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

// nativeCheck reads a vrrpd_http_check or vrrpd_tcp_check block.
func (p *kaParser) nativeCheck(n node) error {
	c := &checkDraft{kind: track.CheckTCP}
	if n.key() == KeywordHTTPCheck {
		c.kind = track.CheckHTTP
	}
	sc, err := p.scriptBlock(n, c.set)
	if err != nil || sc == nil {
		return err
	}
	if sc.Check, err = c.check(); err != nil {
		return errAt(n.pos, "%s %s: %v", n.key(), sc.Name, err)
	}
	p.g.addScript(sc)
	return nil
}

// IsCheck reports whether sc is a native check rather than a process.
func (sc Script) IsCheck() bool { return sc.Check.Kind != track.CheckNone }
