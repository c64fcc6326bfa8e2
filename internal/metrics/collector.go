package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Label sets. vrrpLabels are keepalived_exporter's, in its order.
var (
	vrrpLabels     = []string{"name", "intf", "vrid", "state"}
	instanceLabels = []string{"name", "intf", "vrid"}
	vipLabels      = []string{"name", "intf", "vrid", "vip"}
	socketLabels   = []string{"intf", "family"}
)

// counterDef is one per-instance counter: its metric name, help, and where its value is.
type counterDef struct {
	name, help string
	value      func(*vrrp.Counters) uint64
}

// keepalivedCounters are keepalived_exporter 0.5.0's per-instance counters, same names and
// help texts, so that recording rules written against it match.
var keepalivedCounters = []counterDef{
	{"keepalived_vrrp_advert_rcvd", "Advertisements received", func(c *vrrp.Counters) uint64 { return c.AdvertRcvd }},
	{"keepalived_vrrp_advert_sent", "Advertisements sent", func(c *vrrp.Counters) uint64 { return c.AdvertSent }},
	{"keepalived_vrrp_become_master", "Became master", func(c *vrrp.Counters) uint64 { return c.BecomeMaster }},
	{"keepalived_vrrp_release_master", "Released master", func(c *vrrp.Counters) uint64 { return c.ReleaseMaster }},
	{"keepalived_vrrp_packet_len_err", "Packet length errors", func(c *vrrp.Counters) uint64 { return c.PacketLenErr }},
	{"keepalived_vrrp_advert_interval_err", "Advertisement interval errors", func(c *vrrp.Counters) uint64 { return c.AdvertIntervalErr }},
	{"keepalived_vrrp_ip_ttl_err", "TTL errors", func(c *vrrp.Counters) uint64 { return c.IPTTLErr }},
	{"keepalived_vrrp_invalid_type_rcvd", "Invalid type errors", func(c *vrrp.Counters) uint64 { return c.InvalidTypeRcvd }},
	{"keepalived_vrrp_addr_list_err", "Address list errors", func(c *vrrp.Counters) uint64 { return c.AddrListErr }},
	{"keepalived_vrrp_invalid_authtype", "Authentication invalid", func(c *vrrp.Counters) uint64 { return c.InvalidAuthType }},
	{"keepalived_vrrp_authtype_mismatch", "Authentication mismatch", func(c *vrrp.Counters) uint64 { return c.AuthTypeMismatch }},
	{"keepalived_vrrp_auth_failure", "Authentication failure", func(c *vrrp.Counters) uint64 { return c.AuthFailure }},
	{"keepalived_vrrp_pri_zero_rcvd", "Priority zero received", func(c *vrrp.Counters) uint64 { return c.PriZeroRcvd }},
	{"keepalived_vrrp_pri_zero_sent", "Priority zero sent", func(c *vrrp.Counters) uint64 { return c.PriZeroSent }},
	// vrrpd's own error counters, labelled the same way so they sit beside keepalived's.
	{"vrrpd_checksum_err", "Advertisements dropped for a bad VRRP checksum", func(c *vrrp.Counters) uint64 { return c.ChecksumErr }},
	{"vrrpd_version_err", "Advertisements dropped for a VRRP version other than the instance's", func(c *vrrp.Counters) uint64 { return c.VersionErr }},
}

// Collector is a prometheus.Collector that turns each scrape into one Snapshot read.
type Collector struct {
	src    Source
	health func() error // keepalived_up's rule; nil means always up

	up             *prometheus.Desc
	counters       []*prometheus.Desc // parallel to keepalivedCounters
	state          *prometheus.Desc
	priority       *prometheus.Desc
	basePriority   *prometheus.Desc
	transitions    *prometheus.Desc
	lastTransition *prometheus.Desc
	vipMaster      *prometheus.Desc
	instances      *prometheus.Desc
	received       *prometheus.Desc
	unattributed   *prometheus.Desc
	preexisting    *prometheus.Desc
	readded        *prometheus.Desc
	scriptStatus   *prometheus.Desc
	scriptRuns     *prometheus.Desc
	scriptFailures *prometheus.Desc
	scriptTimeouts *prometheus.Desc
	trackers       trackerMetrics // trackers.go
}

