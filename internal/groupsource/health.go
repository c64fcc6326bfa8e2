package groupsource

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/placement"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// kube-proxy's health check of an externalTrafficPolicy: Local Service, as vrrpd runs it.
//
// kube-proxy answers a GET of any path on the Service's healthCheckNodePort with 200
// while the node has a ready local endpoint and 503 otherwise (JSON body with
// localEndpoints; pkg/proxy/healthcheck/service_health.go). It listens on the node's
// nodePortAddresses: every address by default in iptables and ipvs modes, but only the
// node's primary addresses by default in nftables mode, or the configured CIDRs. So
// vrrpd probes its node's own address from the group status (the node's InternalIP,
// which the operator put there and kube-proxy serves in every mode), not 127.0.0.1
// (which only the listen-on-everything default serves).
//
// A failing check lowers the priority rather than putting the instance in FAULT, by
// the same amount on every node (placement.CheckWeight): the operator writes such an
// instance's priorities in 128..254 (placement.HealthChecked), so the shift puts every
// node without a local endpoint below every node with one, keeps the failing nodes
// distinct and in the placement's order (two of them never take over after the same
// Skew_Time and answer at once), and the lowest lands on 1. When no node has an endpoint
// the placement's first node holds the VIP, where FAULT on every node would drop it. Priorities outside that band (an older
// operator's status, a group over 127 nodes) get HealthCheckWeight, which takes every
// failing node to 1, where they tie.
const (
	HealthCheckWeight   = -253
	HealthCheckInterval = time.Second
	HealthCheckTimeout  = time.Second
	HealthCheckRise     = 1
	HealthCheckFall     = 2
	// HealthCheckPrefix starts the name of an instance's check (then its key): the
	// name vrrpd's status, logs and script metrics show.
	HealthCheckPrefix = "kube-proxy:"
)

// healthCheck makes c track kube-proxy's answer for instance in on this node, when the
// status carries a check for it, and records the check in t.checks.
func (t *translator) healthCheck(in *v1alpha1.Instance, prios []uint8, c *config.Instance, self memberAddrs) {
	hc := in.Settings.HealthCheck
	if hc == nil {
		return
	}
	if hc.NodePort < 1 || hc.NodePort > 65535 {
		t.warn(in.Key, "healthCheck nodePort %d is not a port; not checked", hc.NodePort)
		return
	}
	addr := self.v4
	if !addr.IsValid() {
		addr = self.v6
	}
	if !addr.IsValid() {
		// No address in the status (a node the operator could not read): loopback is
		// what kube-proxy serves by default, and better than no check at all.
		t.warn(in.Key, "healthCheck: node %s has no address in the status; checking 127.0.0.1", t.node)
		addr = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	weight, ok := placement.CheckWeight(prios)
	if !ok {
		weight = HealthCheckWeight
	}
	ap := netip.AddrPortFrom(addr, uint16(hc.NodePort))
	name := HealthCheckPrefix + in.Key
	sc := config.Script{
		Name:     name,
		Interval: HealthCheckInterval, Timeout: HealthCheckTimeout,
		Rise: HealthCheckRise, Fall: HealthCheckFall, Weight: weight,
		Check:  track.Check{Kind: track.CheckHTTP, URL: "http://" + ap.String() + "/", StatusCode: 200},
		Source: t.pos,
	}
	if t.checks == nil {
		t.checks = map[string]config.Script{}
	}
	t.checks[name] = sc
	c.TrackScripts = append(c.TrackScripts, config.TrackScript{Script: name, Weight: weight})
}

// usedChecks are the checks the kept instances track, by name.
func (t *translator) usedChecks(ins []config.Instance) []config.Script {
	var out []config.Script
	for _, in := range ins {
		for _, tr := range in.TrackScripts {
			if sc, ok := t.checks[tr.Script]; ok && !slices.ContainsFunc(out, func(o config.Script) bool { return o.Name == sc.Name }) {
				out = append(out, sc)
			}
		}
	}
	slices.SortFunc(out, func(a, b config.Script) int { return strings.Compare(a.Name, b.Name) })
	return out
}
