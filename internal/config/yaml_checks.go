package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// The YAML form of checks.go: top-level healthChecks, each with exactly one of http or
// tcp and the schedule and weight a script has; per instance trackChecks, as
// trackScripts. Checks and scripts share one namespace of names.

type yamlHealthCheck struct {
	Name         string         `yaml:"name"`
	HTTP         *yamlHTTPCheck `yaml:"http"`
	TCP          *yamlTCPCheck  `yaml:"tcp"`
	yamlSchedule `yaml:",inline"`
}

type yamlHTTPCheck struct {
	URL        string `yaml:"url"`
	StatusCode int    `yaml:"statusCode"`
	// Connect is "IP" or "IP:port" (IPv6 as "[IP]:port"): where to connect instead of
	// the URL's host.
	Connect       string `yaml:"connect"`
	TLSSkipVerify bool   `yaml:"tlsSkipVerify"`
	// CAFile is a PEM file of the CAs to trust instead of the system's (ca_file).
	CAFile string `yaml:"caFile"`
}

type yamlTCPCheck struct {
	// Connect is "IP:port" (IPv6 as "[IP]:port").
	Connect string `yaml:"connect"`
}

// healthChecks reads the top-level healthChecks into g.
func (ix yamlIndex) healthChecks(parts []yamlPart[yamlHealthCheck], g *Globals) error {
	for i, p := range parts {
		y := p.v
		at := func(k string) Position { return ix.at("healthChecks", i, k) }
		sc, what, err := ix.scriptPart("healthChecks", i, p.err, y.Name, "health check", ": the name is already a script or check", g)
		if err != nil {
			return err
		}
		c, key, err := y.check()
		if err != nil {
			pos := at(key)
			if k, sub, ok := strings.Cut(key, "."); ok {
				pos = ix.at("healthChecks", i, k, sub)
			}
			return errAt(pos, "%s: %v", what, err)
		}
		sc.Check = c
		if err := ix.schedule(y.yamlSchedule, at, what, sc); err != nil {
			return err
		}
		g.addScript(sc)
	}
	return nil
}

// check validates the http or tcp part through checks.go's rules; key names the part
// an error is about.
func (y yamlHealthCheck) check() (track.Check, string, error) {
	var c checkDraft
	key, connect := "", ""
	switch {
	case (y.HTTP == nil) == (y.TCP == nil):
		return track.Check{}, "name", fmt.Errorf("set exactly one of http and tcp")
	case y.HTTP != nil:
		key, connect = "http", y.HTTP.Connect
		c = checkDraft{kind: track.CheckHTTP, url: y.HTTP.URL, skipVerify: y.HTTP.TLSSkipVerify, caFile: y.HTTP.CAFile}
		if c.caFile != "" {
			if err := checkCAFile(c.caFile); err != nil {
				return track.Check{}, "http.caFile", err
			}
		}
		if s := y.HTTP.StatusCode; s != 0 && (s < 100 || s > 599) {
			return track.Check{}, key, fmt.Errorf("statusCode %d is not between 100 and 599", s)
		}
		c.status = y.HTTP.StatusCode
	default:
		key, connect = "tcp", y.TCP.Connect
		c = checkDraft{kind: track.CheckTCP}
	}
	if connect != "" {
		if ap, err := netip.ParseAddrPort(connect); err == nil {
			c.connectIP, c.connectPort = ap.Addr(), int(ap.Port())
		} else if a, err := netip.ParseAddr(connect); err == nil && c.kind == track.CheckHTTP {
			c.connectIP = a
		} else {
			return track.Check{}, key, fmt.Errorf("connect %q: want IP:port", connect)
		}
		if c.connectIP.Zone() != "" || c.connectIP.IsUnspecified() || (c.connectPort == 0 && c.kind == track.CheckTCP) {
			return track.Check{}, key, fmt.Errorf("connect %q: want a host address and a port", connect)
		}
	}
	out, err := c.check()
	return out, key, err
}
