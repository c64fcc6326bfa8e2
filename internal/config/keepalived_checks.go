package config

import (
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

// set applies one keyword of a check block: its own, else the schedule and weight a
// vrrp_script has (not script and user: a check runs no process).
func (c *checkDraft) set(sc *Script, s *statement) error {
	var err error
	switch s.Key {
	case "url":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		c.url, err = s.One()
	case "status_code":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		var v uint64
		v, err = s.Uint(100, 599)
		c.status = int(v)
	case "tls_skip_verify":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		s.NoValue()
		c.skipVerify = true
	case "ca_file":
		if c.kind != track.CheckHTTP {
			return ErrUnknownKeyword
		}
		if c.caFile, err = s.One(); err == nil {
			err = checkCAFile(c.caFile)
		}
	case "connect_ip":
		c.connectIP, err = s.Addr()
	case "connect_port":
		var v uint64
		v, err = s.Uint(1, 65535)
		c.connectPort = int(v)
	case "script", "user":
		return ErrUnknownKeyword
	default:
		return sc.set(s)
	}
	return err
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
