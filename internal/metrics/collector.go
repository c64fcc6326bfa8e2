package metrics

import (
	"io"
	"strconv"

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

// Collector writes the daemon's metrics, reading one Snapshot per scrape.
type Collector struct {
	src    Source
	health func() error // keepalived_up's rule; nil means always up
}

// NewCollector returns a Collector reading src.
func NewCollector(src Source) *Collector { return &Collector{src: src} }

// allStates are reported in vrrpd_instances even when empty, so "no MASTER" is a 0, not a
// missing series.
var allStates = []vrrp.State{vrrp.StateInit, vrrp.StateBackup, vrrp.StateMaster, vrrp.StateFault}

// Write reads one snapshot and writes its metrics to w in the text exposition format. A
// series whose labels cannot be written (a name that is not valid UTF-8) is left out and
// named in the error; everything else is written.
func (c *Collector) Write(w io.Writer) error {
	var e exposition
	c.collect(&e)
	return e.write(w)
}

// collect adds the daemon's families to e.
func (c *Collector) collect(e *exposition) {
	// keepalived_exporter reported 0 when keepalived did not answer; vrrpd is this
	// process, so "answering" is not enough: up is the daemon's health (Options.Health).
	up := 1.0
	if c.health != nil && c.health() != nil {
		up = 0
	}
	e.family("keepalived_up", typeGauge, "Status").add(up)

	counters := make([]*family, len(keepalivedCounters))
	for i, d := range keepalivedCounters {
		counters[i] = e.family(d.name, typeCounter, d.help, vrrpLabels...)
	}
	var (
		state = e.family("keepalived_vrrp_state", typeGauge,
			"State of the VRRP instance: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT", instanceLabels...)
		priority = e.family("vrrpd_priority", typeGauge,
			"Priority the instance currently advertises", instanceLabels...)
		basePriority = e.family("vrrpd_base_priority", typeGauge,
			"Priority configured for the instance", instanceLabels...)
		transitions = e.family("vrrpd_transitions_total", typeCounter,
			"State changes of the instance since vrrpd started, FAULT included", instanceLabels...)
		lastTransition = e.family("vrrpd_last_transition_timestamp_seconds", typeGauge,
			"Unix time of the instance's latest state change (0 if none)", instanceLabels...)
		vipMaster = e.family("vrrpd_vip_master", typeGauge,
			"1 for each VIP of an instance in MASTER state on this host, 0 for the other instances' VIPs: who holds an address, without a join", vipLabels...)
		instances = e.family("vrrpd_instances", typeGauge,
			"Number of VRRP instances in each state", "state")
		received = e.family("vrrpd_packets_received_total", typeCounter,
			"VRRP packets read from the interface's socket", socketLabels...)
		unattributed = e.family("vrrpd_malformed_dropped_total", typeCounter,
			"VRRP packets dropped before reaching any instance (undecodable, unknown VRID, broken IP header)", socketLabels...)
		preexisting = e.family("vrrpd_vip_preexisting_total", typeCounter,
			"VIPs found on the interface already, not added by vrrpd, when the instance became master: left alone and never removed", instanceLabels...)
		readded = e.family("vrrpd_vip_readded_total", typeCounter,
			"VIPs taken off the interface by someone else while the instance was master, and put back", instanceLabels...)
		sendErrors = e.family("vrrpd_advert_send_errors_total", typeCounter,
			"Advertisements the instance failed to send (the kernel refused them or the socket was unusable)", instanceLabels...)
		// keepalived-exporter's name and meaning (1 while the script is good).
		scriptStatus = e.family("keepalived_script_status", typeGauge,
			"Tracker script status: 1 good, 0 failed, still in init or disabled", "name")
		scriptRuns     = e.family("vrrpd_script_runs_total", typeCounter, "Runs of the vrrp_script", "name")
		scriptFailures = e.family("vrrpd_script_failures_total", typeCounter,
			"Runs of the vrrp_script that failed, timeouts included", "name")
		scriptTimeouts = e.family("vrrpd_script_timeouts_total", typeCounter,
			"Runs of the vrrp_script killed at its timeout", "name")
	)

	snap := c.src.Snapshot()
	perState := make(map[vrrp.State]int, len(allStates))
	for i := range snap.Instances {
		in := &snap.Instances[i]
		vrid := strconv.Itoa(int(in.VRID))
		st := in.State.String()
		perState[in.State]++
		for j, d := range keepalivedCounters {
			counters[j].add(float64(d.value(&in.Counters)), in.Name, in.Interface, vrid, st)
		}
		state.add(float64(in.State), in.Name, in.Interface, vrid)
		priority.add(float64(in.Priority), in.Name, in.Interface, vrid)
		basePriority.add(float64(in.BasePriority), in.Name, in.Interface, vrid)
		transitions.add(float64(in.Transitions), in.Name, in.Interface, vrid)
		var last float64
		if !in.LastTransition.IsZero() {
			last = float64(in.LastTransition.UnixNano()) / 1e9
		}
		lastTransition.add(last, in.Name, in.Interface, vrid)
		var master float64
		if in.State == vrrp.StateMaster {
			master = 1
		}
		for _, v := range in.VIPs {
			vipMaster.add(master, in.Name, in.Interface, vrid, v.Addr().String())
		}
		preexisting.add(float64(in.PreexistingVIPs), in.Name, in.Interface, vrid)
		readded.add(float64(in.ReaddedVIPs), in.Name, in.Interface, vrid)
		sendErrors.add(float64(in.SendErrors), in.Name, in.Interface, vrid)
	}
	for _, s := range allStates {
		instances.add(float64(perState[s]), s.String())
	}
	for _, ifc := range snap.Interfaces {
		received.add(float64(ifc.Received), ifc.Name, string(ifc.Family))
		unattributed.add(float64(ifc.Unattributed), ifc.Name, string(ifc.Family))
	}
	for _, sc := range snap.Scripts {
		good := 0.0
		if sc.Status == "GOOD" {
			good = 1
		}
		scriptStatus.add(good, sc.Name)
		scriptRuns.add(float64(sc.Runs), sc.Name)
		scriptFailures.add(float64(sc.Failures), sc.Name)
		scriptTimeouts.add(float64(sc.Timeouts), sc.Name)
	}
	collectTrackers(e, snap)
}