// NewCollector returns a Collector reading src.
func NewCollector(src Source) *Collector {
	c := &Collector{
		src: src,
		up:  prometheus.NewDesc("keepalived_up", "Status", nil, nil),
		state: prometheus.NewDesc("keepalived_vrrp_state",
			"State of the VRRP instance: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT", instanceLabels, nil),
		priority: prometheus.NewDesc("vrrpd_priority",
			"Priority the instance currently advertises", instanceLabels, nil),
		basePriority: prometheus.NewDesc("vrrpd_base_priority",
			"Priority configured for the instance", instanceLabels, nil),
		transitions: prometheus.NewDesc("vrrpd_transitions_total",
			"State changes of the instance since vrrpd started, FAULT included", instanceLabels, nil),
		lastTransition: prometheus.NewDesc("vrrpd_last_transition_timestamp_seconds",
			"Unix time of the instance's latest state change (0 if none)", instanceLabels, nil),
		vipMaster: prometheus.NewDesc("vrrpd_vip_master",
			"1 for each VIP of an instance in MASTER state on this host, 0 for the other instances' VIPs: who holds an address, without a join", vipLabels, nil),
		instances: prometheus.NewDesc("vrrpd_instances",
			"Number of VRRP instances in each state", []string{"state"}, nil),
		received: prometheus.NewDesc("vrrpd_packets_received_total",
			"VRRP packets read from the interface's socket", socketLabels, nil),
		unattributed: prometheus.NewDesc("vrrpd_malformed_dropped_total",
			"VRRP packets dropped before reaching any instance (undecodable, unknown VRID, broken IP header)", socketLabels, nil),
		preexisting: prometheus.NewDesc("vrrpd_vip_preexisting_total",
			"VIPs found on the interface already, not added by vrrpd, when the instance became master: left alone and never removed", instanceLabels, nil),
		readded: prometheus.NewDesc("vrrpd_vip_readded_total",
			"VIPs taken off the interface by someone else while the instance was master, and put back", instanceLabels, nil),
		// keepalived-exporter's name and meaning (1 while the script is good).
		scriptStatus: prometheus.NewDesc("keepalived_script_status",
			"Tracker script status: 1 good, 0 failed, still in init or disabled", []string{"name"}, nil),
		scriptRuns: prometheus.NewDesc("vrrpd_script_runs_total",
			"Runs of the vrrp_script", []string{"name"}, nil),
		scriptFailures: prometheus.NewDesc("vrrpd_script_failures_total",
			"Runs of the vrrp_script that failed, timeouts included", []string{"name"}, nil),
		scriptTimeouts: prometheus.NewDesc("vrrpd_script_timeouts_total",
			"Runs of the vrrp_script killed at its timeout", []string{"name"}, nil),
	}
	for _, d := range keepalivedCounters {
		c.counters = append(c.counters, prometheus.NewDesc(d.name, d.help, vrrpLabels, nil))
	}
	c.trackers = newTrackerMetrics()
	return c
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	for _, d := range c.counters {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{c.state, c.priority, c.basePriority, c.transitions,
		c.lastTransition, c.vipMaster, c.instances, c.received, c.unattributed, c.preexisting, c.readded,
		c.scriptStatus, c.scriptRuns, c.scriptFailures, c.scriptTimeouts} {
		ch <- d
	}
	c.trackers.describe(ch)
}

// allStates are reported in vrrpd_instances even when empty, so "no MASTER" is a 0, not a
// missing series.
var allStates = []vrrp.State{vrrp.StateInit, vrrp.StateBackup, vrrp.StateMaster, vrrp.StateFault}

// Collect reads one snapshot and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	// keepalived_exporter reported 0 when keepalived did not answer; vrrpd is this
	// process, so "answering" is not enough: up is the daemon's health (Options.Health).
	up := 1.0
	if c.health != nil && c.health() != nil {
		up = 0
	}
	emit(ch, c.up, prometheus.GaugeValue, up)
	snap := c.src.Snapshot()
	perState := make(map[vrrp.State]int, len(allStates))
	for i := range snap.Instances {
		in := &snap.Instances[i]
		vrid := strconv.Itoa(int(in.VRID))
		state := in.State.String()
		perState[in.State]++
		for j, d := range keepalivedCounters {
			emit(ch, c.counters[j], prometheus.CounterValue,
				float64(d.value(&in.Counters)), in.Name, in.Interface, vrid, state)
		}
		emit(ch, c.state, prometheus.GaugeValue, float64(in.State), in.Name, in.Interface, vrid)
		emit(ch, c.priority, prometheus.GaugeValue, float64(in.Priority), in.Name, in.Interface, vrid)
		emit(ch, c.basePriority, prometheus.GaugeValue, float64(in.BasePriority), in.Name, in.Interface, vrid)
		emit(ch, c.transitions, prometheus.CounterValue, float64(in.Transitions), in.Name, in.Interface, vrid)
		var last float64
		if !in.LastTransition.IsZero() {
			last = float64(in.LastTransition.UnixNano()) / 1e9
		}
		emit(ch, c.lastTransition, prometheus.GaugeValue, last, in.Name, in.Interface, vrid)
		var master float64
		if in.State == vrrp.StateMaster {
			master = 1
		}
		for _, v := range in.VIPs {
			emit(ch, c.vipMaster, prometheus.GaugeValue, master, in.Name, in.Interface, vrid, v.Addr().String())
		}
		emit(ch, c.preexisting, prometheus.CounterValue, float64(in.PreexistingVIPs), in.Name, in.Interface, vrid)
		emit(ch, c.readded, prometheus.CounterValue, float64(in.ReaddedVIPs), in.Name, in.Interface, vrid)
	}
	for _, s := range allStates {
		emit(ch, c.instances, prometheus.GaugeValue, float64(perState[s]), s.String())
	}
	for _, ifc := range snap.Interfaces {
		emit(ch, c.received, prometheus.CounterValue, float64(ifc.Received), ifc.Name, string(ifc.Family))
		emit(ch, c.unattributed, prometheus.CounterValue, float64(ifc.Unattributed), ifc.Name, string(ifc.Family))
	}
	for _, sc := range snap.Scripts {
		good := 0.0
		if sc.Status == "GOOD" {
			good = 1
		}
		emit(ch, c.scriptStatus, prometheus.GaugeValue, good, sc.Name)
		emit(ch, c.scriptRuns, prometheus.CounterValue, float64(sc.Runs), sc.Name)
		emit(ch, c.scriptFailures, prometheus.CounterValue, float64(sc.Failures), sc.Name)
		emit(ch, c.scriptTimeouts, prometheus.CounterValue, float64(sc.Timeouts), sc.Name)
	}
	c.trackers.collect(ch, snap)
}

// emit sends one constant metric. Label values come from configuration (instance and
// interface names); one that is not valid UTF-8 yields an invalid metric, which fails that
// series of the scrape with a clear error instead of panicking the daemon.
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}
